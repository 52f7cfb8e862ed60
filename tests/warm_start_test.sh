#!/usr/bin/env bash
# checkpoint.warm_start: a fresh run takes the chosen variables from another
# run's checkpoint (the others keep their initializers), a resume ignores it,
# and a missing source or an unknown variable is a config error (exit 2).
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $(mlp_flags 30 30 2) --run_dir "$SCRATCH/source" > "$SCRATCH/source.log" 2>&1 || fail "source run failed: $(tail -3 "$SCRATCH/source.log")"

# One step at a learning rate that changes nothing: the checkpoint at step 1 holds the
# initial values.
NO_STEP=(--set "optimizer.momentum={learning_rate: 1e-30 momentum: 0.9}" --set optimizer.schedule={})
# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $(mlp_flags 1 1 2) "${NO_STEP[@]}" \
  --set "checkpoint.warm_start={from: \"$SCRATCH/source\" variables: \"fc1/kernel\" variables: \"fc1/bias\"}" \
  --run_dir "$SCRATCH/warm" > "$SCRATCH/warm.log" 2>&1 || fail "warm-started run failed: $(tail -3 "$SCRATCH/warm.log")"
grep -q "warm-started 2 variables from $SCRATCH/source" "$SCRATCH/warm.log" || fail "no warm-start line: $(head -30 "$SCRATCH/warm.log")"

stats() { "$CKPT" inspect "$1" | grep -E "^ *$2 " ; }
src="$SCRATCH/source/checkpoints/ckpt-30"
dst="$SCRATCH/warm/checkpoints/ckpt-1"
[[ -n "$(stats "$src" fc1/kernel)" ]] || fail "ckpt inspect shows no fc1/kernel: $("$CKPT" inspect "$src" | head -20)"
[[ "$(stats "$src" fc1/kernel)" == "$(stats "$dst" fc1/kernel)" ]] || fail "fc1/kernel was not taken from the source: $(stats "$src" fc1/kernel) vs $(stats "$dst" fc1/kernel)"
[[ "$(stats "$src" fc1/bias)" == "$(stats "$dst" fc1/bias)" ]] || fail "fc1/bias was not taken from the source"
[[ "$(stats "$src" fc2/kernel)" != "$(stats "$dst" fc2/kernel)" ]] || fail "fc2/kernel was taken too, though not listed"

# Errors: exit 2 with the field named.
# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $(mlp_flags 1 1 2) --set "checkpoint.warm_start={from: \"$SCRATCH/nowhere\"}" \
  --run_dir "$SCRATCH/bad1" > "$SCRATCH/bad1.log" 2>&1
rc=$?
[[ $rc == 2 ]] && grep -q "warm_start.from" "$SCRATCH/bad1.log" || fail "missing source: exit $rc: $(cat "$SCRATCH/bad1.log" | tail -2)"
# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $(mlp_flags 1 1 2) --set "checkpoint.warm_start={from: \"$SCRATCH/source\" variables: \"fc9/kernel\"}" \
  --run_dir "$SCRATCH/bad2" > "$SCRATCH/bad2.log" 2>&1
rc=$?
[[ $rc == 2 ]] && grep -q "fc9/kernel" "$SCRATCH/bad2.log" || fail "unknown variable: exit $rc: $(tail -2 "$SCRATCH/bad2.log")"
# --validate finds it too (before any work), with a guess at the name meant.
# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $(mlp_flags 1 1 2) --set "checkpoint.warm_start.from=$SCRATCH/source" \
  --set 'checkpoint.warm_start.variables[0]=fc9/kernel' --validate > "$SCRATCH/bad3.log" 2>&1
rc=$?
[[ $rc == 2 ]] && grep -q "error: checkpoint.warm_start.variables: 'fc9/kernel' is not a variable of this model (did you mean 'fc1/kernel'?)" "$SCRATCH/bad3.log" \
  || fail "--validate and an unknown variable: exit $rc: $(tail -2 "$SCRATCH/bad3.log")"
echo "PASS"
