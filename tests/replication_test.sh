#!/usr/bin/env bash
# Data-parallel training on parameter servers (issue 16; OSDI §4.4): every
# worker of a local cluster trains the same graph on its shard of the input,
# the variables live on the ps task.
#   sync_equals_local: 2 workers x batch 64 with synchronous SGD give, step by
#     step for 50 steps, the losses of one process with batch 128: the mean of
#     the two workers' losses equals the one-process loss within 1e-5
#     (relative), every step.
#   backup_workers: 3 workers, worker 2 slowed by a test-only delay before each
#     step; aggregating 2 of 3 (1 backup) has a mean chief step time at least
#     40% lower than waiting for all 3.
#   sync_batch_norm: batch_norm's moving statistics live on the ps task and
#     every worker's step updates them once: with momentum 0.99, 2 sync
#     workers x 50 steps of 64 leave the moving mean of a batch_norm over the
#     pixels within 3% of one process's after 100 steps of 64 (100 updates),
#     and more than 25% from its value after 50 (what one update per global
#     step would give). A batch_norm with gamma and beta trains too.
#   async_accuracy: 1 ps + 2 asynchronous workers train
#     configs/fashion_mlp_async.pbtxt (fashion_mlp, 9400 global steps) to at
#     least 88.5% test accuracy.
# Every process: 1 intra-op and 1 inter-op thread (train.deterministic).
set -uo pipefail
source tests/train_testlib.sh
skip_without_data
LIMIT_S=240
CASE=${1:-all}

# A small MLP on Fashion-MNIST, records in file order (no shuffle), SGD at a
# constant rate: a batch of 128 is exactly the two workers' batches of 64.
cat > "$SCRATCH/sync.pbtxt" <<CONFIG
name: "replication_test"
run_dir: "$SCRATCH/unused"
model {
  layer { name: "flat" input: "image" flatten {} }
  layer { name: "fc1" input: "flat" dense { units: 64 activation: RELU } }
  layer { name: "logits" input: "fc1" dense { units: 10 } }
  loss { softmax_cross_entropy { logits: "logits" labels: "label" } }
}
input {
  train {
    idx {
      images: "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
      labels: "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz"
    }
    scale_to_unit: true
    batch_size: 128
  }
}
optimizer { sgd { learning_rate: 0.1 } }
train { steps: 50 seed: 3 deterministic: true log_every_steps: 10 }
checkpoint { every_steps: 0 }
monitoring { metrics_port: -1 }
replication { sync {} }
CONFIG

# "N LOSS" for every "loss at step N: LOSS" line of one task in a log.
losses() {  # LOG PREFIX
  sed -n "s/^$2loss at step \([0-9]*\): \(.*\)$/\1 \2/p" "$1"
}

sync_equals_local() {
  local rc=0
  timeout -k 10 $LIMIT_S "$TRAIN" "$SCRATCH/sync.pbtxt" --print_losses --run_dir "$SCRATCH/local" \
    > "$SCRATCH/local.log" 2>&1 || fail "the one-process run failed: $(tail -5 "$SCRATCH/local.log")"
  timeout -k 10 $LIMIT_S "$TRAIN" "$SCRATCH/sync.pbtxt" --print_losses --run_dir "$SCRATCH/sync" \
    --local_cluster ps=1,worker=2 --set input.train.batch_size=64 > "$SCRATCH/sync.log" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || fail "the sync cluster exited $rc: $(tail -8 "$SCRATCH/sync.log")"
  grep -q '^\[worker:1\]   replication    sync: 2 of 2 workers' "$SCRATCH/sync.log" ||
    fail "worker 1 did not train as a sync replica: $(grep '^\[worker:1\]' "$SCRATCH/sync.log" | tail -3)"
  losses "$SCRATCH/local.log" "" > "$SCRATCH/local.losses"
  losses "$SCRATCH/sync.log" '\[worker:0\] ' > "$SCRATCH/w0.losses"
  losses "$SCRATCH/sync.log" '\[worker:1\] ' > "$SCRATCH/w1.losses"
  for f in local w0 w1; do
    [[ $(wc -l < "$SCRATCH/$f.losses") -eq 50 ]] ||
      fail "$f printed $(wc -l < "$SCRATCH/$f.losses") losses, expected 50: $(tail -3 "$SCRATCH/$f.losses")"
  done
  # Step by step: (w0 + w1) / 2 against the one-process loss.
  local report
  report=$(join "$SCRATCH/w0.losses" "$SCRATCH/w1.losses" | join - "$SCRATCH/local.losses" |
    awk '{ mean = ($2 + $3) / 2; d = mean - $4; if (d < 0) d = -d; r = d / ($4 < 0 ? -$4 : $4);
           if (r > worst) { worst = r; at = $1 } n++; if (r > 1e-5) bad++ }
         END { printf "%d steps, worst relative difference %.3g at step %d, %d over 1e-5\n", n, worst, at, bad }')
  echo "sync_equals_local: $report"
  [[ "$report" == "50 steps, "*" 0 over 1e-5" ]] || fail "sync_equals_local: $report"
  # The two workers read different records: their losses differ.
  ! cmp -s "$SCRATCH/w0.losses" "$SCRATCH/w1.losses" || fail "both workers saw the same batches"
}

# The moving mean of pixels_bn in the newest checkpoint of a run directory.
pixel_moving_mean() {  # RUN_DIR
  "$CKPT" inspect "$1" | sed -n 's/^  pixels_bn\/moving_mean .* mean=\([^ ]*\)$/\1/p'
}

sync_batch_norm() {
  # The sync config with a batch_norm over the pixels (only moving statistics)
  # and one with gamma and beta after fc1.
  sed -e 's|^  layer { name: "flat" input: "image" flatten {} }$|  layer { name: "pixels_bn" input: "image" batch_norm { momentum: 0.99 no_scale: true no_center: true } }\n  layer { name: "flat" input: "pixels_bn" flatten {} }|' \
      -e 's|^  layer { name: "logits" input: "fc1" dense { units: 10 } }$|  layer { name: "fc1_bn" input: "fc1" batch_norm {} }\n  layer { name: "logits" input: "fc1_bn" dense { units: 10 } }|' \
      "$SCRATCH/sync.pbtxt" > "$SCRATCH/bn.pbtxt"
  grep -q pixels_bn "$SCRATCH/bn.pbtxt" && grep -q fc1_bn "$SCRATCH/bn.pbtxt" || fail "the batch_norm config: $(cat "$SCRATCH/bn.pbtxt")"
  local steps rc
  for steps in 100 50; do
    timeout -k 10 $LIMIT_S "$TRAIN" "$SCRATCH/bn.pbtxt" --run_dir "$SCRATCH/bn_local$steps" --set train.steps=$steps \
      --set input.train.batch_size=64 > "$SCRATCH/bn_local$steps.log" 2>&1 ||
      fail "the one-process run of $steps steps failed: $(tail -5 "$SCRATCH/bn_local$steps.log")"
  done
  rc=0
  timeout -k 10 $LIMIT_S "$TRAIN" "$SCRATCH/bn.pbtxt" --run_dir "$SCRATCH/bn_sync" --local_cluster ps=1,worker=2 \
    --set input.train.batch_size=64 > "$SCRATCH/bn_sync.log" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || fail "the sync cluster with batch_norm exited $rc: $(tail -8 "$SCRATCH/bn_sync.log")"
  grep -q '^\[worker:0\]     pixels_bn/moving_mean .*(not trained)' "$SCRATCH/bn_sync.log" ||
    fail "the plan does not list pixels_bn/moving_mean as not trained: $(grep -m3 moving "$SCRATCH/bn_sync.log")"
  local m100 m50 cluster
  m100=$(pixel_moving_mean "$SCRATCH/bn_local100")
  m50=$(pixel_moving_mean "$SCRATCH/bn_local50")
  cluster=$(pixel_moving_mean "$SCRATCH/bn_sync")
  [[ -n "$m100" && -n "$m50" && -n "$cluster" ]] || fail "no moving mean in a checkpoint: '$m100' '$m50' '$cluster'"
  echo "sync_batch_norm: pixels' moving mean $cluster after 50 steps of 2 sync workers; one process: $m100 after 100 steps, $m50 after 50"
  awk -v c="$cluster" -v a="$m100" -v b="$m50" 'BEGIN {
    d = c - a; if (d < 0) d = -d; e = c - b; if (e < 0) e = -e; exit !(d <= 0.03 * a && e >= 0.25 * b) }' ||
    fail "the moving mean $cluster is not that of 100 updates ($m100, and not 50: $m50)"
}

mean_step_ms() {  # LOG
  sed -n 's/^\[worker:0\] mean step time \([0-9.]*\) ms over .*/\1/p' "$1" | tail -1
}

backup_workers() {
  local aggregate rc
  for aggregate in 3 2; do
    rc=0
    SLUICE_TEST_SLOW_TASK=worker:2 SLUICE_TEST_STEP_DELAY_MS=150 timeout -k 10 $LIMIT_S "$TRAIN" "$SCRATCH/sync.pbtxt" \
      --run_dir "$SCRATCH/backup$aggregate" --local_cluster ps=1,worker=3 --set train.steps=40 \
      --set replication.sync.replicas_to_aggregate=$aggregate --set replication.sync.backup_workers=$((3 - aggregate)) \
      > "$SCRATCH/backup$aggregate.log" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] || fail "aggregating $aggregate of 3 exited $rc: $(tail -8 "$SCRATCH/backup$aggregate.log")"
  done
  local all backup
  all=$(mean_step_ms "$SCRATCH/backup3.log")
  backup=$(mean_step_ms "$SCRATCH/backup2.log")
  [[ -n "$all" && -n "$backup" ]] || fail "no mean step time: '$all' '$backup'"
  echo "backup_workers: mean chief step time ${all} ms aggregating 3 of 3, ${backup} ms aggregating 2 of 3 (1 backup)"
  awk -v a="$all" -v b="$backup" 'BEGIN { exit !(b <= 0.6 * a) }' ||
    fail "with a backup worker the step time $backup ms is not 40% below $all ms"
}

async_accuracy() {
  local rc=0 start=$SECONDS
  timeout -k 10 600 "$TRAIN" "$PWD/configs/fashion_mlp_async.pbtxt" --local_cluster ps=1,worker=2 --run_dir "$SCRATCH/async" \
    --set train.eval_every_steps=0 --set devices.intra_op_threads=1 --set devices.inter_op_threads=1 \
    --set monitoring.metrics_port=-1 > "$SCRATCH/async.log" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || fail "the async cluster exited $rc: $(tail -8 "$SCRATCH/async.log")"
  grep -q '^\[worker:1\] last step ' "$SCRATCH/async.log" ||
    fail "worker 1 did not train: $(grep '^\[worker:1\]' "$SCRATCH/async.log" | tail -3)"
  local accuracy
  accuracy=$(sed -n 's/^\[worker:0\] eval at step [0-9]*: .* accuracy \([0-9.]*\) .*/\1/p' "$SCRATCH/async.log")
  [[ -n "$accuracy" ]] || fail "no final evaluation: $(tail -5 "$SCRATCH/async.log")"
  echo "async_accuracy: test accuracy $accuracy after 9400 global steps of 2 async workers ($((SECONDS - start)) s)"
  awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.885) }' || fail "async accuracy $accuracy is below 0.885"
}

case "$CASE" in
  sync_equals_local) sync_equals_local ;;
  backup_workers) backup_workers ;;
  sync_batch_norm) sync_batch_norm ;;
  async_accuracy) async_accuracy ;;
  all) sync_equals_local; backup_workers; sync_batch_norm; async_accuracy ;;
  *) fail "unknown case $CASE" ;;
esac
echo PASS
