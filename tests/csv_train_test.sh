#!/usr/bin/env bash
# Training from CSV files (input.train.csv): four float fields packed into one
# feature [batch, 4] and an int64 label, a header line skipped; a linearly
# separable rule is learned to > 90% on a held-out file, whose lines the plan
# counts. A record with a missing field fails the run naming it.
set -uo pipefail
source tests/train_testlib.sh

# Rows x1..x4 in [-1, 1] from a fixed LCG; label = 2*x1 - x2 + 0.5*x3 > 0.
make_csv() {  # FILE ROWS SEED
  awk -v rows="$2" -v seed="$3" 'BEGIN {
    s = seed; print "x1,x2,x3,x4,label";
    for (r = 0; r < rows; ++r) {
      for (k = 1; k <= 4; ++k) { s = (s * 1103515245 + 12345) % 2147483648; x[k] = s / 1073741824 - 1 }
      printf "%.4f,%.4f,%.4f,%.4f,%d\n", x[1], x[2], x[3], x[4], (2 * x[1] - x[2] + 0.5 * x[3] > 0) ? 1 : 0
    } }' > "$1"
}
make_csv "$SCRATCH/train.csv" 2000 7
make_csv "$SCRATCH/test.csv" 500 99

cat > "$SCRATCH/csv.pbtxt" <<CONFIG
name: "csv_logreg"
model {
  layer { name: "logits" input: "x" dense { units: 2 } }
  loss { softmax_cross_entropy { logits: "logits" labels: "label" } }
  metric { accuracy { logits: "logits" labels: "label" } }
}
input {
  train {
    csv {
      files: "$SCRATCH/train.csv"
      skip_header: true
      column { name: "x" dtype: "float" shape: [4] }
      column { name: "label" dtype: "int64" }
    }
    shuffle { capacity: 1000 min_after_dequeue: 500 }
    batch_size: 50
  }
  eval {
    csv {
      files: "$SCRATCH/test.csv"
      skip_header: true
      column { name: "x" dtype: "float" shape: [4] }
      column { name: "label" dtype: "int64" }
    }
    batch_size: 100
  }
}
optimizer { sgd { learning_rate: 0.5 } }
train { steps: 300 eval_every_steps: 0 }
monitoring { metrics_port: -1 }
CONFIG

"$TRAIN" "$SCRATCH/csv.pbtxt" --run_dir "$SCRATCH/run" > "$SCRATCH/train.log" 2>&1 \
  || fail "training from CSV failed: $(tail -5 "$SCRATCH/train.log")"
grep -q "input eval     CSV 1 file(s) .*, 5 fields, 500 records" "$SCRATCH/train.log" \
  || fail "the plan does not show the CSV input and its records: $(grep input "$SCRATCH/train.log")"
eval_line=$(grep "^eval at step 300:" "$SCRATCH/train.log")
[[ $eval_line == *"(500 examples)"* ]] || fail "the evaluation did not cover the 500 rows: $eval_line"
accuracy=$(sed -n 's/.* accuracy \([0-9.]*\) .*/\1/p' <<< "$eval_line")
awk -v a="$accuracy" 'BEGIN { exit !(a > 0.9) }' || fail "accuracy $accuracy after 300 steps (want > 0.9): $eval_line"

# A row missing its label: the run fails naming the record, exit 1.
printf 'x1,x2,x3,x4,label\n0.1,0.2,0.3,0.4,1\n0.5,0.6,0.7,0.8\n' > "$SCRATCH/bad.csv"
"$TRAIN" "$SCRATCH/csv.pbtxt" --run_dir "$SCRATCH/bad" --set "input.train.csv.files[0]=$SCRATCH/bad.csv" \
  > "$SCRATCH/bad.log" 2>&1
rc=$?
[[ $rc == 1 ]] || fail "a short record should exit 1, got $rc: $(tail -3 "$SCRATCH/bad.log")"
grep -q "error at step .*has 4 fields, expected 5" "$SCRATCH/bad.log" || fail "the short record is not named: $(tail -3 "$SCRATCH/bad.log")"
echo PASS
