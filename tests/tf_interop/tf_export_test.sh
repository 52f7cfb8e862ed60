#!/bin/bash
# `train CONFIG --export PATH`: bad uses are errors with the right exit code
# (no checkpoint yet: 1; an unknown output name: 2 with a did-you-mean; a
# missing path or --local_cluster with it: 2; a model other than the one the
# run trained: 2 unless --allow-drift; a SavedModel over a directory that
# holds something: 1); then tf_export.py trains five
# models briefly, exports each, and runs the exported GraphDefs in TensorFlow
# and in Sluice: TensorFlow's accuracy and loss over the test set are Sluice's
# evaluation's, and the two systems' logits agree within 1e-5; the SavedModel
# of each runs in tf.saved_model.load and TensorFlow 1's loader. Needs a python
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

# The export is of the model that trained the variables: a run of
# fashion_logreg exported with another activation (the same variables)
# is refused unless --allow-drift; the real one is written.
LR="$CONFIGS/fashion_logreg.pbtxt"
"$TRAIN" "$LR" --run_dir "$W/logreg" --set train.steps=3 --set train.eval_every_steps=0 \
  --set summaries.every_steps=0 >"$W/logreg.log" 2>&1 || fail "training fashion_logreg: $(tail -5 "$W/logreg.log")"
msg=$("$TRAIN" "$LR" --run_dir "$W/logreg" --export "$W/logreg.pb" 2>&1); rc=$?
[ $rc -eq 0 ] && [ -s "$W/logreg.pb" ] || fail "exporting fashion_logreg should work, got $rc: $msg"
echo "$msg" | grep -q "exported step 3 " || fail "the export should name step 3: $msg"
msg=$("$TRAIN" "$LR" --run_dir "$W/logreg" --export "$W/drift.pb" --set model.layer[1].dense.activation=TANH 2>&1); rc=$?
[ $rc -eq 2 ] || fail "exporting another model should exit 2, got $rc: $msg"
echo "$msg" | grep -q "config.pbtxt: error: the run was trained with another model" || fail "drift message: $msg"
echo "$msg" | grep -q "activation: TANH" || fail "the drift message should show the difference: $msg"
[ ! -e "$W/drift.pb" ] || fail "a refused export wrote $W/drift.pb"
msg=$("$TRAIN" "$LR" --run_dir "$W/logreg" --export "$W/drift.pb" --set model.layer[1].dense.activation=TANH \
  --allow-drift 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--allow-drift should export the changed model, got $rc: $msg"
echo "ok   an export of another model than the run trained is refused (exit 2) unless --allow-drift"

# A path without .pb or .pbtxt is a SavedModel directory, written whole or not at all, never
# over a directory that holds something.
msg=$("$TRAIN" "$LR" --run_dir "$W/logreg" --export "$W/logreg_sm/" 2>&1); rc=$?
[ $rc -eq 0 ] && [ -s "$W/logreg_sm/saved_model.pb" ] && [ -d "$W/logreg_sm/variables" ] ||
  fail "a SavedModel export should write saved_model.pb and variables/, got $rc: $msg"
ls -d "$W"/logreg_sm.tmp* >/dev/null 2>&1 && fail "the SavedModel export left its temporary directory: $(ls -d "$W"/logreg_sm.tmp*)"
msg=$("$TRAIN" "$LR" --run_dir "$W/logreg" --export "$W/logreg_sm" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$msg" | grep -q "$W/logreg_sm exists and is not empty: an export never replaces one" ||
  fail "exporting over a SavedModel should exit 1 and say why, got $rc: $msg"
mkdir -p "$W/empty_dir"
msg=$("$TRAIN" "$LR" --run_dir "$W/logreg" --export "$W/empty_dir" 2>&1); rc=$?
[ $rc -eq 0 ] && [ -s "$W/empty_dir/saved_model.pb" ] || fail "an empty directory should take the SavedModel, got $rc: $msg"
echo "ok   --export DIR writes a SavedModel, into a new or empty directory only (else exit 1)"

if [ -z "${SLUICE_PEERS_PYTHON:-}" ]; then
  echo "SKIP: the TensorFlow half of tf_export_test needs SLUICE_PEERS_PYTHON (bash tools/test.sh sets it)"
  exit 0
fi
"$SLUICE_PEERS_PYTHON" -c "import tensorflow" >/dev/null 2>&1 ||
  fail "SLUICE_PEERS_PYTHON=$SLUICE_PEERS_PYTHON cannot import tensorflow (run bash tools/peers.sh)"
exec "$SLUICE_PEERS_PYTHON" "$DIR/tf_export.py" --train="$TRAIN" --run_graphdef="$BIN" --configs="$CONFIGS" \
  --workdir="$W/work"
