#!/bin/bash
# `train CONFIG --export PATH`: bad uses are errors with the right exit code
# (no checkpoint yet: 1; an unknown output name: 2 with a did-you-mean; a
# missing path or --local_cluster with it: 2); then tf_export.py trains four
# models briefly, exports each, and runs the exported GraphDefs in TensorFlow
# and in Sluice: TensorFlow's accuracy and loss over the test set are Sluice's
# evaluation's, and the two systems' logits agree within 1e-5. Needs a python
# with tensorflow in SLUICE_PEERS_PYTHON for the second part (tools/test.sh
# sets it); prints SKIP for it and passes when it is unset.
set -u
TRAIN="$TEST_SRCDIR/sluice/cmd/train/train"
BIN="$TEST_SRCDIR/sluice/tests/tf_interop/run_graphdef"
CONFIGS="$TEST_SRCDIR/sluice/configs"
DIR="$TEST_SRCDIR/sluice/tests/tf_interop"
fail() { echo "FAIL: $*"; exit 1; }
W="$TEST_TMPDIR/export"; mkdir -p "$W"

msg=$("$TRAIN" "$CONFIGS/fashion_mlp.pbtxt" --run_dir "$W/never_trained" --export "$W/x.pb" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "export without a checkpoint should exit 1, got $rc: $msg"
echo "$msg" | grep -q "no checkpoint to export in $W/never_trained/checkpoints" || fail "no-checkpoint message: $msg"
[ ! -e "$W/x.pb" ] || fail "a failed export left $W/x.pb"
msg=$("$TRAIN" "$CONFIGS/fashion_mlp.pbtxt" --run_dir "$W/never_trained" --export "$W/x.pb" --export_outputs fc3 2>&1); rc=$?
[ $rc -eq 2 ] || fail "an unknown output should exit 2, got $rc: $msg"
echo "$msg" | grep -q "'fc3' is not a layer, feature or node of the model (did you mean 'fc" || fail "unknown output message: $msg"
msg=$("$TRAIN" "$CONFIGS/fashion_mlp.pbtxt" --export 2>&1); rc=$?
[ $rc -eq 2 ] || fail "--export without a path should exit 2, got $rc: $msg"
msg=$("$TRAIN" "$CONFIGS/fashion_mlp.pbtxt" --export "$W/x.pb" --local_cluster ps=1,worker=1 2>&1); rc=$?
[ $rc -eq 2 ] || fail "--export with --local_cluster should exit 2, got $rc: $msg"
msg=$("$TRAIN" "$CONFIGS/fashion_mlp.pbtxt" --export "$W/x.pb" --dry-run 2>&1); rc=$?
[ $rc -eq 2 ] || fail "--export with --dry-run should exit 2, got $rc: $msg"
echo "ok   bad uses of --export are errors with exit codes 1 and 2"

if [ -z "${SLUICE_PEERS_PYTHON:-}" ]; then
  echo "SKIP: the TensorFlow half of tf_export_test needs SLUICE_PEERS_PYTHON (bash tools/test.sh sets it)"
  exit 0
fi
"$SLUICE_PEERS_PYTHON" -c "import tensorflow" >/dev/null 2>&1 ||
  fail "SLUICE_PEERS_PYTHON=$SLUICE_PEERS_PYTHON cannot import tensorflow (run bash tools/peers.sh)"
exec "$SLUICE_PEERS_PYTHON" "$DIR/tf_export.py" --train="$TRAIN" --run_graphdef="$BIN" --configs="$CONFIGS" \
  --workdir="$W/work"
