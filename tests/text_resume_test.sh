#!/usr/bin/env bash
# The text input through `train` (issue 19): configs/fortunes_bigram.pbtxt in
# deterministic mode (windows in a seeded permutation per epoch in the
# TextWindowReader) gives the same final loss twice, and a run stopped by
# SIGTERM and resumed restores the reader to the window where it stopped and
# ends with the uninterrupted run's loss to 1e-6 relative. The final
# evaluation reads every test window once. Skips without the fortunes package.
set -uo pipefail
source tests/train_testlib.sh
CONFIG="$PWD/configs/fortunes_bigram.pbtxt"
if [[ ! -r /usr/share/games/fortunes/fortunes ]]; then
  echo "SKIP: the Debian package 'fortunes' is not installed (tools/setup.sh installs it)"
  exit 0
fi

STEPS=160
FLAGS="--set train.steps=$STEPS --set train.deterministic=true --set train.eval_every_steps=0
       --set checkpoint.every_steps=1000 --set train.log_every_steps=5 --set summaries.every_steps=0"

for run in whole again; do
  # shellcheck disable=SC2086
  "$TRAIN" "$CONFIG" $FLAGS --run_dir "$SCRATCH/$run" > "$SCRATCH/$run.log" 2>&1 || fail "$run run failed: $(tail -5 "$SCRATCH/$run.log")"
done
whole=$(last_loss "$SCRATCH/whole.log" $STEPS)
again=$(last_loss "$SCRATCH/again.log" $STEPS)
[[ -n "$whole" ]] || fail "no final loss in $SCRATCH/whole.log"
[[ "$whole" == "$again" ]] || fail "two deterministic runs ended at $whole and $again"
grep -q "text train split of 43 files" "$SCRATCH/whole.log" || fail "no text input line in the plan: $(grep -m1 'input train' "$SCRATCH/whole.log")"
grep -q "(58,572 examples)" "$SCRATCH/whole.log" || fail "the evaluation did not read the 58,572 test windows: $(grep eval "$SCRATCH/whole.log")"

dir="$SCRATCH/stopped"
# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $FLAGS --run_dir "$dir" > "$dir.log" 2>&1 &
BACKGROUND_PIDS+=($!)
stop_with_sigterm_at $! "$dir.log" 50
k=$STOPPED_AT
[[ "$k" -lt $STEPS ]] || fail "stopped at step $k, not before the last step"
# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $FLAGS --run_dir "$dir" > "$dir.resumed.log" 2>&1 || fail "resumed run failed: $(tail -5 "$dir.resumed.log")"
[[ "$(resumed_step "$dir.resumed.log")" == "$k" ]] || fail "did not resume at step $k: $(grep -m1 resumed "$dir.resumed.log")"
grep -q "input restored to example $((k * 256)) (exact order)" "$dir.resumed.log" || fail "input position not restored: $(grep -m1 'input restored' "$dir.resumed.log")"
resumed=$(last_loss "$dir.resumed.log" $STEPS)
diff=$(relative_difference "$resumed" "$whole")
echo "stopped at step $k, resumed: loss at step $STEPS $resumed vs uninterrupted $whole (relative difference $diff)"
close_enough "$resumed" "$whole" 1e-6 || fail "resumed loss $resumed differs from $whole by $diff (> 1e-6)"
echo "PASS"
