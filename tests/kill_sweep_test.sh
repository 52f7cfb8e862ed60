#!/usr/bin/env bash
# Kill sweep (issue 20): `train` is SIGKILLed KILLS times (default 30) at seeded random moments
# and resumed each time, on a small deterministic fashion_mlp that checkpoints every 5 steps.
# A third of the kills wait for a checkpoint being written (a ckpt-*.tmp directory), a sixth
# land at a random moment of the start (0-1.5 s after exec: before or during the restore), the
# rest at a random moment of training (a random step, then a random delay). Checked:
#   - after every kill, every checkpoint the state file retains passes `ckpt verify`;
#   - every resume used the newest checkpoint that verifies (computed before the restart with
#     `ckpt verify` over the state file's list, or over every ckpt-<step>/ when the state file
#     is missing);
#   - the final loss equals an uninterrupted run's, to the last printed digit.
# Every process has 1 intra-op and 1 inter-op thread; the runs not killed by the test are under
# `timeout`, every wait is a bounded loop. Usage (outside Bazel too): tests/kill_sweep_test.sh [KILLS]
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

KILLS=${1:-${KILL_SWEEP_KILLS:-30}}
STEPS=2000
# fashion_mlp with 64-unit hidden layers: fast steps, so most of the time is starts and saves.
FLAGS="$(mlp_flags $STEPS 5 3) --set devices.intra_op_threads=1 --set devices.inter_op_threads=1
  --set model.layer[1].dense.units=64 --set model.layer[2].dense.units=64"
RANDOM=20260020   # reproducible kill moments
start_time=$SECONDS

# shellcheck disable=SC2086
timeout 300 "$TRAIN" "$CONFIG" $FLAGS --run_dir "$SCRATCH/whole" > "$SCRATCH/whole.log" 2>&1 ||
  fail "uninterrupted run failed: $(tail -5 "$SCRATCH/whole.log")"
whole=$(last_loss "$SCRATCH/whole.log" $STEPS)
[[ -n "$whole" ]] || fail "no final loss in the uninterrupted run"
echo "uninterrupted run: final loss $whole ($((SECONDS - start_time)) s)"

dir="$SCRATCH/killed"

# The step of the newest checkpoint that verifies (empty: none), as the resume must find it:
# the state file's retained list when the state file exists, else every ckpt-<step>/.
newest_verified_step() {
  local candidates best=""
  if [[ -f "$dir/checkpoints/checkpoint" ]] && state_listed_dirs "$dir" | grep -q .; then
    candidates=$(state_listed_dirs "$dir")
  else
    candidates=$(cd "$dir/checkpoints" 2>/dev/null && ls -d ckpt-* 2>/dev/null | grep -E '^ckpt-[0-9]+$')
  fi
  for d in $candidates; do
    local step=${d#ckpt-}
    [[ -n "$best" && "$step" -le "$best" ]] && continue
    timeout 60 "$CKPT" verify "$dir/checkpoints/$d" > /dev/null 2>&1 && best=$step
  done
  echo "$best"
}

wait_for_progress() {  # LOG PID: up to 60 s for the first progress line
  for _ in $(seq 1 600); do
    grep -q "^step [0-9]*/" "$1" 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

wait_for_step() {  # LOG PID STEP: up to 60 s for a progress line at STEP or later
  for _ in $(seq 1 3000); do
    local step
    step=$(sed -n 's/^step \([0-9]*\)\/.*/\1/p' "$1" 2>/dev/null | tail -1)
    [[ -n "$step" && "$step" -ge "$3" ]] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.02
  done
  return 1
}

kills=0 inside_save=0 in_start=0 resumes_checked=0
for attempt in $(seq 1 "$KILLS"); do
  expected=$(newest_verified_step)
  log="$SCRATCH/run_$attempt.log"
  # Not under `timeout`: the kill must reach train itself. Every wait below is bounded, and the
  # kill ends the run whatever state it is in.
  # shellcheck disable=SC2086
  "$TRAIN" "$CONFIG" $FLAGS --run_dir "$dir" > "$log" 2>&1 &
  pid=$!
  BACKGROUND_PIDS+=($pid)
  case $((attempt % 6)) in
    1 | 3)  # inside a save: poll for a checkpoint being written, up to 10 s
      wait_for_progress "$log" $pid
      for _ in $(seq 1 2000); do
        compgen -G "$dir/checkpoints/ckpt-*.tmp" > /dev/null && break
        sleep 0.005
      done ;;
    5)  # a random moment of the start: 0 to 2 s after exec, or the first progress line if
        # training starts sooner (an unloaded machine starts in well under a second, and a
        # late kill would let this run use up the steps the later kills need)
      for _ in $(seq 1 $((RANDOM % 200))); do
        grep -q "^step [0-9]*/" "$log" 2>/dev/null && break
        sleep 0.01
      done ;;
    *)  # a random moment of training: 5 to 34 steps after the resume point, plus 0-49 ms
      wait_for_step "$log" $pid $((${expected:-0} + 5 + RANDOM % 30))
      sleep "0.0$(printf '%02d' $((RANDOM % 50)))" ;;
  esac
  compgen -G "$dir/checkpoints/ckpt-*.tmp" > /dev/null && was_saving=1 || was_saving=0
  if ! kill -9 $pid 2>/dev/null; then
    wait $pid
    fail "run $attempt ended before its kill (exit $?): raise STEPS: $(tail -3 "$log")"
  fi
  wait $pid 2>/dev/null
  kills=$((kills + 1))
  ((was_saving)) && inside_save=$((inside_save + 1))
  grep -q "^step [0-9]*/" "$log" || in_start=$((in_start + 1))
  got=$(resumed_step "$log")
  if [[ -n "$got" ]]; then
    [[ "$got" == "$expected" ]] || fail "run $attempt resumed at step $got; the newest checkpoint that verifies was '$expected'"
    resumes_checked=$((resumes_checked + 1))
  elif [[ -n "$expected" ]] && grep -q "^step [0-9]*/" "$log"; then
    fail "run $attempt trained without resuming from step $expected"
  fi
  for d in $(state_listed_dirs "$dir"); do
    timeout 60 "$CKPT" verify "$dir/checkpoints/$d" > /dev/null 2>&1 ||
      fail "after kill $kills: $d (retained in the state file) fails ckpt verify"
  done
  echo "kill $kills: last step $(sed -n 's/^step \([0-9]*\)\/.*/\1/p' "$log" | tail -1) (resumed at ${got:--}, inside a save $was_saving); state file latest: $(state_latest_step "$dir")"
done

expected=$(newest_verified_step)
# shellcheck disable=SC2086
timeout 300 "$TRAIN" "$CONFIG" $FLAGS --run_dir "$dir" > "$SCRATCH/final.log" 2>&1 ||
  fail "final run failed: $(tail -5 "$SCRATCH/final.log")"
if [[ -n "$expected" ]]; then
  [[ "$(resumed_step "$SCRATCH/final.log")" == "$expected" ]] ||
    fail "final run did not resume from the newest checkpoint that verifies ($expected)"
  resumes_checked=$((resumes_checked + 1))
fi
[[ "$(state_latest_step "$dir")" == "$STEPS" ]] || fail "the state file's latest checkpoint is not step $STEPS"
for d in $(state_listed_dirs "$dir"); do
  timeout 60 "$CKPT" verify "$dir/checkpoints/$d" > /dev/null 2>&1 || fail "final: $d fails ckpt verify"
done
# The loss at the last step, from the latest run that trained up to it (the final run has
# nothing left to do when a killed run saved the last step).
final=""
for log in $(seq -f "$SCRATCH/run_%g.log" 1 "$KILLS") "$SCRATCH/final.log"; do
  l=$(last_loss "$log" $STEPS)
  [[ -n "$l" ]] && final=$l
done
[[ -n "$final" ]] || fail "no run printed the loss of step $STEPS: $(tail -3 "$SCRATCH/final.log")"
echo "$kills kills ($inside_save while a checkpoint was being written, $in_start before the first progress line);" \
  "$resumes_checked resumes checked; final loss $final, uninterrupted $whole; $((SECONDS - start_time)) s"
((inside_save >= KILLS / 6)) || fail "only $inside_save kills landed inside a save"
[[ "$final" == "$whole" ]] || fail "final loss $final differs from the uninterrupted run's $whole"
echo "PASS"
