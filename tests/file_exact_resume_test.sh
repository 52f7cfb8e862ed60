#!/usr/bin/env bash
# Exact resume of a TFRecord input: three shards of uneven size (the records
# tool's t10k split), read in deterministic mode, in order and shuffled. A run
# that ends in its second epoch and is resumed with more steps says where its input
# restarts (epoch, record, file) and ends with the loss of an uninterrupted
# run to 1e-6 relative: it read the same examples in the same order. Before,
# a resumed TFRecord or CSV input started its epoch over.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data
RECORDS="$PWD/cmd/records/records"

"$RECORDS" --output_dir="$SCRATCH/rec" --shards=3 --splits=t10k > "$SCRATCH/records.log" 2>&1 \
  || fail "records failed: $(tail -2 "$SCRATCH/records.log")"

cat > "$SCRATCH/tfr.pbtxt" <<CONFIG
name: "logreg_tfrecord_resume"
model {
  layer { name: "flat" input: "image" flatten {} }
  layer { name: "hidden" input: "flat" dense { units: 32 activation: RELU } }
  layer { name: "logits" input: "hidden" dense { units: 10 } }
  loss { softmax_cross_entropy { logits: "logits" labels: "label" } }
}
input {
  train {
    tfrecord {
      files: "$SCRATCH/rec/t10k-*.tfrecord"
      feature { name: "image" dtype: "uint8_image" shape: [28, 28, 1] }
      feature { name: "label" dtype: "int64" }
    }
    scale_to_unit: true
    batch_size: 64
  }
}
optimizer { sgd { learning_rate: 0.05 } }
train { steps: 240 deterministic: true eval_every_steps: 0 log_every_steps: 5 }
checkpoint { every_steps: 1000 keep: 2 }
monitoring { metrics_port: -1 }
CONFIG

STEPS=240
# In order, and shuffled (deterministic mode: each epoch's files in a seeded
# order, each file's records in a seeded permutation; the same run twice is
# the same run).
for variant in in_order shuffled; do
  flags=()
  [[ $variant == shuffled ]] && flags=(--set 'input.train.shuffle={capacity: 1000}')
  "$TRAIN" "$SCRATCH/tfr.pbtxt" --run_dir "$SCRATCH/whole_$variant" "${flags[@]}" > "$SCRATCH/whole_$variant.log" 2>&1 \
    || fail "$variant: uninterrupted run failed: $(tail -5 "$SCRATCH/whole_$variant.log")"
  whole=$(last_loss "$SCRATCH/whole_$variant.log" $STEPS)
  [[ -n "$whole" ]] || fail "$variant: no final loss in $SCRATCH/whole_$variant.log"

  # 10,000 records of 64-example batches: the second epoch starts in step 157.
  # The first run stops at step 170 (its last checkpoint); the second goes on to 240.
  dir="$SCRATCH/stopped_$variant"
  k=170
  "$TRAIN" "$SCRATCH/tfr.pbtxt" --run_dir "$dir" "${flags[@]}" --set train.steps=$k > "$dir.log" 2>&1 \
    || fail "$variant: the first part failed: $(tail -5 "$dir.log")"
  "$TRAIN" "$SCRATCH/tfr.pbtxt" --run_dir "$dir" "${flags[@]}" --allow-drift > "$dir.resumed.log" 2>&1 \
    || fail "$variant: resumed run failed: $(tail -5 "$dir.resumed.log")"
  [[ "$(resumed_step "$dir.resumed.log")" == "$k" ]] || fail "$variant: did not resume at step $k: $(grep -m1 resumed "$dir.resumed.log")"
  consumed=$((k * 64))
  where=$(grep "^input restored to example $consumed (exact order) at epoch 1, record " "$dir.resumed.log") \
    || fail "$variant: input position not restored: $(grep input "$dir.resumed.log")"
  echo "$variant: $where"
  resumed=$(last_loss "$dir.resumed.log" $STEPS)
  diff=$(relative_difference "$resumed" "$whole")
  echo "$variant: stopped at step $k, resumed: loss at step $STEPS $resumed vs uninterrupted $whole (relative difference $diff)"
  close_enough "$resumed" "$whole" 1e-6 || fail "$variant: resumed loss $resumed differs from $whole by $diff (> 1e-6)"
done
if [[ "$(last_loss "$SCRATCH/whole_shuffled.log" $STEPS)" == "$(last_loss "$SCRATCH/whole_in_order.log" $STEPS)" ]]; then
  fail "shuffling changed nothing"
fi

# Another batch size on resume (--allow-drift): the position is step x the new
# batch size, not where the earlier run stopped reading; the run says so.
"$TRAIN" "$SCRATCH/tfr.pbtxt" --run_dir "$SCRATCH/stopped_in_order" --allow-drift --set train.steps=$((STEPS + 10)) \
  --set input.train.batch_size=32 > "$SCRATCH/batch.log" 2>&1 || fail "resume with batch 32 failed: $(tail -3 "$SCRATCH/batch.log")"
grep -q "^warning: the training batch size changed from 64 to 32: the input resumes at the restored step x 32 examples" \
  "$SCRATCH/batch.log" || fail "no warning of the batch size's change: $(grep -i batch "$SCRATCH/batch.log")"
grep -q "^input restored to example $((STEPS * 32)) " "$SCRATCH/batch.log" || fail "not restored at step x 32: $(grep '^input' "$SCRATCH/batch.log")"

# Training files changed between the runs (one grown, one new to the glob):
# the resume names each and says the position is counted over the files as
# they are now; the next resume, over the same files, says nothing of them.
shard0=$(ls "$SCRATCH"/rec/t10k-*.tfrecord | head -1)
cp "$shard0" "$SCRATCH/rec/t10k-99999-of-99999.tfrecord"
size0=$(stat -c %s "$shard0")
cat "$shard0" "$shard0" > "$SCRATCH/doubled" && mv "$SCRATCH/doubled" "$shard0"  # whole records appended
"$TRAIN" "$SCRATCH/tfr.pbtxt" --run_dir "$SCRATCH/stopped_in_order" --allow-drift --set train.steps=$((STEPS + 20)) \
  --set input.train.batch_size=32 > "$SCRATCH/changed.log" 2>&1 || fail "resume over changed files failed: $(tail -3 "$SCRATCH/changed.log")"
grep -q "^warning: the training files changed since the last run in this directory" "$SCRATCH/changed.log" \
  || fail "no warning of the changed files: $(head -20 "$SCRATCH/changed.log")"
grep -q "^  $shard0: $((2 * size0)) bytes, was $size0\$" "$SCRATCH/changed.log" \
  || fail "the grown file is not named: $(grep -A4 '^warning: the training files' "$SCRATCH/changed.log")"
grep -q "^  $SCRATCH/rec/t10k-99999-of-99999.tfrecord: new\$" "$SCRATCH/changed.log" \
  || fail "the new file is not named: $(grep -A4 '^warning: the training files' "$SCRATCH/changed.log")"
echo "changed files: $(grep -A3 '^warning: the training files' "$SCRATCH/changed.log" | tr '\n' ' ')"
"$TRAIN" "$SCRATCH/tfr.pbtxt" --run_dir "$SCRATCH/stopped_in_order" --allow-drift --set train.steps=$((STEPS + 30)) \
  --set input.train.batch_size=32 > "$SCRATCH/unchanged.log" 2>&1 || fail "resume failed: $(tail -3 "$SCRATCH/unchanged.log")"
if grep -q "training files changed" "$SCRATCH/unchanged.log"; then fail "warned of files that did not change since the last run"; fi
echo PASS
