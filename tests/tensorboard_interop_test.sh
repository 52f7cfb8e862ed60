#!/bin/bash
# A short `train` run (30 steps, summaries every 10, histograms of fc1/*, two input images)
# loaded with TensorBoard's own EventAccumulator (tensorboard from PyPI, in the python that
# SLUICE_PEERS_PYTHON names; tools/test.sh sets it from tools/peers.sh). Without that python
# the test prints SKIP and passes.
set -u
source "$TEST_SRCDIR/sluice/tests/monitoring_testlib.sh"
py="${SLUICE_PEERS_PYTHON:-}"
if [[ -z "$py" ]]; then
  echo "SKIP: SLUICE_PEERS_PYTHON is not set (run through tools/test.sh, or pass --test_env=SLUICE_PEERS_PYTHON=.venv/bin/python)"
  exit 0
fi
[[ -x "$py" ]] || fail "SLUICE_PEERS_PYTHON=$py is not executable"
"$py" -c "import tensorboard" 2>/dev/null || fail "$py cannot import tensorboard (run tools/peers.sh)"

run="$TEST_TMPDIR/run"
"$TRAIN" "$CONFIGS/fashion_mlp.pbtxt" --run_dir "$run" "${FAST_INPUT[@]}" --set train.steps=30 \
  --set train.eval_every_steps=0 --set summaries.every_steps=10 --set summaries.input_images=2 \
  >"$TEST_TMPDIR/train.log" 2>&1 || fail "train failed: $(cat "$TEST_TMPDIR/train.log")"
TF_CPP_MIN_LOG_LEVEL=2 "$py" "$TEST_SRCDIR/sluice/tests/tensorboard_load.py" "$run" 10 20 30 2>"$TEST_TMPDIR/py.err" \
  || fail "TensorBoard could not load the run: $(tail -20 "$TEST_TMPDIR/py.err")"
