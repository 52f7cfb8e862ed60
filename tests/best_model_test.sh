#!/usr/bin/env bash
# train.best_model end to end, on fashion_logreg in deterministic mode: the best
# evaluation's checkpoint is kept beside the newest (saved for it when no periodic
# save falls there), patience stops the run as a finished one, a rerun stops again
# before its first step, more patience trains on, `--export_checkpoint best`
# exports the best, and a wrong metric is a located config error.
set -uo pipefail
source tests/train_testlib.sh
skip_without_data

LOGREG="$PWD/configs/fashion_logreg.pbtxt"
RUN="$SCRATCH/run"
common=(--set train.steps=400 --set train.eval_every_steps=50 --set train.deterministic=true
        --set checkpoint.every_steps=100 --set checkpoint.keep=1 --set monitoring.metrics_port=-1
        --run_dir "$RUN")
# No evaluation can improve on the first by more than 0.5: the run stops after two more.
impatient=(--set 'train.best_model={metric: "accuracy" patience: 2 min_delta: 0.5}')

eval_steps() { sed -n 's/^eval at step \([0-9]*\):.*/\1/p' "$RUN/eval.txt" | tr '\n' ' '; }
best_dir() { sed -n '/^best {/,/^}/s/^ *dir: "\(ckpt-[0-9]*\)"$/\1/p' "$RUN/checkpoints/checkpoint"; }

"$TRAIN" "$LOGREG" "${common[@]}" "${impatient[@]}" > "$SCRATCH/a.log" 2>&1
rc=$?
[[ $rc == 0 ]] || fail "first run: exit $rc: $(tail -5 "$SCRATCH/a.log")"
grep -q '^early stop at step 150: accuracy 0\.[0-9]* has not improved on 0\.[0-9]* (step 50) for 2 evaluations$' "$SCRATCH/a.log" \
  || fail "no early stop line: $(grep -v '^step ' "$SCRATCH/a.log" | tail -8)"
grep -q "^best accuracy 0\.[0-9]* at step 50: $RUN/checkpoints/ckpt-50$" "$SCRATCH/a.log" || fail "no best line: $(tail -4 "$SCRATCH/a.log")"
[[ "$(eval_steps)" == "50 100 150 " ]] || fail "eval.txt holds steps $(eval_steps), not 50 100 150 (each once)"
[[ "$(best_dir)" == "ckpt-50" ]] || fail "the state file's best is '$(best_dir)', not ckpt-50: $(cat "$RUN/checkpoints/checkpoint")"
# keep: 1 leaves the newest (150) and the best (50, written for the mark); 100 is gone.
dirs=$(cd "$RUN/checkpoints" && ls -d ckpt-* | sort | tr '\n' ' ')
[[ "$dirs" == "ckpt-150 ckpt-50 " ]] || fail "checkpoint directories: $dirs"
"$CKPT" verify "$RUN/checkpoints/ckpt-50" > "$SCRATCH/verify.log" 2>&1 || fail "ckpt-50 does not verify: $(tail -2 "$SCRATCH/verify.log")"

# Again: it stopped early, so it stops before its first step, evaluating nothing anew.
"$TRAIN" "$LOGREG" "${common[@]}" "${impatient[@]}" > "$SCRATCH/b.log" 2>&1
rc=$?
[[ $rc == 0 ]] || fail "rerun: exit $rc: $(tail -5 "$SCRATCH/b.log")"
grep -q '^the run stopped early at step 150: accuracy has not improved on 0\.[0-9]* (step 50) for 2 evaluations (patience 2;' "$SCRATCH/b.log" \
  || fail "rerun did not say it had stopped early: $(tail -6 "$SCRATCH/b.log")"
grep -q '^no step ran' "$SCRATCH/b.log" || fail "the rerun ran steps: $(tail -6 "$SCRATCH/b.log")"
[[ "$(eval_steps)" == "50 100 150 " ]] || fail "the rerun evaluated again: $(eval_steps)"

# The best and a retained step export; another step is an error naming the retained ones.
"$TRAIN" "$LOGREG" "${common[@]}" "${impatient[@]}" --export "$SCRATCH/best.pb" --export_checkpoint best > "$SCRATCH/e1.log" 2>&1 \
  || fail "export of the best: $(tail -3 "$SCRATCH/e1.log")"
grep -q "^exported step 50 ($RUN/checkpoints/ckpt-50) to $SCRATCH/best.pb" "$SCRATCH/e1.log" || fail "export: $(head -2 "$SCRATCH/e1.log")"
"$TRAIN" "$LOGREG" "${common[@]}" "${impatient[@]}" --export "$SCRATCH/x.pb" --export_checkpoint 100 > "$SCRATCH/e2.log" 2>&1
rc=$?
[[ $rc == 1 ]] && grep -q "retains no checkpoint of step 100 (it retains 50, 150)" "$SCRATCH/e2.log" \
  || fail "export of a deleted step: exit $rc: $(tail -2 "$SCRATCH/e2.log")"
"$TRAIN" "$LOGREG" "${common[@]}" --export "$SCRATCH/x.pb" --export_checkpoint newest > "$SCRATCH/e3.log" 2>&1
rc=$?
[[ $rc == 2 ]] && grep -q "error: --export_checkpoint takes latest, best or a step number, got 'newest'" "$SCRATCH/e3.log" \
  || fail "a bad --export_checkpoint: exit $rc: $(head -2 "$SCRATCH/e3.log")"

# More patience (a changed config: --allow-drift) and a minimum of half an example: it trains to
# the last step, and the best is the evaluation with the highest accuracy (a multiple of 1e-4 over
# 10,000 examples, so eval.txt's 4 decimals are exact), the first of equals.
"$TRAIN" "$LOGREG" "${common[@]}" --set 'train.best_model={metric: "accuracy" patience: 100 min_delta: 0.00005}' --allow-drift \
  > "$SCRATCH/c.log" 2>&1
rc=$?
[[ $rc == 0 ]] || fail "run with more patience: exit $rc: $(tail -5 "$SCRATCH/c.log")"
grep -q '^eval at step 400: ' "$SCRATCH/c.log" || fail "did not train on to step 400: $(grep -v '^step ' "$SCRATCH/c.log" | tail -6)"
# The recorded best (step 50) stands unless an evaluation of this run (after 150) beats it; 100
# and 150 were judged against min_delta 0.5.
want=$(awk '/^eval at step/ { s = $4; sub(":", "", s); if (s + 0 > 50 && s + 0 <= 150) next;
             for (i = 5; i < NF; i++) if ($i == "accuracy") a = $(i + 1);
             if (best == "" || a + 0 > best + 0) { best = a; step = s } } END { print step }' "$RUN/eval.txt")
[[ "$(best_dir)" == "ckpt-$want" ]] || fail "best is $(best_dir), eval.txt says step $want: $(cat "$RUN/eval.txt")"
grep -q "^best accuracy 0\.[0-9]* at step $want: $RUN/checkpoints/ckpt-$want$" "$SCRATCH/c.log" || fail "best line: $(tail -3 "$SCRATCH/c.log")"
[[ -d "$RUN/checkpoints/ckpt-$want" ]] || fail "ckpt-$want is gone"

# A metric the model does not report: exit 2 at --validate, with the field's location.
"$TRAIN" "$LOGREG" --set 'train.best_model={metric: "acuracy"}' --validate > "$SCRATCH/d.log" 2>&1
rc=$?
[[ $rc == 2 ]] && grep -q "best_model.metric 'acuracy' is not a value this model's evaluation reports (loss, accuracy) (did you mean 'accuracy'?)" "$SCRATCH/d.log" \
  || fail "a wrong metric: exit $rc: $(tail -3 "$SCRATCH/d.log")"
echo "PASS"
