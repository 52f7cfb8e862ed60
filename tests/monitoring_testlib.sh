# Shell helpers for the monitoring tests (issue 7), sourced by tests/*_test.sh: start `train`
# (and servers) in the background on 127.0.0.1, wait for what they print or serve, and stop
# every process the test started (by pid, on exit) so no test leaves anything running.
# Expects Bazel's test environment (TEST_SRCDIR, TEST_TMPDIR).

TRAIN="$TEST_SRCDIR/sluice/cmd/train/train"
CONFIGS="$TEST_SRCDIR/sluice/configs"
# A small shuffle buffer: runs start in a second instead of filling 10,000 examples first.
FAST_INPUT=(--set input.train.shuffle.capacity=2000 --set input.train.shuffle.min_after_dequeue=500)
STARTED_PIDS=()

fail() {
  echo "FAIL: $*"
  exit 1
}

# Stops every process this test started: SIGTERM, up to 10 s of grace, then SIGKILL.
stop_started() {
  local pid i
  for pid in "${STARTED_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${STARTED_PIDS[@]}"; do
    for i in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  STARTED_PIDS=()
}
trap stop_started EXIT

# A TCP port on 127.0.0.1 that is free now, below the ephemeral range (tests/free_ports.py).
free_port() {
  python3 tests/free_ports.py 1
}

# start_bg LOG CMD...: runs CMD in the background with output in LOG; sets BG_PID.
start_bg() {
  local log="$1"
  shift
  "$@" >"$log" 2>&1 &
  BG_PID=$!
  STARTED_PIDS+=("$BG_PID")
}

# wait_for SECONDS DESCRIPTION CMD...: polls CMD every 0.2 s until it succeeds.
wait_for() {
  local seconds="$1" what="$2"
  shift 2
  local deadline=$((SECONDS + seconds))
  while ((SECONDS < deadline)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  fail "timed out after ${seconds}s waiting for $what"
}

# metrics_url LOG: the URL `train` printed ("metrics: http://127.0.0.1:PORT/metrics").
metrics_url() {
  grep -o 'metrics: http://[0-9.]*:[0-9]*/metrics' "$1" | head -1 | sed 's/^metrics: //'
}

# The value of the first sample of METRIC in the exposition text on stdin ("" if none).
sample_value() {
  grep -E "^$1(\{[^}]*\})? " | head -1 | awk '{print $2}'
}

# A long training run serving /metrics on 127.0.0.1 (port 0: any free port); sets TRAIN_PID
# and METRICS (the URL), once /metrics reports at least one step.
start_training_with_metrics() {
  local log="$TEST_TMPDIR/train.log"
  start_bg "$log" "$TRAIN" "$CONFIGS/fashion_mlp.pbtxt" --run_dir "$TEST_TMPDIR/run" "${FAST_INPUT[@]}" \
    --set train.steps=1000000 --set train.eval_every_steps=0 --set checkpoint.every_steps=50 \
    --set monitoring.metrics_port=0 --set monitoring.metrics_address=127.0.0.1 "$@"
  TRAIN_PID=$BG_PID
  wait_for 120 "train to print its metrics URL" grep -q 'metrics: http://' "$log"
  METRICS=$(metrics_url "$log")
  [[ "$METRICS" == http://127.0.0.1:* ]] || fail "unexpected metrics URL '$METRICS': $(cat "$log")"
  steps_positive() {
    local v
    v=$(curl -s --max-time 5 "$METRICS" | sample_value sluice_train_steps_total)
    [[ -n "$v" ]] && awk -v v="$v" 'BEGIN { exit !(v > 0) }'
  }
  wait_for 120 "sluice_train_steps_total > 0 at $METRICS" steps_positive
}
