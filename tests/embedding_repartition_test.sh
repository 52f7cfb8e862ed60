#!/usr/bin/env bash
# Partitioned variables resume into another number of partitions (issue 19):
# configs/fashion_sampled_softmax.pbtxt (output weights and biases in 2
# partitions) trains 40 steps; the run then resumes with 3 partitions and with
# one, each for one step at a learning rate that changes nothing. The
# checkpoints hold the whole tables, whose statistics stay those of step 40,
# and the full-softmax evaluation loss (which reads every class's row) is the
# same after each repartitioned restore. Bad partition counts are config errors.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

SS_CONFIG="$PWD/configs/fashion_sampled_softmax.pbtxt"
common=(--set train.eval_every_steps=0 --set monitoring.metrics_port=-1 --set train.log_every_steps=20
        --set checkpoint.every_steps=1000)
eval_loss() { sed -n 's/^eval at step [0-9]*: loss \([0-9.e+-]*\) .*/\1/p' "$1" | tail -1; }
table_stats() { "$CKPT" inspect "$1" | grep -E "^ *sampled_softmax/(weights|biases) " ; }

"$TRAIN" "$SS_CONFIG" "${common[@]}" --set train.steps=40 --run_dir "$SCRATCH/run" > "$SCRATCH/p2.log" 2>&1 ||
  fail "first run failed: $(tail -3 "$SCRATCH/p2.log")"
grep -q "sampled_softmax/weights/part_1" "$SCRATCH/p2.log" || fail "the plan lists no partitions: $(head -20 "$SCRATCH/p2.log")"
want_eval=$(eval_loss "$SCRATCH/p2.log")
want_stats=$(table_stats "$SCRATCH/run/checkpoints/ckpt-40")
[[ -n "$want_eval" && -n "$want_stats" ]] || fail "no eval loss or table in the checkpoint: $(tail -5 "$SCRATCH/p2.log")"
# The eval loss is the full softmax cross-entropy; its exp is reported as the perplexity.
grep -q "^eval at step 40: loss $want_eval perplexity [0-9.]* " "$SCRATCH/p2.log" ||
  fail "no perplexity in the eval line: $(grep "^eval at" "$SCRATCH/p2.log")"
[[ $(echo "$want_stats" | grep -c "\[10,256\]") == 1 ]] || fail "the checkpoint does not hold the whole [10,256] weights: $want_stats"

step=40
for parts in 3 1; do
  step=$((step + 1))
  sed "s/partitions: 2/partitions: $parts/" "$SS_CONFIG" > "$SCRATCH/p$parts.pbtxt"
  "$TRAIN" "$SCRATCH/p$parts.pbtxt" --allow-drift "${common[@]}" --set train.steps=$step \
    --set "optimizer.adagrad={learning_rate: 1e-30}" --run_dir "$SCRATCH/run" > "$SCRATCH/p$parts.log" 2>&1 ||
    fail "resume with $parts partition(s) failed: $(tail -3 "$SCRATCH/p$parts.log")"
  [[ "$(resumed_step "$SCRATCH/p$parts.log")" == $((step - 1)) ]] || fail "did not resume at step $((step - 1)): $(grep resumed "$SCRATCH/p$parts.log")"
  got_eval=$(eval_loss "$SCRATCH/p$parts.log")
  [[ "$got_eval" == "$want_eval" ]] || fail "eval loss with $parts partition(s) is $got_eval, was $want_eval"
  got_stats=$(table_stats "$SCRATCH/run/checkpoints/ckpt-$step")
  [[ "$got_stats" == "$want_stats" ]] || fail "tables after restoring into $parts partition(s): $got_stats, want $want_stats"
done

# More partitions than classes: exit 2, the field located.
sed "s/partitions: 2/partitions: 11/" "$SS_CONFIG" > "$SCRATCH/p11.pbtxt"
"$TRAIN" "$SCRATCH/p11.pbtxt" --validate > "$SCRATCH/p11.log" 2>&1
rc=$?
[[ $rc == 2 ]] && grep -q "p11.pbtxt:[0-9]*:[0-9]*: error: sampled_softmax: partitions must be in \[0, num_classes = 10\], got 11" "$SCRATCH/p11.log" ||
  fail "partitions 11: exit $rc: $(tail -2 "$SCRATCH/p11.log")"
echo "PASS"
