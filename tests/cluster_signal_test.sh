#!/usr/bin/env bash
# SIGTERM to a whole cluster (issue 15): `train --local_cluster ps=1,worker=1`
# forwards it to every task; the chief finishes its step and checkpoints (its
# ps keeps serving until the chief says stop), every task exits, and the
# launcher exits 143. Run again, the cluster resumes from that checkpoint and
# ends with the loss of an uninterrupted one-process run, bit for bit.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

STEPS=400
CLUSTER_CONFIG="$PWD/configs/fashion_mlp_cluster.pbtxt"
# shellcheck disable=SC2046
FLAGS=$(mlp_flags $STEPS 100000 2)

# shellcheck disable=SC2086
timeout 120 "$TRAIN" "$CONFIG" $FLAGS --run_dir "$SCRATCH/one" > "$SCRATCH/one.log" 2>&1 ||
  fail "the one-process run failed: $(tail -5 "$SCRATCH/one.log")"
want=$(last_loss "$SCRATCH/one.log" $STEPS)
[[ -n "$want" ]] || fail "no final loss in the one-process run"

# shellcheck disable=SC2086
"$TRAIN" "$CLUSTER_CONFIG" $FLAGS --local_cluster ps=1,worker=1 --run_dir "$SCRATCH/cluster" \
  > "$SCRATCH/first.log" 2>&1 &
LAUNCHER=$!
BACKGROUND_PIDS+=("$LAUNCHER")
# Stop it once it trains (a progress line every 5 steps), well before the end.
for ((i = 0; i < 600; i++)); do
  grep -q "^\[worker:0\] step [1-9][0-9]*/$STEPS" "$SCRATCH/first.log" && break
  kill -0 "$LAUNCHER" 2>/dev/null || fail "the cluster ended before it was stopped: $(tail -5 "$SCRATCH/first.log")"
  sleep 0.1
done
kill -TERM "$LAUNCHER"
code=timeout
for ((i = 0; i < 300; i++)); do
  if ! kill -0 "$LAUNCHER" 2>/dev/null; then
    wait "$LAUNCHER"
    code=$?
    break
  fi
  sleep 0.1
done
[[ $code == 143 ]] || fail "the launcher ended with '$code' after SIGTERM: $(tail -8 "$SCRATCH/first.log")"
grep -q "^\[worker:0\] saved .*/checkpoints/ckpt-[0-9]*" "$SCRATCH/first.log" ||
  fail "the chief saved no checkpoint when stopped: $(tail -8 "$SCRATCH/first.log")"
grep -q "^\[ps:0\] task /job:ps/replica:0/task:0 stopping: the chief was stopped by a signal" "$SCRATCH/first.log" ||
  fail "the ps did not wait for the chief: $(grep '^\[ps:0\]' "$SCRATCH/first.log" | tail -3)"
stopped=$(sed -n 's/^\[worker:0\] stopped by signal at step \([0-9]*\).*/\1/p' "$SCRATCH/first.log")
[[ -n "$stopped" && "$stopped" -lt $STEPS ]] || fail "the chief did not stop early (step '$stopped')"
echo "stopped at step $stopped with 143; checkpoint saved"

# shellcheck disable=SC2086
timeout 120 "$TRAIN" "$CLUSTER_CONFIG" $FLAGS --local_cluster ps=1,worker=1 --run_dir "$SCRATCH/cluster" \
  > "$SCRATCH/second.log" 2>&1 || fail "the resumed cluster failed: $(tail -5 "$SCRATCH/second.log")"
grep -q "^\[worker:0\] resumed from .* at step $stopped" "$SCRATCH/second.log" ||
  fail "the cluster did not resume at step $stopped: $(grep -m1 resumed "$SCRATCH/second.log")"
sed 's/^\[worker:0\] //' "$SCRATCH/second.log" > "$SCRATCH/second_chief.log"
got=$(last_loss "$SCRATCH/second_chief.log" $STEPS)
echo "last step $STEPS loss: one process $want, cluster stopped and resumed $got"
[[ "$got" == "$want" ]] || fail "the resumed cluster's loss '$got' differs from the uninterrupted $want"
echo PASS
