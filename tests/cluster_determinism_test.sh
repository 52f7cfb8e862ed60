#!/usr/bin/env bash
# Model parallelism across processes (DESIGN.md "Distribution"): fashion_mlp
# split layer-wise over the tasks of a local cluster trains exactly as
# fashion_mlp in one process. configs/fashion_mlp_cluster.pbtxt puts fc1 on
# the chief and fc2 + logits on the ps (ps=1,worker=1);
# configs/fashion_mlp_2workers.pbtxt puts fc1 on the chief, fc2 on worker 1
# and logits on the ps (ps=1,worker=2). Activations and gradients cross the
# processes over gRPC, which changes no arithmetic: in deterministic mode (one
# intra-op and one inter-op thread in every process) every progress line's
# loss and the final full-precision loss equal the one-process run's, bit for
# bit. Also: the chief's plan lists every task's device, every other task
# stops because "the chief finished training", every task serves /metrics on
# a port of its own (metrics_port 0), and the launcher exits 0.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

STEPS=200
FLAGS=$(mlp_flags $STEPS 1000 1)
# A hang fails the test instead of running into Bazel's timeout. On expiry
# `timeout` sends SIGTERM, which the launcher passes on to every task.
LIMIT_S=150

# "step N loss X" of every progress line, without the launcher's "[worker:0] ".
progress() { sed -n 's/^\(\[worker:0\] \)\{0,1\}step \([0-9]*\)\/[0-9]* .* loss \([0-9.]*\) .*/\2 \3/p' "$1"; }
# The log without the chief's prefix, for last_loss.
chief_lines() { sed -n 's/^\[worker:0\] //p' "$1" > "$2"; }

# shellcheck disable=SC2086
timeout -k 10 $LIMIT_S "$TRAIN" "$CONFIG" $FLAGS --run_dir "$SCRATCH/one" > "$SCRATCH/one.log" 2>&1 ||
  fail "1-process run failed ($?): $(tail -5 "$SCRATCH/one.log")"
one=$(last_loss "$SCRATCH/one.log" $STEPS)
[[ -n "$one" ]] || fail "no final loss in the 1-process log: $(tail -3 "$SCRATCH/one.log")"
n=$(progress "$SCRATCH/one.log" | wc -l)
[[ "$n" -eq $((STEPS / 5)) ]] || fail "$n progress lines in the 1-process log, expected $((STEPS / 5))"
echo "1 process: last step $STEPS loss $one"

check_cluster() {  # NAME CONFIG SPEC TASK... (the non-chief tasks, as "ps:0" or "worker:1")
  local name=$1 config=$2 spec=$3
  shift 3
  local log="$SCRATCH/$name.log" start=$SECONDS rc=0
  # shellcheck disable=SC2086
  timeout -k 10 $LIMIT_S "$TRAIN" "$config" --local_cluster "$spec" $FLAGS --set monitoring.metrics_port=0 \
    --run_dir "$SCRATCH/$name" > "$log" 2>&1 || rc=$?
  echo "$name ($spec): launcher exited $rc after $((SECONDS - start)) s"
  [[ $rc -eq 0 ]] || fail "$name: the launcher exited $rc (124: it hung): $(tail -8 "$log")"

  # The plan places nodes on every task's device.
  local task
  for task in /job:worker/replica:0/task:0 "$@"; do
    if [[ "$task" != /* ]]; then task="/job:${task%%:*}/replica:0/task:${task##*:}"; fi
    grep -q "^\[worker:0\]     $task/device:CPU:0 \+nodes [1-9]" "$log" ||
      fail "$name: the plan puts no nodes on $task/device:CPU:0: $(grep '^\[worker:0\]     /job:' "$log")"
  done
  grep -q "^\[worker:0\] every task answered: $(($# + 1)) devices$" "$log" ||
    fail "$name: the chief did not see $(($# + 1)) devices: $(grep 'every task answered' "$log")"
  # Every other task served, then stopped when the chief finished.
  for task in "$@"; do
    local full="/job:${task%%:*}/replica:0/task:${task##*:}"
    grep -q "^\[$task\] every task answered; serving until the chief says stop$" "$log" ||
      fail "$name: $task never served: $(grep "^\[$task\]" "$log" | tail -3)"
    grep -q "^\[$task\] task $full stopping: the chief finished training$" "$log" ||
      fail "$name: $task did not stop because the chief finished: $(grep "^\[$task\]" "$log" | tail -3)"
  done
  # metrics_port 0: every task serves /metrics on a port of its own.
  local ports
  ports=$(sed -n 's|^\[[a-z]*:[0-9]*\] metrics: http://127.0.0.1:\([0-9]*\)/metrics$|\1|p' "$log" | sort -u | wc -l)
  [[ "$ports" -eq $(($# + 1)) ]] || fail "$name: $ports tasks served /metrics, not $(($# + 1)): $(grep 'metrics: ' "$log")"
  # Only the chief trains: no other task prints progress.
  if grep -v '^\[worker:0\]' "$log" | grep -q '^\[[a-z]*:[0-9]*\] step [0-9]*/'; then
    fail "$name: a task other than the chief printed progress"
  fi

  chief_lines "$log" "$SCRATCH/$name.chief.log"
  local loss
  loss=$(last_loss "$SCRATCH/$name.chief.log" $STEPS)
  echo "$name: last step $STEPS loss $loss"
  [[ -n "$loss" ]] || fail "$name: no final loss: $(tail -5 "$log")"
  [[ "$loss" == "$one" ]] || fail "$name: the final loss $loss differs from the 1-process loss $one"
  [[ "$(progress "$SCRATCH/one.log")" == "$(progress "$log")" ]] ||
    fail "$name: progress losses differ from the 1-process run (< 1 process, > $name):
$(diff <(progress "$SCRATCH/one.log") <(progress "$log") | head -6)"
}

check_cluster ps1_worker1 "$PWD/configs/fashion_mlp_cluster.pbtxt" ps=1,worker=1 ps:0
check_cluster ps1_worker2 "$PWD/configs/fashion_mlp_2workers.pbtxt" ps=1,worker=2 ps:0 worker:1
echo "PASS"
