#!/bin/bash
# A real Prometheus server (Debian's /usr/bin/prometheus) on 127.0.0.1 scrapes a training run's
# /metrics every second; its query API then returns sluice_train_steps_total > 0 for the
# series labelled by the trainer (job/task; Prometheus keeps the target's own job label as
# exported_job).
set -u
source "$TEST_SRCDIR/sluice/tests/monitoring_testlib.sh"
command -v prometheus >/dev/null || fail "prometheus is missing (Debian package prometheus)"

start_training_with_metrics
target=${METRICS#http://}
target=${target%/metrics}

prom_port=$(free_port)
cat >"$TEST_TMPDIR/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: sluice_train
    static_configs:
      - targets: ['$target']
YAML
start_bg "$TEST_TMPDIR/prometheus.log" prometheus --config.file="$TEST_TMPDIR/prometheus.yml" \
  --storage.tsdb.path="$TEST_TMPDIR/tsdb" --web.listen-address="127.0.0.1:$prom_port"
PROM_PID=$BG_PID
api="http://127.0.0.1:$prom_port/api/v1"
wait_for 60 "prometheus to be ready" curl -sf --max-time 2 "http://127.0.0.1:$prom_port/-/ready"

steps_queried() {
  kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus exited: $(tail -20 "$TEST_TMPDIR/prometheus.log")"
  local body value
  body=$(curl -s --max-time 5 "$api/query?query=sluice_train_steps_total")
  echo "$body" >"$TEST_TMPDIR/query.json"
  # {"status":"success","data":{"resultType":"vector","result":[{"metric":{...},"value":[T,"N"]}]}}
  value=$(echo "$body" | grep -o '"value":\[[0-9.]*,"[0-9.e+]*"\]' | head -1 | sed 's/.*,"\(.*\)"\]/\1/')
  [[ -n "$value" ]] && awk -v v="$value" 'BEGIN { exit !(v > 0) }'
}
wait_for 90 "Prometheus to return sluice_train_steps_total > 0" steps_queried
body=$(cat "$TEST_TMPDIR/query.json")
echo "query result: $body"
[[ "$body" == *'"status":"success"'* ]] || fail "query failed: $body"
[[ "$body" == *'"task":"0"'* ]] || fail "no task label: $body"
[[ "$body" == *'"instance":"'"$target"'"'* ]] || fail "not from the train target: $body"
# The scrape is healthy.
up=$(curl -s --max-time 5 "$api/query?query=up")
[[ "$up" == *'"value":['*',"1"]'* ]] || fail "target not up: $up"
echo "PASS"
