#!/bin/bash
# During training, `curl -s 127.0.0.1:PORT/metrics | promtool check metrics` exits 0 (promtool
# from Debian's prometheus package), the page has every sluice_ metric of monitoring/metrics.h
# with only job and task labels, the evaluations' values appear by name, and SIGTERM still ends
# the run with a checkpoint (exit 143).
set -u
source "$TEST_SRCDIR/sluice/tests/monitoring_testlib.sh"
command -v promtool >/dev/null || fail "promtool is missing (Debian package prometheus; tools/setup.sh installs it)"
command -v curl >/dev/null || fail "curl is missing"

start_training_with_metrics --set train.eval_every_steps=100
page="$TEST_TMPDIR/metrics.txt"
curl -s --max-time 10 "$METRICS" >"$page" || fail "curl $METRICS failed"
promtool check metrics <"$page" >"$TEST_TMPDIR/promtool.txt" 2>&1 \
  || fail "promtool check metrics: $(cat "$TEST_TMPDIR/promtool.txt")"
# The same as a pipe, as an operator would type it.
curl -s --max-time 10 "$METRICS" | promtool check metrics || fail "curl | promtool check metrics failed"

for m in sluice_train_steps_total sluice_train_examples_total sluice_step_duration_seconds_bucket \
  sluice_step_duration_seconds_count sluice_loss sluice_learning_rate sluice_input_queue_size \
  sluice_input_queue_capacity sluice_checkpoint_save_duration_seconds_count sluice_build_info \
  sluice_global_step sluice_last_step; do
  grep -qE "^$m\{" "$page" || fail "$m is missing from /metrics:
$(cat "$page")"
done
# Labels: role and task only (plus le on buckets, version on build_info, name on the evaluation's
# values); never job or instance, which Prometheus sets itself.
bad=$(grep -E '^sluice_' "$page" | grep -oE '[a-z_]+="' | sort -u | grep -vE '^(role|task|le|version|name)="$' || true)
[[ -z "$bad" ]] || fail "unexpected labels: $bad"
grep -qE '^sluice_train_steps_total\{role="worker",task="0"\} ' "$page" || fail "no role/task labels on steps"
[[ "$(sample_value sluice_input_queue_capacity <"$page")" == 2000 ]] || fail "queue capacity is not 2000"
# The run's progress: a global step in (0, last step], the last step train.steps (1000000).
step=$(sample_value sluice_global_step <"$page")
last=$(sample_value sluice_last_step <"$page")
awk -v s="$step" -v l="$last" 'BEGIN { exit !(s > 0 && s <= l && l == 1000000) }' || fail "global step $step, last step $last"
loss=$(sample_value sluice_loss <"$page")
awk -v v="$loss" 'BEGIN { exit !(v > 0 && v < 10) }' || fail "loss gauge $loss"

# A checkpoint every 50 steps: its duration and success time reach the page.
ckpt_seen() {
  local v
  v=$(curl -s --max-time 5 "$METRICS" | sample_value sluice_checkpoint_save_duration_seconds_count)
  [[ -n "$v" ]] && awk -v v="$v" 'BEGIN { exit !(v >= 1) }'
}
wait_for 120 "a checkpoint save in the metrics" ckpt_seen
# (The success time is exported from the first checkpoint on: a 0 would read as 1970.)
ts=$(curl -s --max-time 5 "$METRICS" | sample_value sluice_checkpoint_last_success_timestamp_seconds)
awk -v v="$ts" -v now="$(date +%s)" 'BEGIN { exit !(v > now - 600 && v <= now + 5) }' \
  || fail "last checkpoint success timestamp $ts is not recent"

# An evaluation every 100 steps: its values by name and its step reach the page.
eval_seen() { curl -s --max-time 5 "$METRICS" | grep -qE '^sluice_eval_value\{name="accuracy",role="worker",task="0"\} '; }
wait_for 120 "an evaluation in the metrics" eval_seen
page2="$TEST_TMPDIR/metrics2.txt"
curl -s --max-time 10 "$METRICS" >"$page2" || fail "curl $METRICS failed"
acc=$(grep -E '^sluice_eval_value\{name="accuracy",' "$page2" | awk '{ print $2 }')
at=$(sample_value sluice_eval_step <"$page2")
awk -v a="$acc" -v s="$at" 'BEGIN { exit !(a > 0 && a <= 1 && s >= 100 && s % 100 == 0) }' \
  || fail "evaluation metrics: accuracy '$acc' at step '$at'"
grep -qE '^sluice_eval_value\{name="loss",' "$page2" || fail "no evaluation loss in the metrics"
promtool check metrics <"$page2" >"$TEST_TMPDIR/promtool2.txt" 2>&1 \
  || fail "promtool check metrics with evaluations: $(cat "$TEST_TMPDIR/promtool2.txt")"

kill -TERM "$TRAIN_PID"
wait "$TRAIN_PID"
rc=$?
[[ $rc -eq 143 ]] || fail "train should exit 143 after SIGTERM, got $rc: $(tail -5 "$TEST_TMPDIR/train.log")"
echo "PASS"
