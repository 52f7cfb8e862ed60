#!/bin/bash
# The op census of issue 21 (census.py): prints per model the op types of its
# TensorFlow training graph that Sluice registers, and "ops: N of M registered";
# fails when N drops below the floor given as --min_registered (tests/tf_graphs/BUILD).
# Needs a python with tensorflow in SLUICE_PEERS_PYTHON (tools/test.sh sets it
# from tools/peers.sh); prints SKIP and passes when it is unset.
set -u
DIR="$TEST_SRCDIR/sluice/tests/tf_graphs"
if [ -z "${SLUICE_PEERS_PYTHON:-}" ]; then
  echo "SKIP: census_test needs SLUICE_PEERS_PYTHON (a python with tensorflow; bash tools/test.sh sets it)"
  exit 0
fi
exec "$SLUICE_PEERS_PYTHON" "$DIR/census.py" --list_ops="$DIR/list_ops" "$@"
