#!/usr/bin/env bash
# Exact resume (issue: checkpoints): in deterministic mode, a run stopped by
# SIGTERM at some step k (it finishes the step, checkpoints, exits 143) and then
# resumed must end with the loss of an uninterrupted run to 1e-6 relative.
# Variables, optimizer slots, the global step (which also keys dropout's
# masks and the augment layer's draws) and the input readers' positions all
# come back from the checkpoint. The same again for fashion_mlp with an
# augment layer before it (flips and shifts of every image), whose loss must
# differ from the plain run's.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

STEPS=300
FLAGS=$(mlp_flags $STEPS 100 5)

# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $FLAGS --run_dir "$SCRATCH/whole" > "$SCRATCH/whole.log" 2>&1 || fail "uninterrupted run failed: $(tail -5 "$SCRATCH/whole.log")"
whole=$(last_loss "$SCRATCH/whole.log" $STEPS)
[[ -n "$whole" ]] || fail "no final loss in $SCRATCH/whole.log"

# Stops the run of CONFIG in DIR after step STOP_AFTER, resumes it, and checks
# its last loss against WHOLE.
stop_and_resume() {  # CONFIG DIR STOP_AFTER WHOLE
  local config=$1 dir=$2 stop_after=$3 whole=$4
  # shellcheck disable=SC2086
  "$TRAIN" "$config" $FLAGS --run_dir "$dir" > "$dir.log" 2>&1 &
  BACKGROUND_PIDS+=($!)
  stop_with_sigterm_at $! "$dir.log" "$stop_after"
  k=$STOPPED_AT
  [[ "$k" -lt $STEPS ]] || fail "stopped at step $k, not before the last step"

  # shellcheck disable=SC2086
  "$TRAIN" "$config" $FLAGS --run_dir "$dir" > "$dir.resumed.log" 2>&1 || fail "resumed run failed: $(tail -5 "$dir.resumed.log")"
  [[ "$(resumed_step "$dir.resumed.log")" == "$k" ]] || fail "did not resume at step $k: $(grep -m1 resumed "$dir.resumed.log")"
  grep -q "input restored to example $((k * 128)) (exact order)" "$dir.resumed.log" || fail "input position not restored"
  resumed=$(last_loss "$dir.resumed.log" $STEPS)
  diff=$(relative_difference "$resumed" "$whole")
  echo "$(basename "$config"): stopped at step $k, resumed: loss at step $STEPS $resumed vs uninterrupted $whole (relative difference $diff)"
  close_enough "$resumed" "$whole" 1e-6 || fail "resumed loss $resumed differs from $whole by $diff (> 1e-6)"
}

for stop_after in 37 150; do
  stop_and_resume "$CONFIG" "$SCRATCH/stopped_$stop_after" "$stop_after" "$whole"
done

AUGMENTED="$SCRATCH/fashion_mlp_augmented.pbtxt"
sed -e 's|layer { name: "flat" input: "image" flatten {} }|layer { name: "augmented" input: "image" augment { flip_left_right: true max_shift: 2 } }\n  layer { name: "flat" input: "augmented" flatten {} }|' \
  "$CONFIG" > "$AUGMENTED"
grep -q 'augment {' "$AUGMENTED" || fail "no augment layer in $AUGMENTED"
# shellcheck disable=SC2086
"$TRAIN" "$AUGMENTED" $FLAGS --run_dir "$SCRATCH/augmented_whole" > "$SCRATCH/augmented_whole.log" 2>&1 ||
  fail "uninterrupted augmented run failed: $(tail -5 "$SCRATCH/augmented_whole.log")"
augmented_whole=$(last_loss "$SCRATCH/augmented_whole.log" $STEPS)
[[ -n "$augmented_whole" ]] || fail "no final loss in $SCRATCH/augmented_whole.log"
close_enough "$augmented_whole" "$whole" 1e-6 && fail "the augmented run's loss $augmented_whole is the plain run's"
stop_and_resume "$AUGMENTED" "$SCRATCH/augmented_stopped" 150 "$augmented_whole"
echo "PASS"
