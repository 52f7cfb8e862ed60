#!/bin/bash
# Training parity of the census models (census_parity.py): 20 steps in TensorFlow
# and in Sluice on the same GraphDef, every variable within 1e-4.
# Needs a python with tensorflow in SLUICE_PEERS_PYTHON (tools/test.sh sets it
# from tools/peers.sh); prints SKIP and passes when it is unset.
set -u
if [ -z "${SLUICE_PEERS_PYTHON:-}" ]; then
  echo "SKIP: census_parity_test needs SLUICE_PEERS_PYTHON (a python with tensorflow; bash tools/test.sh sets it)"
  exit 0
fi
ROOT="$TEST_SRCDIR/sluice"
exec "$SLUICE_PEERS_PYTHON" "$ROOT/tests/tf_graphs/census_parity.py" \
  --run_graphdef="$ROOT/tests/tf_interop/run_graphdef" --workdir="${TEST_TMPDIR:-/tmp}/census_parity"
