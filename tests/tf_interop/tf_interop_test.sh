#!/bin/bash
# TensorFlow GraphDefs run unchanged in Sluice: MLP and CNN inference graphs and
# their gradient graphs, exported from TensorFlow with variables frozen to
# constants, give TensorFlow's outputs within 1e-5 relative (tf_models.py does
# the export and the checks); training graphs on resource variables
# (VarHandleOp, ResourceApply*), run from TensorFlow's initializer for 20 train
# steps, end with TensorFlow's variables within 1e-4; a malformed GraphDef or
# feed is an error, not a crash; a v1 while_loop RNN over TensorArrays and
# its tf.gradients graph match TensorFlow within 1e-5. Needs a python with tensorflow in SLUICE_PEERS_PYTHON (tools/test.sh
# sets it from tools/peers.sh); prints SKIP and passes when it is unset.
set -u
BIN="$TEST_SRCDIR/sluice/tests/tf_interop/run_graphdef"
DIR="$TEST_SRCDIR/sluice/tests/tf_interop"
fail() { echo "FAIL: $*"; exit 1; }

# Bad input: exit 1 with a message, never a crash (no TensorFlow needed).
W="$TEST_TMPDIR/bad"; mkdir -p "$W"
printf 'this is not a GraphDef \xff\xff\xff\xff' > "$W/garbage.pb"
printf '\x0a\x05\x0a\x01x\x12\x09Placeholder' > "$W/truncated.pb"   # node with a cut-off op string
: > "$W/empty.pb"
msg=$("$BIN" --graph="$W/garbage.pb" --fetch=x 2>&1); rc=$?
[ $rc -eq 1 ] || fail "garbage GraphDef should exit 1, got $rc: $msg"
msg=$("$BIN" --graph="$W/truncated.pb" --fetch=x 2>&1); rc=$?
[ $rc -eq 1 ] || fail "truncated GraphDef should exit 1, got $rc: $msg"
msg=$("$BIN" --graph="$W/empty.pb" --fetch=x 2>&1); rc=$?
[ $rc -eq 1 ] || fail "empty GraphDef with a fetch should exit 1, got $rc: $msg"
echo "$msg" | grep -q "x" || fail "the error should name the fetch: $msg"
msg=$("$BIN" --graph="$W/missing.pb" --fetch=x 2>&1); rc=$?
[ $rc -eq 1 ] || fail "missing file should exit 1, got $rc: $msg"
msg=$("$BIN" --graph="$W/empty.pb" --feed=x="$W/garbage.pb" --fetch=x 2>&1); rc=$?
[ $rc -eq 1 ] || fail "garbage feed should exit 1, got $rc: $msg"
msg=$("$BIN" --graph="$W/empty.pb" --fetch=x --iters=-3 2>&1); rc=$?
[ $rc -eq 1 ] || fail "negative --iters should exit 1, got $rc: $msg"
msg=$("$BIN" --graph="$W/empty.pb" --fetch=x --train=t 2>&1); rc=$?
[ $rc -eq 1 ] || fail "--train without --steps should exit 1, got $rc: $msg"
echo "ok   malformed GraphDefs, feeds and flags are errors, not crashes"

if [ -z "${SLUICE_PEERS_PYTHON:-}" ]; then
  echo "SKIP: tf_interop_test needs SLUICE_PEERS_PYTHON (a python with tensorflow; bash tools/test.sh sets it)"
  exit 0
fi
if ! "$SLUICE_PEERS_PYTHON" -c "import tensorflow" >/dev/null 2>&1; then
  fail "SLUICE_PEERS_PYTHON=$SLUICE_PEERS_PYTHON cannot import tensorflow (run bash tools/peers.sh)"
fi
"$SLUICE_PEERS_PYTHON" "$DIR/tf_models.py" --run_graphdef="$BIN" --workdir="$TEST_TMPDIR/work" || exit 1
# TensorFlow's v1 while_loop over TensorArrays and its gradient graph (stacks,
# gradient arrays) give TensorFlow's outputs within 1e-5 (tf_control_flow.py).
exec "$SLUICE_PEERS_PYTHON" "$DIR/tf_control_flow.py" --run_graphdef="$BIN" --workdir="$TEST_TMPDIR/work"
