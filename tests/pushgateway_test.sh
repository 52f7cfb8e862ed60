#!/bin/bash
# At the end of a completed run, `train` pushes its metrics to a real Pushgateway (Debian's
# /usr/bin/prometheus-pushgateway on 127.0.0.1, monitoring.pushgateway_url): the gateway then
# serves sluice_train_steps_total = the run's steps and the run's success time and duration
# under the grouping key job="worker", task="0". A bad URL is a config error (exit 2) and an
# unreachable gateway only a warning (exit 0).
set -u
source "$TEST_SRCDIR/sluice/tests/monitoring_testlib.sh"
command -v prometheus-pushgateway >/dev/null || fail "prometheus-pushgateway is missing (Debian package)"

gw_port=$(free_port)
start_bg "$TEST_TMPDIR/pushgateway.log" prometheus-pushgateway --web.listen-address="127.0.0.1:$gw_port"
wait_for 60 "the pushgateway to be ready" curl -sf --max-time 2 "http://127.0.0.1:$gw_port/-/ready"

run_train() {  # run_train RUN_DIR LOG ARGS...
  local dir="$1" log="$2"
  shift 2
  "$TRAIN" "$CONFIGS/fashion_mlp.pbtxt" --run_dir "$dir" "${FAST_INPUT[@]}" --set train.steps=20 \
    --set train.eval_every_steps=0 --set monitoring.metrics_port=-1 "$@" >"$log" 2>&1
}
start=$(date +%s)
run_train "$TEST_TMPDIR/run" "$TEST_TMPDIR/train.log" \
  --set monitoring.pushgateway_url="http://127.0.0.1:$gw_port" || fail "train failed: $(cat "$TEST_TMPDIR/train.log")"
grep -q "metrics: pushed to http://127.0.0.1:$gw_port" "$TEST_TMPDIR/train.log" \
  || fail "no push reported: $(cat "$TEST_TMPDIR/train.log")"

page=$(curl -s --max-time 5 "http://127.0.0.1:$gw_port/metrics")
echo "$page" | grep -E '^sluice_' | grep -v bucket
steps=$(echo "$page" | grep -E '^sluice_train_steps_total\{' | grep 'job="worker"' | grep 'task="0"' | awk '{print $2}')
[[ "$steps" == 20 ]] || fail "sluice_train_steps_total on the gateway is '$steps', want 20"
ts=$(echo "$page" | grep -E '^sluice_run_last_success_timestamp_seconds\{' | awk '{print $2}')
awk -v v="$ts" -v s="$start" -v now="$(date +%s)" 'BEGIN { exit !(v + 0 >= s - 1 && v + 0 <= now + 1) }' \
  || fail "last success timestamp '$ts' is not within the run"
dur=$(echo "$page" | grep -E '^sluice_run_duration_seconds\{' | awk '{print $2}')
awk -v v="$dur" 'BEGIN { exit !(v + 0 > 0 && v + 0 < 600) }' || fail "run duration '$dur'"
echo "$page" | grep -qE '^push_time_seconds\{.*job="worker"' || fail "the gateway recorded no push for job worker"

# A malformed URL is a config error naming the field.
run_train "$TEST_TMPDIR/run_bad" "$TEST_TMPDIR/bad.log" --set monitoring.pushgateway_url="ftp://x:1"
rc=$?
[[ $rc -eq 2 ]] || fail "a bad pushgateway_url should exit 2, got $rc"
grep -q "pushgateway_url" "$TEST_TMPDIR/bad.log" || fail "the error should name pushgateway_url: $(cat "$TEST_TMPDIR/bad.log")"

# Nothing listening: the run still succeeds, with a warning.
dead_port=$(free_port)
run_train "$TEST_TMPDIR/run_dead" "$TEST_TMPDIR/dead.log" --set monitoring.pushgateway_url="127.0.0.1:$dead_port" \
  || fail "an unreachable gateway must not fail the run: $(cat "$TEST_TMPDIR/dead.log")"
grep -q "warning: pushing metrics" "$TEST_TMPDIR/dead.log" || fail "no warning: $(cat "$TEST_TMPDIR/dead.log")"
echo "PASS"
