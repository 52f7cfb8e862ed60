#!/bin/bash
# TFRecord files of tf.train.Examples move both ways between Sluice and
# TensorFlow with identical contents (tfrecord_interop.py does the checks).
# Needs a python with tensorflow in SLUICE_PEERS_PYTHON (tools/test.sh sets it
# from tools/peers.sh); prints SKIP and passes when it is unset.
set -u
if [ -z "${SLUICE_PEERS_PYTHON:-}" ]; then
  echo "SKIP: tfrecord_interop_test needs SLUICE_PEERS_PYTHON (a python with tensorflow; bash tools/test.sh sets it)"
  exit 0
fi
if ! "$SLUICE_PEERS_PYTHON" -c "import tensorflow" >/dev/null 2>&1; then
  echo "FAIL: SLUICE_PEERS_PYTHON=$SLUICE_PEERS_PYTHON cannot import tensorflow (run bash tools/peers.sh)"
  exit 1
fi
DIR="$TEST_SRCDIR/sluice/tests/tfrecord_interop"
exec "$SLUICE_PEERS_PYTHON" "$DIR/tfrecord_interop.py" "$DIR/example_records" \
  "$TEST_SRCDIR/sluice/cmd/records/records" "$TEST_TMPDIR/work"
