#!/usr/bin/env bash
# Training from TFRecord files of tf.Examples (input.train.tfrecord): the
# records tool converts Fashion-MNIST's test split, a model trains on two of
# its shards and evaluates over all of them, and an input that cannot parse
# (a bytes feature declared float) fails the run naming the feature instead of
# reading as the end of the data.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data
RECORDS="$PWD/cmd/records/records"

"$RECORDS" --output_dir="$SCRATCH/rec" --shards=2 --splits=t10k > "$SCRATCH/records.log" 2>&1 \
  || fail "records failed: $(tail -2 "$SCRATCH/records.log")"

cat > "$SCRATCH/tfr.pbtxt" <<CONFIG
name: "logreg_tfrecord"
model {
  layer { name: "flat" input: "image" flatten {} }
  layer { name: "logits" input: "flat" dense { units: 10 kernel_initializer { zeros {} } } }
  loss { softmax_cross_entropy { logits: "logits" labels: "label" } }
  metric { accuracy { logits: "logits" labels: "label" } }
}
input {
  train {
    tfrecord {
      files: "$SCRATCH/rec/t10k-*.tfrecord"
      feature { name: "image" dtype: "uint8_image" shape: [28, 28, 1] }
      feature { name: "label" dtype: "int64" }
    }
    scale_to_unit: true
    shuffle { capacity: 2000 min_after_dequeue: 1000 }
    batch_size: 100
  }
  eval {
    tfrecord {
      files: "$SCRATCH/rec/t10k-*.tfrecord"
      feature { name: "image" dtype: "uint8_image" shape: [28, 28, 1] }
      feature { name: "label" dtype: "int64" }
    }
    scale_to_unit: true
    batch_size: 1000
  }
}
optimizer { sgd { learning_rate: 0.1 } }
train { steps: 300 eval_every_steps: 0 }
monitoring { metrics_port: -1 }
CONFIG

"$TRAIN" "$SCRATCH/tfr.pbtxt" --run_dir "$SCRATCH/run" > "$SCRATCH/train.log" 2>&1 \
  || fail "training from TFRecords failed: $(tail -5 "$SCRATCH/train.log")"
grep -q "input train    TFRecord 2 file(s)" "$SCRATCH/train.log" || fail "the plan does not show the TFRecord input: $(grep input "$SCRATCH/train.log")"
grep -q "input eval     TFRecord 2 file(s) .*, 10000 records" "$SCRATCH/train.log" || fail "the eval input's records were not counted: $(grep input "$SCRATCH/train.log")"
eval_line=$(grep "^eval at step 300:" "$SCRATCH/train.log")
[[ $eval_line == *"(10,000 examples)"* ]] || fail "the evaluation did not cover the 10,000 records: $eval_line"
accuracy=$(sed -n 's/.* accuracy \([0-9.]*\) .*/\1/p' <<< "$eval_line")
awk -v a="$accuracy" 'BEGIN { exit !(a > 0.65) }' || fail "accuracy $accuracy after 300 steps (want > 0.65): $eval_line"

# The image declared float: ParseExample fails in the queue runner; the run
# says so and exits 1, not "the training input ended".
"$TRAIN" "$SCRATCH/tfr.pbtxt" --run_dir "$SCRATCH/bad" --set 'input.train.tfrecord.feature[0].dtype=float' \
  > "$SCRATCH/bad.log" 2>&1
rc=$?
[[ $rc == 1 ]] || fail "a feature of the wrong type should exit 1, got $rc: $(tail -3 "$SCRATCH/bad.log")"
grep -q "error at step 0: .*feature 'image' is a bytes_list" "$SCRATCH/bad.log" \
  || fail "the parse error is not reported: $(tail -3 "$SCRATCH/bad.log")"
! grep -q "the training input ended" "$SCRATCH/bad.log" || fail "a failed input read as its end"
echo PASS
