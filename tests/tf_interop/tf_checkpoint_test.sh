#!/bin/bash
# TensorFlow V2 checkpoints (tensor bundles) both ways, with the TensorFlow peer
# (tf_checkpoint.py): TensorFlow's Saver -> Sluice's RestoreV2, ckpt and a
# fashion_mlp warm start; Sluice's ckpt convert and SaveV2 -> TensorFlow's
# load_checkpoint and Saver.restore, values equal. Without TensorFlow only the
# checks that need no peer run. Needs a python with tensorflow in
# SLUICE_PEERS_PYTHON (tools/test.sh sets it from tools/peers.sh); prints SKIP
# and passes when it is unset.
set -u
DIR="$TEST_SRCDIR/sluice/tests/tf_interop"
CKPT="$TEST_SRCDIR/sluice/cmd/ckpt/ckpt"
TRAIN="$TEST_SRCDIR/sluice/cmd/train/train"
CONFIG="$TEST_SRCDIR/sluice/configs/fashion_mlp.pbtxt"
fail() { echo "FAIL: $*"; exit 1; }

# A prefix with no bundle, and an index that is not a table: usage/corrupt exits.
W="$TEST_TMPDIR/bad"; mkdir -p "$W"
printf 'not a table' > "$W/junk.index"
msg=$("$CKPT" list "$W/junk" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "ckpt list of a junk index should exit 1, got $rc: $msg"
echo "$msg" | grep -q "$W/junk.index is truncated" || fail "the error should name the index: $msg"
echo "ok   a junk .index is an error naming the file"

if [ -z "${SLUICE_PEERS_PYTHON:-}" ]; then
  echo "SKIP: tf_checkpoint_test needs SLUICE_PEERS_PYTHON (a python with tensorflow; bash tools/test.sh sets it)"
  exit 0
fi
if ! "$SLUICE_PEERS_PYTHON" -c "import tensorflow" >/dev/null 2>&1; then
  fail "SLUICE_PEERS_PYTHON=$SLUICE_PEERS_PYTHON cannot import tensorflow (run bash tools/peers.sh)"
fi
exec "$SLUICE_PEERS_PYTHON" "$DIR/tf_checkpoint.py" --run_graphdef="$DIR/run_graphdef" --ckpt="$CKPT" \
  --train="$TRAIN" --config="$CONFIG" --workdir="$TEST_TMPDIR/work"
