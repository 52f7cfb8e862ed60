#!/usr/bin/env bash
# Exact resume (issue: checkpoints): in deterministic mode, a run stopped by
# SIGTERM at some step k (it finishes the step, checkpoints, exits 143) and then
# resumed must end with the loss of an uninterrupted run to 1e-6 relative.
# Variables, optimizer slots, the global step (which also keys dropout's
# masks) and the input readers' positions all come back from the checkpoint.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

STEPS=300
FLAGS=$(mlp_flags $STEPS 100 5)

# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $FLAGS --run_dir "$SCRATCH/whole" > "$SCRATCH/whole.log" 2>&1 || fail "uninterrupted run failed: $(tail -5 "$SCRATCH/whole.log")"
whole=$(last_loss "$SCRATCH/whole.log" $STEPS)
[[ -n "$whole" ]] || fail "no final loss in $SCRATCH/whole.log"

for stop_after in 37 150; do
  dir="$SCRATCH/stopped_$stop_after"
  # shellcheck disable=SC2086
  "$TRAIN" "$CONFIG" $FLAGS --run_dir "$dir" > "$dir.log" 2>&1 &
  BACKGROUND_PIDS+=($!)
  stop_with_sigterm_at $! "$dir.log" "$stop_after"
  k=$STOPPED_AT
  [[ "$k" -lt $STEPS ]] || fail "stopped at step $k, not before the last step"

  # shellcheck disable=SC2086
  "$TRAIN" "$CONFIG" $FLAGS --run_dir "$dir" > "$dir.resumed.log" 2>&1 || fail "resumed run failed: $(tail -5 "$dir.resumed.log")"
  [[ "$(resumed_step "$dir.resumed.log")" == "$k" ]] || fail "did not resume at step $k: $(grep -m1 resumed "$dir.resumed.log")"
  grep -q "input restored to example $((k * 128)) (exact order)" "$dir.resumed.log" || fail "input position not restored"
  resumed=$(last_loss "$dir.resumed.log" $STEPS)
  diff=$(relative_difference "$resumed" "$whole")
  echo "stopped at step $k, resumed: loss at step $STEPS $resumed vs uninterrupted $whole (relative difference $diff)"
  close_enough "$resumed" "$whole" 1e-6 || fail "resumed loss $resumed differs from $whole by $diff (> 1e-6)"
done
echo "PASS"
