#!/usr/bin/env bash
# Faults in a replicated run (issue 16): 1 ps + 2 synchronous workers train
# fashion_mlp (configs/fashion_mlp_sync.pbtxt, deterministic input order, 1000
# global steps, a checkpoint every 125) under
# `--local_cluster ps=1,worker=2,restarts=3`, which starts a dead ps or worker
# again, as a cluster manager would. At a random step:
#   kill_worker  SIGKILL worker 1: it is started again and rejoins (the chief's
#                step waits for its gradient meanwhile);
#   kill_ps      SIGKILL the ps: it is started again; the chief notices at once,
#                restarts itself and restores the newest checkpoint (the ps
#                gets its variables back), worker 1 rejoins;
#   stop_ps      SIGSTOP the ps for 8 s, then SIGCONT: the chief notices within
#                twice the health-check interval (gRPC keepalive: a ping after
#                1 s, answered within 1 s; 4 s) and recovers as above;
#   kill_chief   SIGKILL the chief: the launcher exits 137 (retryable); the same
#                command run again resumes from the newest checkpoint.
# Each run must finish by itself (exit 0), lose no more steps than one
# checkpoint interval, and end within 0.5 points of the test accuracy of an
# uninterrupted run, and every task but a killed chief keeps its /metrics URL.
# RUNS=N repeats every fault N times (default 1).
# Every process: 1 intra-op and 1 inter-op thread.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data
RUNS=${RUNS:-1}
CASES=${1:-kill_worker kill_ps stop_ps kill_chief}
STEPS=1000
EVERY=125
LIMIT_S=300
CONFIG_FILE="$PWD/configs/fashion_mlp_sync.pbtxt"
FLAGS=(--set train.steps=$STEPS --set checkpoint.every_steps=$EVERY --set train.eval_every_steps=0
       --set train.deterministic=true
       --set train.log_every_steps=100 --set monitoring.metrics_port=0 --print_losses)

# Starts the cluster in the background on run directory $1, output to $2; sets CLUSTER_PID.
start_cluster() {  # RUN_DIR LOG
  timeout -k 10 $LIMIT_S "$TRAIN" "$CONFIG_FILE" --local_cluster ps=1,worker=2,restarts=3 --run_dir "$1" "${FLAGS[@]}" \
    >> "$2" 2>&1 &
  CLUSTER_PID=$!
  BACKGROUND_PIDS+=("$CLUSTER_PID")
}

# The pid of a task (ps or worker N) of the cluster whose run directory is $1.
task_pid() {  # RUN_DIR JOB INDEX
  local p
  for p in $(pgrep -f -- "--run_dir $1 " || true); do
    [[ -r /proc/$p/environ ]] || continue
    if tr '\0' '\n' < "/proc/$p/environ" | grep -q "^TF_CONFIG=.*\"task\": {\"type\": \"$2\", \"index\": $3}"; then
      echo "$p"
      return
    fi
  done
}

# The chief's last "loss at step N" in the log.
chief_step() { sed -n 's/^\[worker:0\] loss at step \([0-9]*\): .*/\1/p' "$1" | tail -1; }

# Every worker's full-precision final loss, one line each.
final_losses() { grep -E '^\[worker:[0-9]+\] last step ' "$1" | sort; }

accuracy_of() { sed -n 's/^\[worker:0\] eval at step [0-9]*: .* accuracy \([0-9.]*\) .*/\1/p' "$1" | tail -1; }

# Waits (bounded) until the chief passed step $2 in log $1.
await_step() {  # LOG STEP
  local deadline=$((SECONDS + 120)) s
  while ((SECONDS < deadline)); do
    s=$(chief_step "$1")
    [[ -n "$s" && "$s" -ge "$2" ]] && return 0
    sleep 0.1
  done
  fail "the chief never reached step $2: $(tail -5 "$1")"
}

# Seconds (one decimal) until a line matching $2 appears in $1 (bounded by $3 s); "" when none.
time_until() {  # LOG PATTERN LIMIT_S
  local start=$EPOCHREALTIME deadline=$((SECONDS + $3))
  while ((SECONDS < deadline)); do
    if grep -q -- "$2" "$1"; then
      awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
      return
    fi
    sleep 0.05
  done
}

# Baseline: the same run without a fault.
base_log="$SCRATCH/base.log"
start_cluster "$SCRATCH/base" "$base_log"
wait "$CLUSTER_PID" || fail "the uninterrupted run failed: $(tail -8 "$base_log")"
BASE=$(accuracy_of "$base_log")
[[ -n "$BASE" ]] || fail "no accuracy in the uninterrupted run: $(tail -5 "$base_log")"
echo "uninterrupted: test accuracy $BASE"

one_fault() {  # CASE RUN
  local name=$1 run=$2 dir="$SCRATCH/$1_$2" log="$SCRATCH/$1_$2.log" at victim noticed="" rc=0
  at=$((STEPS / 4 + RANDOM % (STEPS / 3)))
  start_cluster "$dir" "$log"
  await_step "$log" $at
  local before
  case "$name" in
    kill_worker) victim=$(task_pid "$dir" worker 1) ;;
    kill_ps | stop_ps) victim=$(task_pid "$dir" ps 0) ;;
    kill_chief) victim=$(task_pid "$dir" worker 0) ;;
  esac
  [[ -n "$victim" ]] || fail "$name: no pid for the victim"
  before=$(chief_step "$log")
  case "$name" in
    kill_worker)
      kill -KILL "$victim"
      noticed=$(time_until "$log" "task worker:1 exited with code 137; starting it again" 10) ;;
    kill_ps)
      kill -KILL "$victim"
      noticed=$(time_until "$log" '^\[worker:0\] lost a peer' 10) ;;
    stop_ps)
      kill -STOP "$victim"
      noticed=$(time_until "$log" '^\[worker:0\] lost a peer' 10)
      sleep 8
      kill -CONT "$victim" ;;
    kill_chief)
      kill -KILL "$victim" ;;
  esac
  wait "$CLUSTER_PID" || rc=$?
  if [[ "$name" == kill_chief ]]; then
    [[ $rc -eq 137 ]] || fail "$name: the launcher exited $rc, expected 137 (the chief's SIGKILL): $(tail -5 "$log")"
    rc=0
    start_cluster "$dir" "$log"  # the same command again
    wait "$CLUSTER_PID" || rc=$?
  fi
  [[ $rc -eq 0 ]] || fail "$name: the run did not finish by itself (exit $rc): $(grep -v '^\[.*\]   ' "$log" | tail -12)"
  if [[ "$name" == kill_worker ]]; then
    grep -q '^\[worker:1\] the chief is ready: training from step' "$log" || fail "$name: worker 1 did not rejoin"
    [[ $(grep -c '^\[worker:1\] the chief is ready' "$log") -ge 2 ]] || fail "$name: worker 1 did not rejoin"
  else
    local resumed
    resumed=$(sed -n 's/^\[worker:0\] resumed from .* at step \([0-9]*\)$/\1/p' "$log" | tail -1)
    [[ -n "$resumed" ]] || fail "$name: the chief did not resume from a checkpoint: $(grep -v '^\[.*\]   ' "$log" | tail -12)"
    local lost=$((before - resumed))
    ((lost <= EVERY)) || fail "$name: resumed at step $resumed after step $before: $lost steps lost (> $EVERY)"
    echo "$name run $run: fault after step $before, resumed at step $resumed ($lost steps lost)"
  fi
  if [[ "$name" == kill_ps || "$name" == stop_ps || "$name" == kill_worker ]]; then
    [[ -n "$noticed" ]] || fail "$name: the failure was not noticed within 10 s"
    local limit=1
    [[ "$name" == stop_ps ]] && limit=4  # 2 x the health check's 2 s (1 s ping + 1 s timeout)
    awk -v n="$noticed" -v l="$limit" 'BEGIN { exit !(n <= l) }' || fail "$name: noticed after $noticed s (> $limit s)"
  fi
  if [[ "$name" != kill_chief ]]; then
    # Every task keeps its /metrics URL across its restarts (a scrape config
    # keeps working): the launcher's pick, kept by a restarted process.
    local task urls
    for task in ps:0 worker:0 worker:1; do
      urls=$(sed -n "s|^\[$task\] metrics: \(http://[^ ]*\).*|\1|p" "$log" | sort -u)
      [[ $(wc -l <<< "$urls") == 1 && -n "$urls" ]] || fail "$name: task $task served /metrics at: $urls"
    done
    [[ $(grep -c '^\[worker:0\] metrics: ' "$log") -ge 2 || "$name" == kill_worker ]] \
      || fail "$name: the chief did not restart"
  fi
  local acc
  acc=$(accuracy_of "$log")
  [[ -n "$acc" ]] || fail "$name: no final evaluation: $(tail -5 "$log")"
  local same="differ from"
  [[ "$(final_losses "$log")" == "$(final_losses "$base_log")" ]] && same="equal"
  echo "$name run $run: noticed after ${noticed:-n/a} s; test accuracy $acc (uninterrupted $BASE);" \
    "final losses $same the uninterrupted run's"
  awk -v a="$acc" -v b="$BASE" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.005) }' ||
    fail "$name: accuracy $acc is more than 0.5 points from $BASE"
}

for name in $CASES; do
  for ((run = 1; run <= RUNS; run++)); do one_fault "$name" "$run"; done
done
echo PASS
