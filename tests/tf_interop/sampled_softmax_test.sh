#!/bin/bash
# Sampled softmax against TensorFlow (issue 19): sampled_softmax_tf.py computes
# tf.compat.v1.nn.sampled_softmax_loss (partition_strategy "mod", weights in 1
# and 3 partitions, accidental hits removed and kept) with given sampled
# candidates, and the full softmax cross-entropy; Sluice's
# sampled_softmax_check (models/embedding_ops.h) computes the same from the
# same values; losses and gradients must agree within 1e-5. Needs a python
# with tensorflow in SLUICE_PEERS_PYTHON (tools/test.sh sets it); prints SKIP
# and passes when it is unset.
set -u
DIR="$TEST_SRCDIR/sluice/tests/tf_interop"
fail() { echo "FAIL: $*"; exit 1; }
if [ -z "${SLUICE_PEERS_PYTHON:-}" ]; then
  echo "SKIP: sampled_softmax_test needs SLUICE_PEERS_PYTHON (a python with tensorflow; bash tools/test.sh sets it)"
  exit 0
fi
if ! "$SLUICE_PEERS_PYTHON" -c "import tensorflow" >/dev/null 2>&1; then
  fail "SLUICE_PEERS_PYTHON=$SLUICE_PEERS_PYTHON cannot import tensorflow (run bash tools/peers.sh)"
fi
exec "$SLUICE_PEERS_PYTHON" "$DIR/sampled_softmax_tf.py" --check="$DIR/sampled_softmax_check" --workdir="$TEST_TMPDIR/work"
