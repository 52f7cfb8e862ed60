#!/usr/bin/env bash
# configs/text_lstm.pbtxt end to end (issue 19): the word-level LSTM language
# model on the fortunes corpus, with partitioned embeddings and sampled
# softmax, trains and reports a test perplexity (full softmax) far below the
# 10,000 of a uniform guess; and with async replication over two ps tasks its
# table parts go one per ps task and 10 steps end with the same loss as the
# single process.
set -uo pipefail
source tests/train_testlib.sh
FORTUNES=/usr/share/games/fortunes/fortunes
if [[ ! -r "$FORTUNES" ]]; then
  echo "SKIP: the fortunes package is not installed ($FORTUNES)"
  exit 0
fi
LM_CONFIG="$PWD/configs/text_lstm.pbtxt"
common=(--set train.eval_every_steps=0 --set train.deterministic=true --set checkpoint.every_steps=0
        --set monitoring.metrics_port=-1 --set summaries.every_steps=0
        --set devices.intra_op_threads=1 --set devices.inter_op_threads=1)

timeout 300 "$TRAIN" "$LM_CONFIG" --run_dir "$SCRATCH/lm" --set train.steps=100 "${common[@]}" \
  >"$SCRATCH/lm.log" 2>&1 || { cat "$SCRATCH/lm.log"; fail "train exited $?"; }
for v in embed/embeddings/part_1 lstm/recurrent_kernel sampled_softmax/weights/part_1; do
  grep -q "$v" "$SCRATCH/lm.log" || fail "the plan lists no $v"
done
ppl=$(sed -n 's/^eval at step 100: .*perplexity \([0-9.]*\).*/\1/p' "$SCRATCH/lm.log")
[[ -n "$ppl" ]] || { cat "$SCRATCH/lm.log"; fail "no eval with a perplexity at step 100"; }
awk -v p="$ppl" 'BEGIN { exit !(p < 900) }' || fail "test perplexity $ppl after 100 steps, expected < 900"
echo "test perplexity after 100 steps: $ppl"

# Ten steps, in one process and over ps=2,worker=1 with async replication.
(cat "$LM_CONFIG"; echo 'replication { async {} }') >"$SCRATCH/lm_async.pbtxt"
timeout 120 "$TRAIN" "$LM_CONFIG" --run_dir "$SCRATCH/one" --set train.steps=10 "${common[@]}" \
  >"$SCRATCH/one.log" 2>&1 || { cat "$SCRATCH/one.log"; fail "the 10-step run exited $?"; }
timeout 180 "$TRAIN" "$SCRATCH/lm_async.pbtxt" --run_dir "$SCRATCH/cluster" --set train.steps=10 "${common[@]}" \
  --local_cluster ps=2,worker=1 >"$SCRATCH/cluster.log" 2>&1 || { cat "$SCRATCH/cluster.log"; fail "the cluster exited $?"; }
for t in 0 1; do
  vars=$(sed -n "s|^\[worker:0\] *.*/job:ps/replica:0/task:$t/device:CPU:0 *nodes .*variables \([0-9,]*\) .*|\1|p" \
           "$SCRATCH/cluster.log" | head -1 | tr -d ,)
  [[ -n "$vars" && "$vars" -gt 1000000 ]] || { cat "$SCRATCH/cluster.log"; fail "ps:$t holds '$vars' variable elements"; }
  echo "ps:$t holds $vars variable elements"
done
one=$(last_loss "$SCRATCH/one.log")
cluster=$(sed -n 's/^\[worker:0\] last step 10 loss //p' "$SCRATCH/cluster.log")
[[ -n "$one" && "$one" == "$cluster" ]] || fail "10 steps: loss $one in one process, '$cluster' in the cluster"
echo "10 steps: loss $one in one process and in the cluster"
echo PASS
