#!/usr/bin/env bash
# A corrupt latest checkpoint: `train` skips it with a warning naming the
# file, resumes from the previous one, and (deterministic mode) ends exactly
# where an uncorrupted run ends. Several kinds of damage, one run each:
# a bit flip in a table file, a truncated table file, a deleted FILES list,
# a truncated manifest/log file. `ckpt verify` must call each damage corrupt.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

STEPS=60
FLAGS=$(mlp_flags $STEPS 20 5)
# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $FLAGS --run_dir "$SCRATCH/base" > "$SCRATCH/base.log" 2>&1 || fail "base run failed: $(tail -5 "$SCRATCH/base.log")"
want=$(last_loss "$SCRATCH/base.log" $STEPS)
[[ -n "$want" ]] || fail "no final loss"

# Each damage takes the latest checkpoint directory.
flip_sst()        { local f; f=$(ls "$1"/shard-*/*.sst | head -1); printf '\xff' | dd of="$f" bs=1 seek=$(( $(stat -c %s "$f") / 2 )) conv=notrunc status=none; }
truncate_sst()    { local f; f=$(ls "$1"/shard-*/*.sst | head -1); truncate -s $(( $(stat -c %s "$f") / 3 )) "$f"; }
delete_files()    { rm -f "$1/FILES"; }
truncate_manifest() { local f; f=$(ls "$1"/shard-*/MANIFEST-* | head -1); truncate -s 10 "$f"; }

for damage in flip_sst truncate_sst delete_files truncate_manifest; do
  dir="$SCRATCH/$damage"
  # Stop after the step-40 checkpoint: run 40 steps' worth, keeping the config.
  cp -r "$SCRATCH/base" "$dir"
  rm -rf "$dir"/events.* "$dir"/eval.txt
  latest=$(state_latest_step "$dir")
  [[ "$latest" == "$STEPS" ]] || fail "base run's latest checkpoint is step $latest"
  $damage "$dir/checkpoints/ckpt-$STEPS"
  if "$CKPT" verify "$dir/checkpoints/ckpt-$STEPS" > "$dir.verify" 2>&1; then
    fail "$damage: ckpt verify accepted the damaged checkpoint"
  fi
  # Resume: the damaged step-60 checkpoint is skipped; training redoes 40..60.
  # shellcheck disable=SC2086
  "$TRAIN" "$CONFIG" $FLAGS --run_dir "$dir" > "$dir.log" 2>&1
  rc=$?
  [[ $rc == 0 ]] || fail "$damage: train exited $rc: $(tail -5 "$dir.log")"
  grep -q "skipping checkpoint .*ckpt-$STEPS" "$dir.log" || fail "$damage: no warning about the damaged checkpoint: $(head -20 "$dir.log")"
  [[ "$(resumed_step "$dir.log")" == 40 ]] || fail "$damage: did not fall back to step 40: $(grep -m1 resumed "$dir.log")"
  got=$(last_loss "$dir.log" $STEPS)
  close_enough "$got" "$want" 1e-6 || fail "$damage: final loss $got, uncorrupted run $want"
  "$CKPT" verify "$dir/checkpoints/ckpt-$STEPS" > /dev/null 2>&1 || fail "$damage: the re-saved step-$STEPS checkpoint does not verify"
  echo "$damage: $(grep -m1 'skipping checkpoint' "$dir.log" | sed "s|$SCRATCH/||g")"
  echo "$damage: fell back to step 40, final loss $got (uncorrupted $want)"
done
echo "PASS"
