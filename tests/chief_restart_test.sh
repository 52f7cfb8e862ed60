#!/usr/bin/env bash
# The chief of a replicated run killed and started again while the ps and the
# other worker keep running, as a cluster manager (Kubernetes, a Slurm
# requeue of one task) does it. The test starts each task itself (its own
# TF_CONFIG on a free 127.0.0.1 port, 1 intra-op and 1 inter-op thread),
# SIGKILLs the chief after it has passed a checkpoint, and starts the same
# command again:
#
#   sync   (configs/fashion_mlp_sync.pbtxt, deterministic input order): the
#          restarted chief resumes from its newest checkpoint; worker 1, whose
#          step waits for the lost chief's token, says it lost the chief,
#          restarts itself and rejoins the new chief; every task exits 0, and
#          both workers' final losses equal an uninterrupted run's (the lost
#          steps are replayed exactly).
#   async  (configs/fashion_mlp_async.pbtxt): the chief resumes; worker 1 never
#          waits for it; every task exits 0.
#
# And worker 1 of the sync run SIGKILLed instead: the chief's step waits for
# its gradients, and the chief says so ("task ... has not answered for 5s")
# within 10 s; worker 1 started again rejoins ("answers again") and every task
# exits 0. Then worker 1 SIGKILLed again and the chief sent SIGTERM while its
# step waits for worker 1: within 25 s it abandons the step, checkpoints the
# last completed step and exits 143; the ps stops with it, exiting 143 too.
# And SIGTERM to the chief alone of a healthy sync run: every task exits 143
# (the chief tells the others its exit code), not 0 as if the run were done;
# SIGTERM to the ps alone: the chief stops the run at its next step with a
# checkpoint, and every task exits 143. And a chief that gives up after
# cluster.max_recoveries: worker 1 exits 129 too.
#
# Every wait is bounded: a hang fails the test.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

STEPS=300
EVERY=50
KILL_AFTER=125  # the chief's progress line at or past this step
LIMIT_S=80      # a whole run, kill and restart included
FLAGS="--set train.steps=$STEPS --set checkpoint.every_steps=$EVERY --set train.eval_every_steps=0
  --set train.deterministic=true --set train.log_every_steps=25 --set monitoring.metrics_port=-1
  --set summaries.every_steps=0 --set devices.intra_op_threads=1 --set devices.inter_op_threads=1"

now_s() { date +%s; }
alive() { [[ -e /proc/$1 ]] && ! grep -q '^[0-9]* (.*) Z ' "/proc/$1/stat" 2>/dev/null; }

# Starts task JOB:INDEX of the cluster in DIR with CONFIG, appending to its
# log; prints its pid.
declare -A PIDS
CLUSTER=""
start_task() {  # CONFIG DIR JOB INDEX
  # shellcheck disable=SC2086
  TF_CONFIG="{\"cluster\": $CLUSTER, \"task\": {\"type\": \"$3\", \"index\": $4}}" \
    "$TRAIN" "$1" $FLAGS --run_dir "$2/run" >> "$2/${3}_$4.log" 2>&1 &
  PIDS[$3:$4]=$!
  BACKGROUND_PIDS+=($!)
}

# Waits (bounded by the run's deadline) for every task to exit; each must exit 0.
wait_all() {  # NAME DIR DEADLINE
  local task
  for task in ps:0 worker:1 worker:0; do
    while alive "${PIDS[$task]}"; do
      (($(now_s) > $3)) && fail "$1: $task still runs after $LIMIT_S s: $(grep -v '^  ' "$2/${task/:/_}.log" | tail -4)"
      sleep 0.2
    done
    wait "${PIDS[$task]}"
    local rc=$?
    [[ $rc -eq 0 ]] || fail "$1: $task exited $rc: $(grep -v '^  ' "$2/${task/:/_}.log" | tail -6)"
  done
}

# One run of CONFIG in $SCRATCH/NAME; with KILL=1 the chief is SIGKILLed once
# past KILL_AFTER and started again; with KILL=worker1, worker 1 is, after the
# chief's warning that it is silent.
run_cluster() {  # NAME CONFIG KILL
  local name=$1 config=$2 dir="$SCRATCH/$1" ports deadline
  mkdir -p "$dir"
  read -r -a ports <<< "$(free_ports 3)"
  CLUSTER="{\"ps\": [\"127.0.0.1:${ports[0]}\"], \"worker\": [\"127.0.0.1:${ports[1]}\", \"127.0.0.1:${ports[2]}\"]}"
  deadline=$(($(now_s) + LIMIT_S))
  start_task "$config" "$dir" ps 0
  start_task "$config" "$dir" worker 1
  start_task "$config" "$dir" worker 0
  if [[ "$3" != 0 ]]; then
    local at=""
    while [[ -z "$at" ]]; do
      (($(now_s) > deadline)) && fail "$name: the chief never reached step $KILL_AFTER: $(tail -3 "$dir/worker_0.log")"
      alive "${PIDS[worker:0]}" || fail "$name: the chief exited before the kill: $(tail -3 "$dir/worker_0.log")"
      at=$(sed -n 's/^step \([0-9]*\)\/.*/\1/p' "$dir/worker_0.log" | awk -v k=$KILL_AFTER '$1 >= k' | tail -1)
      sleep 0.1
    done
    if [[ "$3" == worker1 ]]; then
      kill -KILL "${PIDS[worker:1]}"
      wait "${PIDS[worker:1]}" 2>/dev/null
      echo "$name: worker 1 SIGKILLed after the chief's step $at"
      local warned=$(($(now_s) + 10))
      until grep -q '^warning: task /job:worker/replica:0/task:1 has not answered for 5s' "$dir/worker_0.log"; do
        (($(now_s) > warned)) && fail "$name: the chief did not warn within 10 s: $(tail -3 "$dir/worker_0.log")"
        sleep 0.2
      done
      start_task "$config" "$dir" worker 1  # the same command again
    else
      kill -KILL "${PIDS[worker:0]}"
      wait "${PIDS[worker:0]}" 2>/dev/null
      KILLED_AT=$at
      echo "$name: the chief SIGKILLed after step $at"
      sleep 1
      start_task "$config" "$dir" worker 0  # the same command again
    fi
  fi
  wait_all "$name" "$dir" "$deadline"
}

# Sync: the uninterrupted run, then the chief killed and restarted.
run_cluster sync_base "$PWD/configs/fashion_mlp_sync.pbtxt" 0
run_cluster sync "$PWD/configs/fashion_mlp_sync.pbtxt" 1
dir="$SCRATCH/sync"
resumed=$(resumed_step "$dir/worker_0.log")
[[ -n "$resumed" ]] || fail "sync: the restarted chief did not resume: $(grep -v '^  ' "$dir/worker_0.log" | tail -5)"
((KILLED_AT - resumed <= EVERY)) || fail "sync: resumed at step $resumed after step $KILLED_AT (> $EVERY steps lost)"
lost=$(grep -m1 '^lost a peer: ' "$dir/worker_1.log")
[[ "$lost" == *"the chief (/job:worker/replica:0/task:0)"* ]] ||
  fail "sync: worker 1 did not say it lost the chief: $(grep -v '^  ' "$dir/worker_1.log" | tail -5)"
[[ $(grep -c '^the chief is ready: training from step' "$dir/worker_1.log") -eq 2 ]] ||
  fail "sync: worker 1 did not rejoin once: $(grep '^the chief is ready' "$dir/worker_1.log")"
grep -q "^the chief is ready: training from step $resumed\$" "$dir/worker_1.log" ||
  fail "sync: worker 1 did not rejoin at the restored step $resumed: $(grep '^the chief is ready' "$dir/worker_1.log")"
for task in worker_0 worker_1; do
  got=$(last_loss "$dir/$task.log" $STEPS)
  want=$(last_loss "$SCRATCH/sync_base/$task.log" $STEPS)
  [[ -n "$got" && "$got" == "$want" ]] || fail "sync: $task's final loss $got differs from the uninterrupted run's $want"
done
echo "sync: resumed at step $resumed; worker 1: ${lost:0:160}"
echo "sync: final losses equal the uninterrupted run's ($(last_loss "$dir/worker_0.log" $STEPS), $(last_loss "$dir/worker_1.log" $STEPS))"

run_cluster async "$PWD/configs/fashion_mlp_async.pbtxt" 1
resumed=$(resumed_step "$SCRATCH/async/worker_0.log")
[[ -n "$resumed" ]] || fail "async: the restarted chief did not resume: $(grep -v '^  ' "$SCRATCH/async/worker_0.log" | tail -5)"
echo "async: resumed at step $resumed; every task exited 0"

run_cluster worker_lost "$PWD/configs/fashion_mlp_sync.pbtxt" worker1
grep -q '^task /job:worker/replica:0/task:1 answers again$' "$SCRATCH/worker_lost/worker_0.log" ||
  fail "worker_lost: the chief did not say worker 1 answers again: $(grep -v '^  ' "$SCRATCH/worker_lost/worker_0.log" | tail -4)"
echo "worker_lost: $(grep -m1 '^warning: task' "$SCRATCH/worker_lost/worker_0.log" | cut -c1-90)...; it answered again; every task exited 0"

# The later cases: a sync cluster of CONFIG in $SCRATCH/NAME on fresh ports,
# every task started; sets dir and deadline.
config="$PWD/configs/fashion_mlp_sync.pbtxt"
FLAGS="$FLAGS --set train.steps=100000"
start_cluster() {  # NAME
  dir="$SCRATCH/$1"
  mkdir -p "$dir"
  local ports
  read -r -a ports <<< "$(free_ports 3)"
  CLUSTER="{\"ps\": [\"127.0.0.1:${ports[0]}\"], \"worker\": [\"127.0.0.1:${ports[1]}\", \"127.0.0.1:${ports[2]}\"]}"
  start_task "$config" "$dir" ps 0
  start_task "$config" "$dir" worker 1
  start_task "$config" "$dir" worker 0
  deadline=$(($(now_s) + LIMIT_S))
}

# Waits (bounded by the deadline) for a progress line in TASK's log.
await_progress() {  # NAME TASK_FILE
  until grep -q '^step [0-9]*/' "$dir/$2.log" 2>/dev/null; do
    (($(now_s) > deadline)) && fail "$1: no progress: $(tail -3 "$dir/$2.log")"
    sleep 0.1
  done
}

# Waits until each TASK has exited, at most LIMIT s after `since`; each must exit CODE.
expect_exits() {  # NAME CODE SINCE LIMIT TASK...
  local name=$1 code=$2 since=$3 limit=$4 task rc
  shift 4
  for task in "$@"; do
    while alive "${PIDS[$task]}"; do
      (($(now_s) - since > limit)) &&
        fail "$name: $task still runs $limit s later: $(grep -v '^  ' "$dir/${task/:/_}.log" | tail -3)"
      sleep 0.2
    done
    wait "${PIDS[$task]}"
    rc=$?
    [[ $rc -eq $code ]] || fail "$name: $task exited $rc, not $code: $(grep -v '^  ' "$dir/${task/:/_}.log" | tail -4)"
  done
}

# The chief's last checkpoint step, or fail.
saved_step() {  # NAME
  local saved
  saved=$(sed -n 's|^saved .*/ckpt-\([0-9]*\)$|\1|p' "$dir/worker_0.log" | tail -1)
  [[ -n "$saved" ]] || fail "$1: the chief saved no checkpoint: $(grep -v '^  ' "$dir/worker_0.log" | tail -4)"
  echo "$saved"
}

# SIGTERM to a chief whose sync step waits for a dead worker: within 25 s it
# abandons the step, checkpoints and exits 143; the ps exits with it (143).
start_cluster term_stuck
await_progress term_stuck worker_0
kill -KILL "${PIDS[worker:1]}"
wait "${PIDS[worker:1]}" 2>/dev/null
sleep 2
kill -TERM "${PIDS[worker:0]}"
termed=$(now_s)
expect_exits term_stuck 143 "$termed" 25 worker:0
saved=$(saved_step term_stuck) || exit 1
expect_exits term_stuck 143 "$termed" 40 ps:0
echo "term_stuck: the chief exited 143 after $(($(now_s) - termed)) s or less, checkpoint at step $saved; the ps stopped (143)"

# SIGTERM to the chief alone of a healthy sync run (a scheduler preempting
# its node): it checkpoints and exits 143, and tells the others so; they exit
# 143 too, so that a scheduler sees on every task a run to resume, not one done.
start_cluster term_chief
await_progress term_chief worker_1
kill -TERM "${PIDS[worker:0]}"
expect_exits term_chief 143 "$(now_s)" "$LIMIT_S" worker:0 worker:1 ps:0
grep -q '^stopped by the chief at step [0-9]*: the chief was stopped by a signal (exit 143)$' "$dir/worker_1.log" ||
  fail "term_chief: worker 1 did not say why it stopped: $(grep -v '^  ' "$dir/worker_1.log" | tail -3)"
echo "term_chief: every task exited 143; worker 1: $(grep '^stopped by the chief' "$dir/worker_1.log")"

# SIGTERM to the ps alone (its node is being preempted): it tells the chief in
# GetStatus, and the chief stops the run at its next step with a checkpoint;
# every task exits 143 within a few seconds, not after the ps's 30 s grace.
start_cluster term_ps
await_progress term_ps worker_0
kill -TERM "${PIDS[ps:0]}"
termed=$(now_s)
expect_exits term_ps 143 "$termed" 20 worker:0 worker:1 ps:0
grep -q '^task /job:ps/replica:0/task:0 got a stop signal: stopping the run after this step' "$dir/worker_0.log" ||
  fail "term_ps: the chief did not say why it stopped: $(grep -v '^  ' "$dir/worker_0.log" | tail -3)"
saved=$(saved_step term_ps) || exit 1
echo "term_ps: every task exited 143 within $(($(now_s) - termed)) s; the chief checkpointed at step $saved"

# The ps SIGKILLed and started again, then SIGKILLed again, with
# cluster.max_recoveries=1: the chief recovers once, then gives up (129,
# retryable); worker 1 exits 129 too.
FLAGS="$FLAGS --set cluster.max_recoveries=1"
start_cluster give_up
for round in 1 2; do
  # Training (again) after the previous round's recovery.
  until [[ $(grep -c '^the chief is ready: training from step' "$dir/worker_1.log" 2>/dev/null) -ge $round ]]; do
    (($(now_s) > deadline)) && fail "give_up: worker 1 is not training (round $round): $(grep -v '^  ' "$dir/worker_1.log" | tail -3)"
    sleep 0.1
  done
  sleep 1
  kill -KILL "${PIDS[ps:0]}"
  wait "${PIDS[ps:0]}" 2>/dev/null
  [[ $round == 2 ]] && break  # the chief gives up at once: no ps to start again
  start_task "$config" "$dir" ps 0
done
expect_exits give_up 129 "$(now_s)" "$LIMIT_S" worker:0 worker:1
grep -q 'giving up after 1 recoveries' "$dir/worker_0.log" || fail "give_up: the chief did not give up: $(tail -3 "$dir/worker_0.log")"
grep -q '^stopped by the chief at step [0-9]*: the chief gave up after 1 recoveries: .* (exit 129)$\|stopping: the chief gave up after 1 recoveries: .* (exit 129)$' "$dir/worker_1.log" ||
  fail "give_up: worker 1 did not say why it stopped: $(grep -v '^  ' "$dir/worker_1.log" | tail -3)"
echo "give_up: the chief gave up after 1 recovery; the chief and worker 1 exited 129"
echo PASS
