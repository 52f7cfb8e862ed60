#!/usr/bin/env bash
# A deterministic run whose loss is a sampled softmax
# (configs/fashion_sampled_softmax.pbtxt) stopped after a checkpoint and
# resumed ends with the uninterrupted run's loss to 1e-6 relative: the classes
# are drawn at the global step (LogUniformCandidateSamplerAtStep), as
# dropout's masks are. Before, the sampler numbered its draws by its own runs,
# which a resumed process starts again at 0: the first step after a resume
# drew other classes, and the losses parted.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data
CONFIG="$PWD/configs/fashion_sampled_softmax.pbtxt"

STEPS=240
STOP=150
FLAGS="--set train.deterministic=true --set train.eval_every_steps=0 --set checkpoint.every_steps=1000
       --set train.log_every_steps=50 --set summaries.every_steps=0 --set monitoring.metrics_port=-1"

# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $FLAGS --set train.steps=$STEPS --run_dir "$SCRATCH/whole" > "$SCRATCH/whole.log" 2>&1 \
  || fail "uninterrupted run failed: $(tail -5 "$SCRATCH/whole.log")"
whole=$(last_loss "$SCRATCH/whole.log" $STEPS)
[[ -n "$whole" ]] || fail "no final loss in $SCRATCH/whole.log"

# The first part ends at step $STOP with its final checkpoint; the second
# resumes there and goes on to $STEPS (train.steps changed: --allow-drift).
dir="$SCRATCH/stopped"
# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $FLAGS --set train.steps=$STOP --run_dir "$dir" > "$dir.log" 2>&1 \
  || fail "the first part failed: $(tail -5 "$dir.log")"
# shellcheck disable=SC2086
"$TRAIN" "$CONFIG" $FLAGS --set train.steps=$STEPS --run_dir "$dir" --allow-drift > "$dir.resumed.log" 2>&1 \
  || fail "the resumed run failed: $(tail -5 "$dir.resumed.log")"
[[ "$(resumed_step "$dir.resumed.log")" == "$STOP" ]] || fail "did not resume at step $STOP: $(grep -m1 resumed "$dir.resumed.log")"
resumed=$(last_loss "$dir.resumed.log" $STEPS)
diff=$(relative_difference "$resumed" "$whole")
echo "stopped at step $STOP, resumed: loss at step $STEPS $resumed vs uninterrupted $whole (relative difference $diff)"
close_enough "$resumed" "$whole" 1e-6 || fail "resumed loss $resumed differs from $whole by $diff (> 1e-6)"
echo "PASS"
