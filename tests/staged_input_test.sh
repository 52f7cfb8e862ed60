#!/usr/bin/env bash
# input.train.stage_next_batch: the next batch dequeued in a Run beside each
# step (Stage/Unstage ops) trains on the same examples in the same order as a
# batch dequeued inside the step. Over a small CSV data set, deterministic:
# - the losses of every step are the same bits with staging on and off;
# - a run over one epoch ends at the same step either way (no batch lost at
#   the input's end, none staged twice);
# - a run stopped by SIGTERM (a batch staged beside its last step, never
#   trained on) and resumed ends with the uninterrupted run's loss;
# - the plan says the batch is staged (not by default), and input.eval
#   rejects the field.
set -uo pipefail
source tests/train_testlib.sh

awk 'BEGIN { s = 11; print "x1,x2,label";
  for (r = 0; r < 1000; ++r) {
    for (k = 1; k <= 2; ++k) { s = (s * 1103515245 + 12345) % 2147483648; x[k] = s / 1073741824 - 1 }
    printf "%.4f,%.4f,%d\n", x[1], x[2], (x[1] - 2 * x[2] > 0) ? 1 : 0 } }' > "$SCRATCH/rows.csv"

cat > "$SCRATCH/staged.pbtxt" <<CONFIG
name: "staged"
model {
  layer { name: "hidden" input: "x" dense { units: 8 activation: RELU } }
  layer { name: "logits" input: "hidden" dense { units: 2 } }
  loss { softmax_cross_entropy { logits: "logits" labels: "label" } }
}
input {
  train {
    csv {
      files: "$SCRATCH/rows.csv"
      skip_header: true
      column { name: "x" dtype: "float" shape: [2] }
      column { name: "label" dtype: "int64" }
    }
    shuffle { capacity: 400 min_after_dequeue: 200 }
    batch_size: 25
    epochs: 2
  }
}
optimizer { sgd { learning_rate: 0.3 } }
train { steps: 60 eval_every_steps: 0 deterministic: true seed: 5 }
monitoring { metrics_port: -1 }
CONFIG

run() {  # NAME [FLAGS...]
  local name=$1; shift
  timeout 120 "$TRAIN" "$SCRATCH/staged.pbtxt" --run_dir "$SCRATCH/$name" --print_losses "$@" \
    > "$SCRATCH/$name.log" 2>&1 || fail "run $name failed: $(tail -5 "$SCRATCH/$name.log")"
}
losses() { grep '^loss at step ' "$SCRATCH/$1.log"; }

STAGED="--set input.train.stage_next_batch=true"
run on $STAGED
run off --set input.train.stage_next_batch=false
run default
grep -q "input train .* each staged a step ahead" "$SCRATCH/on.log" \
  || fail "the plan does not say the batch is staged: $(grep 'input train' "$SCRATCH/on.log")"
grep -q "each staged a step ahead" "$SCRATCH/default.log" && fail "the plan says staged by default"
[[ $(losses on | wc -l) == 60 ]] || fail "60 losses expected with staging, got $(losses on | wc -l)"
diff <(losses on) <(losses off) > "$SCRATCH/diff.txt" \
  || fail "staging changed the losses: $(head -4 "$SCRATCH/diff.txt")"

# Two epochs of 1000 rows are 80 batches of 25: both runs end at step 80.
run epochs_on --set train.steps=200 $STAGED
run epochs_off --set train.steps=200 --set input.train.stage_next_batch=false
for name in epochs_on epochs_off; do
  grep -q "^last step 80 loss " "$SCRATCH/$name.log" \
    || fail "$name: the input's end should stop the run at step 80: $(grep '^last step' "$SCRATCH/$name.log")"
done
diff <(losses epochs_on) <(losses epochs_off) > /dev/null || fail "staging changed the losses of the epoch run"

# A resume after SIGTERM (finish the step, checkpoint, exit 143) with a batch
# staged beside the last step and never trained on: the resumed run reads it
# again and ends with the uninterrupted run's loss (as tests/exact_resume_test.sh
# checks without staging), on fashion_mlp.
if [[ -r "$FASHION_IMAGES" ]]; then
  FLAGS="$(mlp_flags 200 100 5) $STAGED"
  # shellcheck disable=SC2086
  timeout 120 "$TRAIN" "$CONFIG" $FLAGS --run_dir "$SCRATCH/whole" > "$SCRATCH/whole.log" 2>&1 \
    || fail "uninterrupted run failed: $(tail -5 "$SCRATCH/whole.log")"
  whole=$(last_loss "$SCRATCH/whole.log" 200)
  # shellcheck disable=SC2086
  "$TRAIN" "$CONFIG" $FLAGS --run_dir "$SCRATCH/stopped" > "$SCRATCH/stopped.log" 2>&1 &
  BACKGROUND_PIDS+=($!)
  stop_with_sigterm_at $! "$SCRATCH/stopped.log" 37
  k=$STOPPED_AT
  [[ "$k" -lt 200 ]] || fail "the run ended before the signal: stopped at step $k"
  # shellcheck disable=SC2086
  timeout 120 "$TRAIN" "$CONFIG" $FLAGS --run_dir "$SCRATCH/stopped" > "$SCRATCH/resumed.log" 2>&1 \
    || fail "resumed run failed: $(tail -5 "$SCRATCH/resumed.log")"
  grep -q "input restored to example $((k * 128)) (exact order)" "$SCRATCH/resumed.log" \
    || fail "input position not restored: $(grep -m1 input "$SCRATCH/resumed.log")"
  resumed=$(last_loss "$SCRATCH/resumed.log" 200)
  echo "stopped at step $k, resumed: loss at step 200 $resumed vs uninterrupted $whole"
  close_enough "$resumed" "$whole" 1e-6 || fail "resumed loss $resumed differs from $whole"
else
  echo "SKIP (resume part): Fashion-MNIST is not installed ($FASHION_IMAGES)"
fi

awk '{ print } /^    epochs: 2$/ { print "  }"; print "  eval {";
  print "    csv { files: \"" dir "/rows.csv\" skip_header: true column { name: \"x\" dtype: \"float\" shape: [2] }";
  print "          column { name: \"label\" dtype: \"int64\" } }";
  print "    stage_next_batch: true" }' dir="$SCRATCH" "$SCRATCH/staged.pbtxt" > "$SCRATCH/bad.pbtxt"
"$TRAIN" "$SCRATCH/bad.pbtxt" --run_dir "$SCRATCH/bad" > "$SCRATCH/bad.log" 2>&1 && fail "stage_next_batch in input.eval was accepted"
grep -q "bad.pbtxt:[0-9]*:[0-9]*: .*stage_next_batch is for input.train" "$SCRATCH/bad.log" \
  || fail "the error does not name the field: $(cat "$SCRATCH/bad.log")"
echo "PASS"
