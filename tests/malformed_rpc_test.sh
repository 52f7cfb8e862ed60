#!/usr/bin/env bash
# A real task's worker service against malformed and hostile requests
# (DESIGN.md: "a config, a graph, a data file, a checkpoint or an RPC payload
# never crashes the process"). The test starts a ps task of a two-task cluster
# whose chief never comes, so the ps serves while it waits for its peer; then
# malformed_rpc_client sends it every case (tests/malformed_rpc_client.cc) and
# checks each answer and that GetStatus still answers after each (and then
# sends garbage frames to the task's TCP tensor transport, at the address its
# GetStatus announces: each must drop only that connection). At the end
# the task must still run, must not have stopped or crashed, and must stop on
# SIGTERM with 143 (a task waiting for its peers stops on a signal).
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

CLIENT="$PWD/tests/malformed_rpc_client"
read -r PS_PORT CHIEF_PORT <<< "$(free_ports 2)"
TASK=/job:ps/replica:0/task:0
LOG="$SCRATCH/ps.log"

TF_CONFIG="{\"cluster\": {\"ps\": [\"127.0.0.1:$PS_PORT\"], \"worker\": [\"127.0.0.1:$CHIEF_PORT\"]},
            \"task\": {\"type\": \"ps\", \"index\": 0}}" \
  "$TRAIN" "$PWD/configs/fashion_mlp_cluster.pbtxt" --set train.deterministic=true \
  --set monitoring.metrics_port=-1 --run_dir "$SCRATCH/run" > "$LOG" 2>&1 &
PS_PID=$!
BACKGROUND_PIDS+=($PS_PID)

for _ in $(seq 600); do
  grep -q "^task $TASK serving on port $PS_PORT; waiting for every task$" "$LOG" && break
  kill -0 $PS_PID 2>/dev/null || fail "the ps exited at start: $(tail -n 5 "$LOG")"
  sleep 0.1
done
grep -q "serving on port $PS_PORT" "$LOG" || fail "the ps does not serve after 60 s: $(tail -n 5 "$LOG")"

start=$SECONDS
timeout -k 5 240 "$CLIENT" --address "127.0.0.1:$PS_PORT" --task "$TASK" > "$SCRATCH/client.log" 2>&1
rc=$?
cat "$SCRATCH/client.log"
echo "client exited $rc after $((SECONDS - start)) s"

state=$(sed -n 's/^[0-9]* (.*) \([A-Z]\) .*/\1/p' /proc/$PS_PID/stat 2>/dev/null)
if [[ -z "$state" || "$state" == Z ]]; then
  wait $PS_PID
  fail "the ps died during the test (exit $?): $(tail -n 10 "$LOG")"
fi
[[ $rc -ne 124 && $rc -ne 137 ]] || fail "the client hung (killed by timeout)"
[[ $rc -eq 0 ]] || fail "the client exited $rc: $(grep '^FAIL' "$SCRATCH/client.log" | head -20)"
grep -q "cases, 0 failed; the task still answers GetStatus$" "$SCRATCH/client.log" || fail "the client printed no summary"

if grep -q "stopping:" "$LOG"; then fail "the ps stopped: $(grep stopping: "$LOG")"; fi
if grep -Eqi "check failed|terminate called|segmentation|aborted \(core|sanitizer" "$LOG"; then
  fail "the ps log shows a crash: $(grep -Ei 'check failed|terminate called|segmentation|aborted \(core|sanitizer' "$LOG" | head -3)"
fi
kill -TERM $PS_PID
for _ in $(seq 100); do
  state=$(sed -n 's/^[0-9]* (.*) \([A-Z]\) .*/\1/p' /proc/$PS_PID/stat 2>/dev/null)
  [[ -z "$state" || "$state" == Z ]] && break
  sleep 0.1
done
[[ -z "$state" || "$state" == Z ]] || fail "the ps still runs 10 s after SIGTERM: $(tail -n 3 "$LOG")"
wait $PS_PID
code=$?
[[ $code -eq 143 ]] || fail "the ps exited $code on SIGTERM, not 143: $(tail -n 3 "$LOG")"
echo "PASS"
