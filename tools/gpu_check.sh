#!/usr/bin/env bash
# The GPU checks of issue 17 in one go, for a lent GPU machine (it cannot build or install):
# run from the repository root there, with the bundle of tools/gpu_bundle.sh in BUNDLE (default
# ./gpu_bundle). Every check runs even when an earlier one fails; the log goes to stdout and,
# when $OUT is set (the device tool), to $OUT/gpu_check.log.
#   1. nvidia-smi; every GPU test binary in the bundle (kernels against their CPU twins), then
#      the convolution tests once more under each forced layout and input-gradient way;
#   2. fashion_mlp for 300 steps on the GPU (the plan must name the GPU);
#   3. fashion_cnn's full schedule (4700 steps, eval at the end) on the GPU: its test accuracy
#      against the CPU run's (README: 92.2%), within 0.3 points;
#   4. tests/bench/gpu_vs_torch (steps/s against PyTorch on the same GPU);
#   5. threads (not in the default set): Sluice alone, all four configurations, at each
#      devices.intra_op_threads of ${THREADS:-1 2 4 $(nproc)} (tools/gpu_ab.py: ms per step,
#      ${ROUNDS:-3} rounds with the settings interleaved; single rounds moved by 25% there);
#   6. staging (not in the default set): deterministic fashion_mlp runs staged and not must end
#      with the same loss, then the same A/B as threads for input.train.stage_next_batch true
#      (each batch dequeued and copied to the GPU beside the step before) and false;
#   7. convs (not in the default set): the cuDNN plan of each fashion_cnn convolution at batch
#      128 and 1024 (SLUICE_CUDNN_LOG=1), and the A/B of the input gradient searched both ways
#      (the default) against cuDNN's backward-data algorithms only;
#   8. trace (not in the default set): three traced steps (250-252) of fashion_mlp and of
#      fashion_cnn at batch ${TRACE_BATCH:-128} on the GPU, summarized by tools/trace_summary.py
#      (host time per device and op, idle time between nodes); with TRACE_DEVICE_TIME=1
#      (train --trace_device_time, one thread, the shared pool's, so that records do not overlap) each
#      GPU node's duration is its GPU time instead; TRACE_FLAGS adds train flags (e.g.
#      "--set input.train.stage_next_batch=true"); the traces go to $OUT/traces/ when $OUT is set.
# Usage: bash tools/gpu_check.sh [checks...]   (default: tests mlp cnn bench)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
BUNDLE=${BUNDLE:-gpu_bundle}
LOG=${OUT:-/tmp}/gpu_check.log
exec > >(tee "$LOG") 2>&1
checks=("${@:-tests mlp cnn bench}")
checks=(${checks[*]})
RUN="$PWD/$BUNDLE/run.sh"
DATA="$PWD/$BUNDLE/data"
CONFIGS="$PWD/$BUNDLE/configs"  # the configs with their data paths pointing at $DATA
"$RUN" true || { echo "gpu_check: the bundle does not unpack"; exit 1; }
failures=()
# Short runs: no periodic evaluation, summaries or checkpoints (the final ones stay), no metrics server.
train_only=(--set train.eval_every_steps=0 --set summaries.every_steps=0 --set checkpoint.every_steps=0
            --set monitoring.metrics_port=-1)
step() { echo; echo "=== $* ($(date +%T))"; }
nvidia-smi -L || true
grep -m1 "model name" /proc/cpuinfo || true
for check in "${checks[@]}"; do
  case $check in
    tests)
      for t in "$BUNDLE"/.unpacked/bin/*; do
        [[ "$(basename "$t")" == train ]] && continue
        step "test $(basename "$t")"
        timeout "${TEST_TIMEOUT:-60}" "$RUN" "$t" 2>&1 | tail -n 60
        rc=${PIPESTATUS[0]}
        echo "exit $rc"
        ((rc == 0)) || failures+=("test $(basename "$t")")
      done
      # The convolutions again in each layout and each way of computing the input gradient
      # (the timed search picks one per shape; these force every pair).
      # The tests that the input-gradient way does not touch run once per layout (with 'forward').
      t="$BUNDLE/.unpacked/bin/cudnn_ops_gpu_test"
      input_grad='CudnnOpsGpu.Conv2DBackpropInput*:CudnnOpsGpu.ConvolutionsWithTransforms*:CudnnOpsGpu.Double*'
      for layout in NCHW NHWC; do
        for way in forward backward; do
          filter=$input_grad
          [[ $way == forward ]] && filter+=':CudnnOpsGpu.Conv2DMatchesCpu:CudnnOpsGpu.Conv2DBackpropFilter*:CudnnOpsGpu.Fused*'
          step "test cudnn_ops_gpu_test, SLUICE_CUDNN_LAYOUT=$layout SLUICE_CUDNN_INPUT_GRADIENT=$way"
          SLUICE_CUDNN_LAYOUT=$layout SLUICE_CUDNN_INPUT_GRADIENT=$way timeout "${TEST_TIMEOUT:-60}" "$RUN" "$t" \
            --gtest_filter="$filter" 2>&1 | tail -n 30
          rc=${PIPESTATUS[0]}
          echo "exit $rc"
          ((rc == 0)) || failures+=("test cudnn_ops_gpu_test $layout $way")
        done
      done ;;
    mlp)
      step "fashion_mlp, 300 steps"
      timeout 90 "$RUN" train "$CONFIGS/fashion_mlp.pbtxt" --run_dir /tmp/gpu_mlp \
        --set train.steps=300 --set train.eval_every_steps=300 --set train.log_every_steps=50 2>&1 | tail -n 40
      rc=${PIPESTATUS[0]}; echo "exit $rc"; ((rc == 0)) || failures+=(mlp) ;;
    cnn)
      step "fashion_cnn, the full schedule"
      timeout 240 "$RUN" train "$CONFIGS/fashion_cnn.pbtxt" --run_dir /tmp/gpu_cnn \
        --set train.steps="${CNN_STEPS:-4700}" \
        --set train.eval_every_steps="${CNN_STEPS:-4700}" --set train.log_every_steps=500 2>&1 | tail -n 40 | tee /tmp/gpu_cnn.log
      rc=${PIPESTATUS[0]}; echo "exit $rc"; ((rc == 0)) || failures+=(cnn)
      acc=$(grep -o "eval at step ${CNN_STEPS:-4700}: loss [^ ]* accuracy [0-9.]*" /tmp/gpu_cnn.log | awk '{print $NF}')
      echo "fashion_cnn GPU test accuracy: ${acc:-none} (CPU: 0.922)"
      python3 -c "import sys; a=float(sys.argv[1]); print('within 0.3 points' if abs(a-0.922)<=0.003 else 'NOT within 0.3 points'); sys.exit(0 if abs(a-0.922)<=0.003 else 1)" "${acc:-0}" ||
        failures+=(cnn_accuracy) ;;
    bench)
      step "gpu_vs_torch"
      # About 60 s a round on an H200 (4 configurations, both systems, their start-ups).
      SLUICE_TRAIN="$RUN train" SLUICE_FASHION_DIR="$DATA" timeout $((120 + 90 * ${ROUNDS:-1})) \
        python3 tests/bench/gpu_vs_torch \
        --rounds "${ROUNDS:-1}" ${BENCH_FLAGS:-} 2>&1
      rc=$?; echo "exit $rc"; ((rc == 0)) || failures+=(bench) ;;
    threads)
      # Sluice alone at each intra-op thread count (with one CPU device, nodes and kernels'
      # loops share that pool), interleaved round by round by tools/gpu_ab.py.
      variants=()
      for t in ${THREADS:-1 2 4 $(nproc)}; do variants+=("threads$t --set devices.intra_op_threads=$t"); done
      step "threads: ${THREADS:-1 2 4 $(nproc)}"
      BUNDLE="$BUNDLE" timeout $((60 + 60 * ${ROUNDS:-3})) python3 tools/gpu_ab.py --rounds "${ROUNDS:-3}" \
        --models cnn,mlp "${variants[@]}" 2>&1
      rc=$?; echo "exit $rc"; ((rc == 0)) || failures+=(threads) ;;
    staging)
      # The next batch staged beside each step (input.train.stage_next_batch, off by default
      # until this A/B says otherwise) against dequeued in the step, interleaved round by
      # round by tools/gpu_ab.py.
      # First the same losses both ways (deterministic: the same examples in the same order; a
      # sanity check: a missing wait for a staged copy would rarely show in a loss, which
      # StagingGpu tests with the copies held back), then the timing.
      step "staging: fashion_mlp at batch 1024, deterministic, 300 steps, staged and not"
      for stage in true false; do
        rm -rf "/tmp/gpu_stage_$stage"
        timeout 120 "$RUN" train "$CONFIGS/fashion_mlp.pbtxt" --run_dir "/tmp/gpu_stage_$stage" \
          --set train.steps=300 --set train.deterministic=true --set input.train.batch_size=1024 \
          --set input.train.stage_next_batch=$stage "${train_only[@]}" 2>&1 | grep "^last step" >"/tmp/gpu_stage_$stage.loss"
        echo "stage_next_batch=$stage: $(cat "/tmp/gpu_stage_$stage.loss")"
      done
      if [[ -s /tmp/gpu_stage_true.loss ]] && cmp -s /tmp/gpu_stage_true.loss /tmp/gpu_stage_false.loss; then
        echo "staged and unstaged: the same final loss"
      else
        echo "staged and unstaged: final losses differ or missing"; failures+=(staging_losses)
      fi
      step "staging: input.train.stage_next_batch true / false"
      BUNDLE="$BUNDLE" timeout $((60 + 60 * ${ROUNDS:-3})) python3 tools/gpu_ab.py --rounds "${ROUNDS:-3}" \
        --models cnn,mlp 'staged --set input.train.stage_next_batch=true' \
        'in_step --set input.train.stage_next_batch=false' 2>&1
      rc=$?; echo "exit $rc"; ((rc == 0)) || failures+=(staging) ;;
    convs)
      # Which plan each of fashion_cnn's convolutions gets (layout, algorithm, the input
      # gradient as a forward convolution or not), then the A/B of that input-gradient choice.
      for batch in 128 1024; do
        step "convs: cuDNN plans of fashion_cnn at batch $batch"
        rm -rf "/tmp/gpu_plans_$batch"  # a run left there would resume at its last step and plan nothing
        SLUICE_CUDNN_LOG=1 timeout 120 "$RUN" train "$CONFIGS/fashion_cnn.pbtxt" --run_dir "/tmp/gpu_plans_$batch" \
          --set train.steps=3 "${train_only[@]}" --set input.train.batch_size=$batch 2>&1 |
          grep -E "cuDNN plan|error"
        rc=${PIPESTATUS[0]}; echo "exit $rc"; ((rc == 0)) || failures+=("convs plans $batch")
      done
      step "convs: input gradient searched both ways (default) / backward-data algorithms only"
      BUNDLE="$BUNDLE" timeout $((60 + 60 * ${ROUNDS:-3})) python3 tools/gpu_ab.py --rounds "${ROUNDS:-3}" \
        --models cnn default 'backward_only SLUICE_CUDNN_INPUT_GRADIENT=backward' 2>&1
      rc=$?; echo "exit $rc"; ((rc == 0)) || failures+=(convs) ;;
    trace)
      device_time=()
      if [[ "${TRACE_DEVICE_TIME:-0}" == 1 ]]; then
        device_time=(--trace_device_time --set devices.intra_op_threads=1)
      fi
      for model in fashion_mlp fashion_cnn; do
        step "trace: $model, batch ${TRACE_BATCH:-128}, steps 250-252 ${device_time[*]}"
        rm -rf "/tmp/gpu_trace_$model"
        timeout 120 "$RUN" train "$CONFIGS/$model.pbtxt" --run_dir "/tmp/gpu_trace_$model" \
          --set train.steps=253 "${train_only[@]}" --set input.train.batch_size="${TRACE_BATCH:-128}" \
          --trace_steps=250-252 "${device_time[@]}" ${TRACE_FLAGS:-} 2>&1 | tail -n 5
        rc=${PIPESTATUS[0]}; echo "exit $rc"
        traces=("/tmp/gpu_trace_$model"/traces/step_*.json)
        if ((rc != 0)) || [[ ! -e "${traces[0]}" ]]; then failures+=("trace $model"); continue; fi
        python3 tools/trace_summary.py --top 12 "${traces[@]}" || failures+=("trace_summary $model")
        if [[ -n "${OUT:-}" ]]; then
          mkdir -p "$OUT/traces/$model" && cp "${traces[@]}" "$OUT/traces/$model/"
        fi
      done ;;
    *)
      echo "gpu_check: unknown check '$check' (tests, mlp, cnn, bench, threads, staging, convs, trace)"
      failures+=("$check") ;;
  esac
done
echo
echo "gpu_check: ${#failures[@]} failed${failures[*]:+: ${failures[*]}}"
((${#failures[@]} == 0))
