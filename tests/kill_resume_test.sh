#!/usr/bin/env bash
# Crash safety of checkpoints under SIGKILL: `train` is killed with SIGKILL 20
# times, half of them while a checkpoint is being written (a ckpt-*.tmp
# directory exists), half at random moments, and restarted each time. Each
# restart must resume from the checkpoint the state file names as latest;
# every checkpoint the state file lists must pass `ckpt verify` after every
# kill; the run must reach its last step, with a final loss within 2% of an
# uninterrupted run (deterministic mode makes it equal; the difference is
# printed).
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

STEPS=2000  # enough for 20 kills: the faster GEMM ran 800 steps out after 12
FLAGS=$(mlp_flags $STEPS 10 3)
RANDOM=20261121   # reproducible kill times

# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $FLAGS --run_dir "$SCRATCH/whole" > "$SCRATCH/whole.log" 2>&1 || fail "uninterrupted run failed: $(tail -5 "$SCRATCH/whole.log")"
whole=$(last_loss "$SCRATCH/whole.log" $STEPS)
[[ -n "$whole" ]] || fail "no final loss"

dir="$SCRATCH/killed"
kills=0
inside_save=0
for attempt in $(seq 1 20); do
  expected_resume=$(state_latest_step "$dir")
  log="$SCRATCH/run_$attempt.log"
  # shellcheck disable=SC2086
  "$TRAIN" "$CONFIG" $FLAGS --run_dir "$dir" > "$log" 2>&1 &
  pid=$!
  BACKGROUND_PIDS+=($pid)
  # Wait for training to be under way (a progress line), up to 60 s.
  for _ in $(seq 1 600); do
    grep -q "^step [0-9]*/" "$log" 2>/dev/null && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  if ((attempt % 2 == 1)); then
    # Inside a save: poll for a checkpoint being written, up to 5 s.
    for _ in $(seq 1 1000); do
      compgen -G "$dir/checkpoints/ckpt-*.tmp" > /dev/null && break
      sleep 0.005
    done
  else
    sleep "0.$(printf '%03d' $((RANDOM % 1000)))"
  fi
  compgen -G "$dir/checkpoints/ckpt-*.tmp" > /dev/null && was_saving=1 || was_saving=0
  if ! kill -9 $pid 2>/dev/null; then
    wait $pid
    echo "run $attempt ended before its kill (exit $?)"
    break
  fi
  wait $pid 2>/dev/null
  kills=$((kills + 1))
  ((was_saving)) && inside_save=$((inside_save + 1))
  # The resume point of this run was the state file's latest before it.
  if [[ -n "$expected_resume" ]]; then
    got=$(resumed_step "$log")
    [[ -z "$got" || "$got" == "$expected_resume" ]] || fail "run $attempt resumed at step $got; the state file named $expected_resume"
  fi
  # Every listed checkpoint verifies.
  for d in $(state_listed_dirs "$dir"); do
    "$CKPT" verify "$dir/checkpoints/$d" > /dev/null 2>&1 || fail "after kill $kills: $d (listed in the state file) fails ckpt verify"
  done
  echo "kill $kills at step $(sed -n 's/^step \([0-9]*\)\/.*/\1/p' "$log" | tail -1) (inside a save: $was_saving); state file latest: $(state_latest_step "$dir")"
done

expected_resume=$(state_latest_step "$dir")
# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $FLAGS --run_dir "$dir" > "$SCRATCH/final.log" 2>&1 || fail "final run failed: $(tail -5 "$SCRATCH/final.log")"
if [[ -n "$expected_resume" ]]; then
  [[ "$(resumed_step "$SCRATCH/final.log")" == "$expected_resume" ]] || fail "final run did not resume from the state file's step $expected_resume"
fi
# The loss at the last step, from the latest run that trained up to it (the
# final run has nothing left to do when a killed run got past its last step).
final=""
for log in $(ls -tr "$SCRATCH"/run_*.log) "$SCRATCH/final.log"; do
  l=$(last_loss "$log" $STEPS)
  [[ -n "$l" ]] && final=$l
done
[[ -n "$final" ]] || fail "the run did not reach step $STEPS: $(tail -3 "$SCRATCH/final.log")"
[[ "$(state_latest_step "$dir")" == "$STEPS" ]] || fail "the state file's latest checkpoint is not step $STEPS"
for d in $(state_listed_dirs "$dir"); do
  "$CKPT" verify "$dir/checkpoints/$d" > /dev/null 2>&1 || fail "final: $d fails ckpt verify"
done
echo "$kills kills ($inside_save while a checkpoint was being written); final loss $final, uninterrupted $whole (relative difference $(relative_difference "$final" "$whole"))"
((kills >= 15)) || fail "only $kills kills landed before the run ended"
((inside_save >= 1)) || fail "no kill landed inside a save"
close_enough "$final" "$whole" 0.02 || fail "final loss $final is not within 2% of $whole"
echo "PASS"
