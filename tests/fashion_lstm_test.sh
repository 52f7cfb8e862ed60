#!/usr/bin/env bash
# configs/fashion_lstm.pbtxt end to end: an LSTM over the 28 rows of each
# image, its time loop in the graph (no unrolling) and trained through the
# loop's gradient. 250 deterministic steps must reach 70% test accuracy (the
# untrained model is at 10%), and a second deterministic run must print the
# same final loss, bit for bit. Then a GRU in the LSTM's place must reach 70%.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data
LSTM_CONFIG="$PWD/configs/fashion_lstm.pbtxt"

run_lstm() {  # RUN_DIR LOG [--set ...]
  local run_dir=$1 log=$2
  shift 2
  timeout 300 "$TRAIN" "$LSTM_CONFIG" --set run_dir="$run_dir" --set train.steps=250 --set train.eval_every_steps=250 \
    --set train.deterministic=true --set checkpoint.every_steps=0 --set monitoring.metrics_port=-1 \
    --set summaries.every_steps=0 --set devices.intra_op_threads=1 --set devices.inter_op_threads=1 "$@" >"$log" 2>&1
}

run_lstm "$SCRATCH/a" "$SCRATCH/a.log" || { cat "$SCRATCH/a.log"; fail "train exited $?"; }
grep -q "lstm/recurrent_kernel" "$SCRATCH/a.log" || fail "the plan lists no lstm/recurrent_kernel"
accuracy=$(sed -n 's/^eval at step 250: .*accuracy \([0-9.]*\).*/\1/p' "$SCRATCH/a.log")
[[ -n "$accuracy" ]] || { cat "$SCRATCH/a.log"; fail "no eval at step 250"; }
awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.70) }' || fail "test accuracy $accuracy after 250 steps, expected >= 0.70"
echo "test accuracy after 250 steps: $accuracy"

run_lstm "$SCRATCH/b" "$SCRATCH/b.log" || { cat "$SCRATCH/b.log"; fail "second train exited $?"; }
loss_a=$(last_loss "$SCRATCH/a.log") loss_b=$(last_loss "$SCRATCH/b.log")
[[ -n "$loss_a" && "$loss_a" == "$loss_b" ]] || fail "deterministic runs ended with losses '$loss_a' and '$loss_b'"
echo "both deterministic runs: last loss $loss_a"

# The same model with a GRU layer in the LSTM's place (models/gru_layer.h;
# the layer keeps the name "lstm", which the config's histograms name).
run_lstm "$SCRATCH/gru" "$SCRATCH/gru.log" --set 'model.layer[1]={name:"lstm" input:"rows" gru{units:128 last_only:true}}' ||
  { cat "$SCRATCH/gru.log"; fail "the GRU run failed"; }
grep -q "lstm/recurrent_bias *\[384\]" "$SCRATCH/gru.log" || { cat "$SCRATCH/gru.log"; fail "the plan lists no lstm/recurrent_bias [384]"; }
accuracy=$(sed -n 's/^eval at step 250: .*accuracy \([0-9.]*\).*/\1/p' "$SCRATCH/gru.log")
[[ -n "$accuracy" ]] || { cat "$SCRATCH/gru.log"; fail "no eval at step 250 of the GRU"; }
awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.70) }' || fail "GRU test accuracy $accuracy after 250 steps, expected >= 0.70"
echo "GRU test accuracy after 250 steps: $accuracy"
echo PASS
