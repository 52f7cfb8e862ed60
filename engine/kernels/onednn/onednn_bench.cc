// Issue 18's evaluation: our CPU kernels against oneDNN's (engine/kernels/
// onednn, Label("onednn")), each run as a kernel would be in a step, at the
// shapes of the shipped models (batch 128), on 1 and 2 intra-op threads:
//   - Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter and _FusedConv2D
//     (bias + Relu) at configs/fashion_cnn.pbtxt's two layers (28x28x1 ->
//     5x5x32 SAME; 14x14x32 -> 5x5x64 SAME);
//   - MatMul at fashion_mlp's and fashion_cnn's dense layers, forward and the
//     two gradient products (transpose_b for dx, transpose_a for dW), and the
//     square products 512, 1024 and 2048 of the MatMul goal;
//   - MaxPool and MaxPoolGrad 2x2/2 after each conv layer.
// The oneDNN side is the kernel itself: primitives built once per shape and
// cached, reorders between our NHWC / HWIO tensors and oneDNN's blocked
// layouts inside the timed work, one-thread primitives over the intra-op
// pool. Conv kernels run with SetConvPreferOursWhereFaster(false), i.e.
// oneDNN for every shape. Counters: GFLOPs (2 x multiply-adds; pools: GBps
// of input + output bytes), tasks (the process's threads after the run: no
// OpenMP threads appear). Ratios: onednn_table.py.
// Command (one line):
//   bazel run //engine/kernels/onednn:onednn_bench --
//     --benchmark_enable_random_interleaving=true --benchmark_repetitions=9
//     --benchmark_out=/tmp/onednn.json --benchmark_out_format=json
#include <dirent.h>

#include <chrono>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "engine/kernels/bench_kernel_runner.h"
#include "engine/kernels/onednn/conv_ops.h"
#include "engine/kernels/onednn/onednn_util.h"
#include "engine/kernels/winograd_conv.h"

namespace sluice {
namespace {


int CountThreads() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// impl 0: our kernel, 1: oneDNN's, 2: the Winograd kernel (convolutions only;
// shapes it does not take run ours).
std::string Label(int impl) { return impl == 1 ? onednn::kLabel : impl == 2 ? winograd::kLabel : ""; }
const char* ImplName(int impl) { return impl == 1 ? " onednn" : impl == 2 ? " winograd" : " ours"; }

// Times `r` and sets the rate counters; `work` is FLOPs (or bytes) per run.
void Time(benchmark::State& state, KernelRunner& r, double work, const char* counter, const std::string& what) {
  if (!r.status().ok()) {
    state.SkipWithError(std::string(r.status().message()).c_str());
    return;
  }
  absl::Status s = r.Run();  // warm-up: builds and caches the plans
  if (!s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    s = r.Run();
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  state.counters[counter] = state.iterations() * work / secs / 1e9;
  state.counters["tasks"] = CountThreads();
  state.SetLabel(what);
}

// ---- Conv2D family ----

struct ConvLayer {
  TensorShape input, filter, output;
};
ConvLayer GetConvLayer(int layer) {
  if (layer == 1) return {TensorShape({128, 28, 28, 1}), TensorShape({5, 5, 1, 32}), TensorShape({128, 28, 28, 32})};
  return {TensorShape({128, 14, 14, 32}), TensorShape({5, 5, 32, 64}), TensorShape({128, 14, 14, 64})};
}
std::map<std::string, AttrValue> ConvAttrs() {
  return {{"T", MakeAttr(DT_FLOAT)},
          {"strides", MakeAttr(std::vector<int64_t>{1, 1, 1, 1})},
          {"padding", MakeAttr("SAME")}};
}

// case = (layer - 1) * 4 + op; op 0 Conv2D, 1 Conv2DBackpropInput,
// 2 Conv2DBackpropFilter, 3 _FusedConv2D (BiasAdd, Relu).
void BM_Conv(benchmark::State& state) {
  onednn::SetConvPreferOursWhereFaster(false);
  const int layer = static_cast<int>(state.range(0)) / 4 + 1, op = static_cast<int>(state.range(0)) % 4;
  const int impl = static_cast<int>(state.range(1)), threads = static_cast<int>(state.range(2));
  const ConvLayer l = GetConvLayer(layer);
  const double flops = 2.0 * l.output.num_elements() * l.filter.num_elements() / l.filter.dim_size(3);
  static const char* kOps[] = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "_FusedConv2D"};
  std::vector<Tensor> inputs;
  std::map<std::string, AttrValue> attrs = ConvAttrs();
  switch (op) {
    case 0: inputs = {BenchRandom(l.input), BenchRandom(l.filter)}; break;
    case 1: inputs = {BenchDims(l.input), BenchRandom(l.filter), BenchRandom(l.output)}; break;
    case 2: inputs = {BenchRandom(l.input), BenchDims(l.filter), BenchRandom(l.output)}; break;
    default:
      inputs = {BenchRandom(l.input), BenchRandom(l.filter), BenchRandom(TensorShape({l.filter.dim_size(3)}))};
      attrs["fused_ops"] = MakeAttr(std::vector<std::string>{"BiasAdd", "Relu"});
      attrs["num_args"] = MakeAttr(int64_t{1});
  }
  KernelRunner r(threads, kOps[op], attrs, inputs, Label(impl));
  Time(state, r, flops, "GFLOPs",
       std::string(kOps[op]) + " layer " + std::to_string(layer) + ImplName(impl));
}

// ---- MatMul ----

struct MatMulShape {
  const char* what;
  int64_t m, k, n;
  bool ta, tb;
};
const MatMulShape kMatMuls[] = {
    {"mlp fc1 x W [128,784]x[784,512]", 128, 784, 512, false, false},
    {"mlp fc1 dW x^T dy [784,128]x[128,512]", 784, 128, 512, true, false},
    {"mlp fc2 x W [128,512]x[512,512]", 128, 512, 512, false, false},
    {"mlp fc2 dx dy W^T [128,512]x[512,512]", 128, 512, 512, false, true},
    {"mlp fc2 dW x^T dy [512,128]x[128,512]", 512, 128, 512, true, false},
    {"cnn fc1 x W [128,3136]x[3136,1024]", 128, 3136, 1024, false, false},
    {"cnn fc1 dx dy W^T [128,1024]x[1024,3136]", 128, 1024, 3136, false, true},
    {"cnn fc1 dW x^T dy [3136,128]x[128,1024]", 3136, 128, 1024, true, false},
    {"cnn logits x W [128,1024]x[1024,10]", 128, 1024, 10, false, false},
    {"cnn logits dW x^T dy [1024,128]x[128,10]", 1024, 128, 10, true, false},
    // The square products of issue 18's MatMul goal (ops_bench's BM_MatMulPaired).
    {"square [512,512]x[512,512]", 512, 512, 512, false, false},
    {"square [1024,1024]x[1024,1024]", 1024, 1024, 1024, false, false},
    {"square [2048,2048]x[2048,2048]", 2048, 2048, 2048, false, false},
};

void BM_MatMul(benchmark::State& state) {
  const MatMulShape& sh = kMatMuls[state.range(0)];
  const int impl = static_cast<int>(state.range(1)), threads = static_cast<int>(state.range(2));
  KernelRunner r(threads, "MatMul",
                 {{"T", MakeAttr(DT_FLOAT)}, {"transpose_a", MakeAttr(sh.ta)}, {"transpose_b", MakeAttr(sh.tb)}},
                 {BenchRandom(sh.ta ? TensorShape({sh.k, sh.m}) : TensorShape({sh.m, sh.k})),
                  BenchRandom(sh.tb ? TensorShape({sh.n, sh.k}) : TensorShape({sh.k, sh.n}))},
                 Label(impl));
  Time(state, r, 2.0 * sh.m * sh.n * sh.k, "GFLOPs", std::string(sh.what) + (impl ? " onednn" : " ours"));
}

// ---- MaxPool, MaxPoolGrad (2x2, stride 2, SAME) ----

// case = (layer - 1) * 2 + grad.
void BM_Pool(benchmark::State& state) {
  const int layer = static_cast<int>(state.range(0)) / 2 + 1, grad = static_cast<int>(state.range(0)) % 2;
  const int impl = static_cast<int>(state.range(1)), threads = static_cast<int>(state.range(2));
  const ConvLayer l = GetConvLayer(layer);
  const TensorShape pooled({128, l.output.dim_size(1) / 2, l.output.dim_size(2) / 2, l.output.dim_size(3)});
  std::map<std::string, AttrValue> attrs = {{"T", MakeAttr(DT_FLOAT)},
                                            {"ksize", MakeAttr(std::vector<int64_t>{1, 2, 2, 1})},
                                            {"strides", MakeAttr(std::vector<int64_t>{1, 2, 2, 1})},
                                            {"padding", MakeAttr("SAME")}};
  const Tensor x = BenchRandom(l.output);
  const std::string what = std::string(grad ? "MaxPoolGrad" : "MaxPool") + " layer " + std::to_string(layer) +
                           (impl ? " onednn" : " ours");
  if (!grad) {
    KernelRunner r(threads, "MaxPool", attrs, {x}, Label(impl));
    Time(state, r, 4.0 * (l.output.num_elements() + pooled.num_elements()), "GBps", what);
    return;
  }
  KernelRunner fwd(threads, "MaxPool", attrs, {x});
  std::vector<Tensor> y;
  absl::Status s = fwd.status().ok() ? fwd.Run(&y) : fwd.status();
  if (!s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  KernelRunner r(threads, "MaxPoolGrad", attrs, {x, y[0], BenchRandom(pooled)}, Label(impl));
  Time(state, r, 4.0 * (2 * l.output.num_elements() + 2 * pooled.num_elements()), "GBps", what);
}

BENCHMARK(BM_Conv)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2}, {1, 2}})
    ->ArgNames({"case", "onednn", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatMul)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {0, 1}, {1, 2}})
    ->ArgNames({"shape", "onednn", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Pool)
    ->ArgsProduct({{0, 1, 2, 3}, {0, 1}, {1, 2}})
    ->ArgNames({"case", "onednn", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
