#!/bin/bash
# Static shapes on TensorFlow's own graphs (shape_parity.py): every census
# model's node outputs, as TensorFlow infers them and as Sluice does. Fails on
# a contradiction, or when more outputs are known less well than the floor
# given as --max_less (tests/tf_graphs/BUILD).
# Needs a python with tensorflow in SLUICE_PEERS_PYTHON (tools/test.sh sets it
# from tools/peers.sh); prints SKIP and passes when it is unset.
set -u
if [ -z "${SLUICE_PEERS_PYTHON:-}" ]; then
  echo "SKIP: shape_parity_test needs SLUICE_PEERS_PYTHON (a python with tensorflow; bash tools/test.sh sets it)"
  exit 0
fi
DIR="$TEST_SRCDIR/sluice/tests/tf_graphs"
exec "$SLUICE_PEERS_PYTHON" "$DIR/shape_parity.py" --infer_shapes="$DIR/infer_shapes" "$@"
