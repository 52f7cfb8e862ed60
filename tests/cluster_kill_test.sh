#!/usr/bin/env bash
# A task of a cluster dies while the chief trains (DESIGN.md "Distribution": a
# lost task aborts the step everywhere; the run recovers by a restart, so the
# chief's exit code is retryable). The test starts every task itself, each a
# `train` process on its own free 127.0.0.1 port with its TF_CONFIG, so it owns
# every PID; it waits for the chief's first progress line, then SIGKILLs one
# task and checks that nobody hangs:
#
#   * a non-chief task killed (the ps of ps=1,worker=1; worker 1 of
#     ps=1,worker=2): the chief exits within 5 s with 129 (retryable) and an
#     error naming the killed task; a surviving non-chief task exits with the
#     chief's 129 when the chief tells it to stop ("stopping: the chief
#     failed: ... (exit 129)").
#   * the chief killed (both clusters, in copies of their configs where the
#     chief holds only the input): every surviving task logs, within 5 s,
#     that its pending step failed (a RecvTensor from the chief failed, or
#     the chief's RunGraph call was cancelled), naming the chief, and then
#     serves on, as TensorFlow's tasks do, until the (restarted) chief tells it
#     to stop; it still answers SIGTERM with 143 within 5 s.
#   * a non-chief task frozen (SIGSTOP): the chief exits 129 within 10 s
#     (keepalive), naming it.
#
# With the argument `between_steps` (target cluster_kill_between_steps_test,
# manual): only the ps killed while the chief checkpoints after every step.
#
# Every wait is bounded: a hang fails the test.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

MLP1="$PWD/configs/fashion_mlp_cluster.pbtxt"   # fc1 on worker 0, fc2 + logits on ps 0
MLP2="$PWD/configs/fashion_mlp_2workers.pbtxt"  # fc1 on worker 0, fc2 on worker 1, logits on ps 0
# Many steps (never reached); no checkpoint, summary or evaluation in the way.
FLAGS="--set train.steps=1000000 --set train.deterministic=true --set train.eval_every_steps=0
  --set train.log_every_steps=5 --set checkpoint.every_steps=1000000 --set summaries.every_steps=0
  --set monitoring.metrics_port=-1"
EXTRA_FLAGS=""
START_LIMIT_S=90  # start-up to the first progress line, on a loaded 2-core machine
EXIT_LIMIT_S=5    # the issue's bound on noticing a dead peer

now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((t / 1000)); }

# Alive and not a zombie (bash reaps its children in the background, but a
# zombie would answer kill -0).
alive() { [[ -e /proc/$1 ]] && ! grep -q '^[0-9]* (.*) Z ' "/proc/$1/stat" 2>/dev/null; }

# Waits up to LIMIT_MS for PID to exit; sets EXIT_CODE (empty if still alive)
# and WAITED_MS.
wait_exit() {  # PID LIMIT_MS SINCE_MS
  local pid=$1 limit=$2 since=$3
  EXIT_CODE=""
  while alive "$pid"; do
    if (($(now_ms) - since > limit)); then
      WAITED_MS=$(($(now_ms) - since))
      return 1
    fi
    sleep 0.05
  done
  WAITED_MS=$(($(now_ms) - since))
  wait "$pid"
  EXIT_CODE=$?
  return 0
}

# Waits up to LIMIT_MS (from SINCE_MS) for a line of LOG matching the
# extended regexp.
wait_line() {  # LOG REGEX LIMIT_MS SINCE_MS
  while ! grep -Eq "$2" "$1" 2>/dev/null; do
    (($(now_ms) - $4 > $3)) && return 1
    sleep 0.05
  done
}

# Starts the cluster "ps:0 worker:0 [worker:1]" for CONFIG in DIR; sets
# PIDS[task] and LOGS[task].
declare -A PIDS LOGS
start_cluster() {  # CONFIG DIR WORKERS
  local config=$1 dir=$2 workers=$3 ports
  mkdir -p "$dir"
  read -r -a ports <<< "$(free_ports $((workers + 1)))"
  local worker_list="\"127.0.0.1:${ports[1]}\"" i
  for ((i = 1; i < workers; ++i)); do worker_list+=", \"127.0.0.1:${ports[i + 1]}\""; done
  local cluster="{\"ps\": [\"127.0.0.1:${ports[0]}\"], \"worker\": [$worker_list]}"
  PIDS=()
  LOGS=()
  local task job index
  for task in ps:0 $(for ((i = 0; i < workers; ++i)); do echo "worker:$i"; done); do
    job=${task%%:*}
    index=${task##*:}
    LOGS[$task]="$dir/${job}_$index.log"
    # shellcheck disable=SC2086
    TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"$job\", \"index\": $index}}" \
      "$TRAIN" "$config" $FLAGS $EXTRA_FLAGS --run_dir "$dir/run" > "${LOGS[$task]}" 2>&1 &
    PIDS[$task]=$!
    BACKGROUND_PIDS+=($!)
  done
  local t0
  t0=$(now_ms)
  wait_line "${LOGS[worker:0]}" '^step [0-9]+/' $((START_LIMIT_S * 1000)) "$t0" ||
    fail "$dir: no progress line within $START_LIMIT_S s: $(tail -n 4 "${LOGS[worker:0]}")"
  for task in "${!PIDS[@]}"; do
    alive "${PIDS[$task]}" || fail "$dir: $task is not running at the first progress line: $(tail -n 3 "${LOGS[$task]}")"
  done
}

full_name() { echo "/job:${1%%:*}/replica:0/task:${1##*:}"; }

# A non-chief task dies: the chief notices at once, says who, and exits
# retryable; the others stop when the chief tells them to.
kill_non_chief() {  # NAME CONFIG WORKERS VICTIM
  local name=$1 victim=$4 dir="$SCRATCH/$1"
  start_cluster "$2" "$dir" "$3"
  local killed_at
  [[ -n "${KILL_DELAY:-}" ]] && sleep "$KILL_DELAY"
  kill -9 "${PIDS[$victim]}"
  killed_at=$(now_ms)
  wait_exit "${PIDS[worker:0]}" $((EXIT_LIMIT_S * 1000)) "$killed_at" ||
    fail "$name: the chief still runs $EXIT_LIMIT_S s after $victim was killed: $(tail -n 3 "${LOGS[worker:0]}")"
  local chief_log="${LOGS[worker:0]}"
  echo "$name: $victim killed; the chief exited $EXIT_CODE after $WAITED_MS ms"
  echo "  $(grep -m1 '^error' "$chief_log")"
  [[ $EXIT_CODE -eq 129 ]] || fail "$name: the chief exited $EXIT_CODE, not 129 (retryable): $(tail -n 3 "$chief_log")"
  grep -q "^error at step [0-9]*: .*$(full_name "$victim")" "$chief_log" ||
    fail "$name: the chief's error does not name $(full_name "$victim"): $(grep '^error' "$chief_log")"
  # The killed task's own exit: SIGKILL.
  wait_exit "${PIDS[$victim]}" 5000 "$killed_at" || fail "$name: $victim survived SIGKILL"
  [[ $EXIT_CODE -eq 137 ]] || fail "$name: $victim exited $EXIT_CODE after SIGKILL"
  local task
  for task in "${!PIDS[@]}"; do
    [[ $task == worker:0 || $task == "$victim" ]] && continue
    wait_exit "${PIDS[$task]}" 10000 "$killed_at" ||
      fail "$name: $task still runs 10 s after $victim was killed: $(tail -n 3 "${LOGS[$task]}")"
    echo "$name: surviving $task exited $EXIT_CODE after $WAITED_MS ms"
    [[ $EXIT_CODE -eq 129 ]] || fail "$name: $task exited $EXIT_CODE, not the chief's 129: $(tail -n 3 "${LOGS[$task]}")"
    grep -q "^task $(full_name "$task") stopping: the chief" "${LOGS[$task]}" ||
      fail "$name: $task did not stop on the chief's word: $(tail -n 3 "${LOGS[$task]}")"
  done
}

# A copy of CONFIG in which the chief keeps only the input (and global_step):
# the layers the chief held move to the other tasks, so that they, not the
# chief, run the end of every step and a step is pending on them for most of
# it. With the chief holding fc1 (the largest layer's gradient and update run
# last), worker 1 of MLP2 had nothing pending at half the kills on a loaded
# machine, and at five kills in a row in CI.
chief_light_config() {  # CONFIG NEW_FC1_DEVICE NEW_FC2_DEVICE OUT
  sed -e "s#\(name: \"fc1\" input: \"flat\" device: \)\"[^\"]*\"#\1\"$2\"#" \
      -e "s#\(name: \"fc2\" input: \"fc1\" device: \)\"[^\"]*\"#\1\"$3\"#" "$1" > "$4"
  grep -q "name: \"fc1\" input: \"flat\" device: \"$2\"" "$4" &&
    grep -q "name: \"fc2\" input: \"fc1\" device: \"$3\"" "$4" ||
    fail "could not move fc1 and fc2 off the chief in $1"
  if grep -q 'layer {.*device: "/job:worker/task:0"' "$4"; then fail "$4 still places a layer on the chief"; fi
}

# The chief dies: every other task's pending step fails on its RecvTensor from
# the chief within 5 s; the task then serves on until told to stop. A task
# whose part of the step had already finished when the chief died (the chief
# was between steps) has nothing pending and nothing to log: with the chief
# holding only the input that is about one kill in four on a machine loaded
# with two CPU hogs, so the kill is repeated (up to 12 times, after a random
# delay) until every surviving task has logged its failed step in some attempt.
kill_chief() {  # NAME CONFIG WORKERS
  local name=$1 attempt attempts=12
  declare -gA LOGGED=()
  for ((attempt = 1; attempt <= attempts; ++attempt)); do
    KILL_DELAY=0.$((RANDOM % 10)) kill_chief_once "$name" "$2" "$3" "$SCRATCH/$name.$attempt" && return
    echo "$name: attempt $attempt: no step was pending on $MISSING when the chief died; again"
  done
  fail "$name: in $attempts attempts, $MISSING never logged a failed step naming the chief"
}

# Returns 1 when a surviving task has not yet logged a failed step in time, in
# this attempt or an earlier one (LOGGED); MISSING says which.
kill_chief_once() {  # NAME CONFIG WORKERS DIR
  local name=$1 dir=$4
  start_cluster "$2" "$dir" "$3"
  local killed_at task
  [[ -n "${KILL_DELAY:-}" ]] && sleep "$KILL_DELAY"
  kill -9 "${PIDS[worker:0]}"
  killed_at=$(now_ms)
  wait_exit "${PIDS[worker:0]}" 5000 "$killed_at" || fail "$name: the chief survived SIGKILL"
  local chief=/job:worker/replica:0/task:0
  MISSING=""
  for task in "${!PIDS[@]}"; do
    [[ $task == worker:0 || -n "${LOGGED[$task]:-}" ]] && continue
    local log="${LOGS[$task]}" full
    full=$(full_name "$task")
    # A RecvTensor from the chief, by this task or (for a task that waited on
    # another survivor) by the task it waited on.
    if ! wait_line "$log" "^a step of $chief failed on $full: .*(RecvTensor from $chief \(127\.0\.0\.1:[0-9]+\) failed|was cancelled: $chief went away)" \
      $((EXIT_LIMIT_S * 1000)) "$killed_at"; then
      MISSING+="$task "
      continue
    fi
    LOGGED[$task]=1
    echo "$name: chief killed; $task logged its failed step after $(($(now_ms) - killed_at)) ms or less"
    echo "  $(grep -m1 "^a step of $chief failed on $full" "$log" | cut -c1-300)"
  done
  # They serve on (by design: the chief's Shutdown, or a signal, stops them).
  sleep 1
  for task in "${!PIDS[@]}"; do
    [[ $task == worker:0 ]] && continue
    alive "${PIDS[$task]}" || fail "$name: $task exited by itself after the chief died (serving until told is the design)"
    if grep -q "stopping:" "${LOGS[$task]}"; then fail "$name: $task says it stops: $(tail -n 2 "${LOGS[$task]}")"; fi
    local term_at
    kill -TERM "${PIDS[$task]}"
    term_at=$(now_ms)
    wait_exit "${PIDS[$task]}" 5000 "$term_at" || fail "$name: $task still runs 5 s after SIGTERM"
    echo "$name: $task exited $EXIT_CODE on SIGTERM after $WAITED_MS ms"
    [[ $EXIT_CODE -eq 143 ]] || fail "$name: $task exited $EXIT_CODE on SIGTERM, not 143"
    grep -q "^task $(full_name "$task") stopped by a signal" "${LOGS[$task]}" ||
      fail "$name: $task did not say it stopped by a signal: $(tail -n 2 "${LOGS[$task]}")"
  done
  [[ -z "$MISSING" ]]
}

# A task that freezes (SIGSTOP: a hung machine, a dropped network) closes no
# socket: the chief's keepalive pings (2 s, then 2 s for the answer) notice.
freeze_non_chief() {  # NAME CONFIG WORKERS VICTIM
  local name=$1 victim=$4 dir="$SCRATCH/$1"
  start_cluster "$2" "$dir" "$3"
  local stopped_at limit_s=10
  kill -STOP "${PIDS[$victim]}"
  stopped_at=$(now_ms)
  wait_exit "${PIDS[worker:0]}" $((limit_s * 1000)) "$stopped_at" ||
    fail "$name: the chief still runs $limit_s s after $victim froze: $(tail -n 3 "${LOGS[worker:0]}")"
  echo "$name: $victim frozen; the chief exited $EXIT_CODE after $WAITED_MS ms"
  echo "  $(grep -m1 '^error' "${LOGS[worker:0]}")"
  [[ $EXIT_CODE -eq 129 ]] || fail "$name: the chief exited $EXIT_CODE, not 129: $(tail -n 3 "${LOGS[worker:0]}")"
  grep -q "^error at step [0-9]*: .*$(full_name "$victim")" "${LOGS[worker:0]}" ||
    fail "$name: the chief's error does not name $(full_name "$victim"): $(grep '^error' "${LOGS[worker:0]}")"
  kill -9 "${PIDS[$victim]}"
}

if [[ "${1:-}" == between_steps ]]; then
  # A task lost while the chief is between two steps (here: writing the
  # checkpoint it saves after every step), so that no call to that task is in
  # flight: the chief's next step must still fail, not wait for the task.
  # Known to hang today (a step's RPCs wait for the channel to be ready, and
  # nothing cancels them): the BUILD target is manual until that is fixed.
  EXTRA_FLAGS="--set checkpoint.every_steps=1 --set checkpoint.keep=1"
  for attempt in 1 2 3 4 5; do
    KILL_DELAY=0.$((RANDOM % 10)) kill_non_chief "between_steps_$attempt" "$MLP1" 1 ps:0
  done
  echo "PASS"
  exit 0
fi

kill_non_chief ps1_worker1_kill_ps "$MLP1" 1 ps:0
kill_non_chief ps1_worker2_kill_worker1 "$MLP2" 2 worker:1
chief_light_config "$MLP1" /job:ps/task:0 /job:ps/task:0 "$SCRATCH/mlp1_chief_light.pbtxt"
chief_light_config "$MLP2" /job:worker/task:1 /job:ps/task:0 "$SCRATCH/mlp2_chief_light.pbtxt"
kill_chief ps1_worker1_kill_chief "$SCRATCH/mlp1_chief_light.pbtxt" 1
kill_chief ps1_worker2_kill_chief "$SCRATCH/mlp2_chief_light.pbtxt" 2
freeze_non_chief ps1_worker1_freeze_ps "$MLP1" 1 ps:0
echo "PASS"
