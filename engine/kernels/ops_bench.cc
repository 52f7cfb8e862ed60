// Op kernels against the machine's own limits (issue 3, "Show"):
//   - FmaPeak: an FMA loop (AVX-512 _mm512_fmadd_ps when __AVX512F__ is
//     defined, i.e. -march=native on a machine with AVX-512, else AVX2
//     _mm256_fmadd_ps) with 12 independent accumulators, on 1 and 2 threads;
//     counter GFLOPs = the measured peak, label the ISA. With AVX-512 also
//     FmaPeakAvx2, the same loop in AVX2: the ceiling of AVX2 kernels.
//   - MatMul (square float32, 256..2048) through our MatMul kernel on a CPU
//     device with 1 or 2 intra-op threads; counters GFLOPs and frac_of_peak
//     (achieved / FmaPeak measured at the same thread count in this process).
//     MatMulPaired: the same products, each round against an FMA peak
//     measured beside it; the median of the rounds' ratios with min and max,
//     and rounds_above_peak (rounds whose ratio is over 1: the machine's
//     speed changed within them). on_pool:1 calls the kernel from one of the
//     device's intra-op threads, as `train` does (its nodes run on that pool),
//     so a 2-thread product runs on the pool's two threads; on_pool:0 calls
//     it from the benchmark's thread, and the pool's idle thread spins beside
//     the two that work (three threads on a 2-core machine).
//   - Memcpy, Add and Relu on 32 MiB float32 tensors, 1 and 2 threads;
//     counters GBps (logical bytes read + written: memcpy 2N, Add 3N, Relu 2N)
//     and frac_of_memcpy (against Memcpy's GBps at the same thread count).
//   - Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter, MaxPool and
//     MaxPoolGrad at DESIGN.md's CNN shapes (batch 128: 28x28x1 -> 5x5x32
//     SAME -> pool 2x2; 14x14x32 -> 5x5x64 SAME -> pool 2x2) on 2 threads;
//     convs report GFLOPs (2 x multiply-adds), pools GBps.
//   - Dropout of fashion_cnn's fc1 activations ([128, 1024], rate 0.4), 1
//     and 2 threads.
//   - BiasRelu: the layers of the shipped models as the fusion pass leaves
//     them (one _FusedMatMul / _FusedConv2D: bias and Relu in CpuGemm's
//     epilogue; fused:1) against MatMul/Conv2D, BiasAdd and Relu one after
//     another, each reading the output of the one before (fused:0), on 2
//     threads; time per layer, and GFLOPs of the product.
// Kernels run directly (KernelRegistry::CreateKernel + OpKernel::Compute on a
// Device of our own), not through a Session, because the Session's local
// device has one process-wide intra-op thread count and we compare 1 and 2.
// Each Compute allocates its output fresh, as in a session step.
// The machine is shared and noisy, so the references (peak_GFLOPs,
// memcpy_GBps) are the best seen so far in the process: each ratio benchmark
// re-measures its reference (best of 3 short runs) just before it runs and
// keeps the maximum with what FmaPeak/Memcpy saw. The ratios are therefore
// conservative. MemcpyFreshDst shows the cost of a freshly allocated output.
//   bazel run -c opt //engine/kernels:ops_bench -- --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true   (one command line)
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "benchmark/benchmark.h"
#include "engine/framework/allocator.h"
#include "engine/framework/device.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/op_def.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/bench_kernel_runner.h"

namespace sluice {
namespace {

// ---- FMA peak ----

#if defined(__AVX512F__)
constexpr int kLanes = 16;
using VecF = __m512;
inline VecF Set1(float x) { return _mm512_set1_ps(x); }
inline VecF Fma(VecF a, VecF b, VecF c) { return _mm512_fmadd_ps(a, b, c); }
inline VecF Add(VecF a, VecF b) { return _mm512_add_ps(a, b); }
inline float Sum(VecF v) { return _mm512_reduce_add_ps(v); }
constexpr const char* kIsa = "avx512";
#else
constexpr int kLanes = 8;
using VecF = __m256;
inline VecF Set1(float x) { return _mm256_set1_ps(x); }
inline VecF Fma(VecF a, VecF b, VecF c) { return _mm256_fmadd_ps(a, b, c); }
inline VecF Add(VecF a, VecF b) { return _mm256_add_ps(a, b); }
inline float Sum(VecF v) {
  alignas(32) float f[8];
  _mm256_store_ps(f, v);
  return f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}
constexpr const char* kIsa = "avx2";
#endif
constexpr int kAcc = 12;

// kAcc independent FMA chains, `iters` steps each; returns a sum so the
// compiler keeps the work.
__attribute__((noinline)) float FmaLoop(int64_t iters) {
  VecF acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = Set1(0.001f * i);
  const VecF a = Set1(0.999999f), b = Set1(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kAcc; ++i) acc[i] = Fma(acc[i], a, b);
  }
  VecF s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = Add(s, acc[i]);
  return Sum(s);
}

constexpr int64_t kFmaIters = 4'000'000;  // ~1e8 FMA instructions per thread
double FlopsPerFmaLoop() { return 2.0 * kAcc * kLanes * static_cast<double>(kFmaIters); }

// Runs `loop` (kFmaIters iterations) on `threads` threads at once and returns
// the seconds from their common start to the last one's end: the threads are
// created and wait at a barrier first, so thread creation and exit are not
// timed (they would lower the peak, and so raise every ratio against it).
double TimeFmaLoops(int threads, float (*loop)(int64_t)) {
  using Clock = std::chrono::steady_clock;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<Clock::time_point> ends(threads);
  std::vector<float> sink(threads);
  auto body = [&](int t) {
    ready.fetch_add(1);
    while (!go.load(std::memory_order_acquire)) {
    }
    sink[t] = loop(kFmaIters);
    ends[t] = Clock::now();
  };
  std::vector<std::thread> ts;
  for (int t = 1; t < threads; ++t) ts.emplace_back(body, t);
  while (ready.load() < threads - 1) std::this_thread::yield();
  const Clock::time_point start = Clock::now();
  go.store(true, std::memory_order_release);
  body(0);
  for (auto& t : ts) t.join();
  benchmark::DoNotOptimize(sink.data());
  return std::chrono::duration<double>(*std::max_element(ends.begin(), ends.end()) - start).count();
}

double g_peak_gflops[3] = {0, 0, 0};    // by thread count
double g_memcpy_gbps[3] = {0, 0, 0};

double MeasureNow(int threads, double (*once)(int)) {
  double best = 0;
  for (int i = 0; i < 3; ++i) best = std::max(best, once(threads));
  return best;
}

double FmaOnce(int threads) { return threads * FlopsPerFmaLoop() / TimeFmaLoops(threads, FmaLoop) / 1e9; }

double PeakGflops(int threads) {
  g_peak_gflops[threads] = std::max(g_peak_gflops[threads], MeasureNow(threads, FmaOnce));
  return g_peak_gflops[threads];
}

#if defined(__AVX512F__)
// The same loop with AVX2's 8-lane FMAs, on a machine whose peak above is
// AVX-512's: the ceiling of a kernel written with AVX2 intrinsics (CpuGemm's
// micro-kernel is one).
__attribute__((noinline)) float FmaLoopAvx2(int64_t iters) {
  __m256 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_set1_ps(0.001f * i);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm256_add_ps(s, acc[i]);
  alignas(32) float f[8];
  _mm256_store_ps(f, s);
  return f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}

void BM_FmaPeakAvx2(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  double secs = 0;
  for (auto _ : state) secs += TimeFmaLoops(threads, FmaLoopAvx2);
  const double flops = 2.0 * kAcc * 8 * static_cast<double>(kFmaIters);
  state.counters["GFLOPs"] = state.iterations() * threads * flops / secs / 1e9;
  state.SetLabel("avx2");
}
#endif

void BM_FmaPeak(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  double secs = 0;
  for (auto _ : state) secs += TimeFmaLoops(threads, FmaLoop);
  const double gflops = state.iterations() * threads * FlopsPerFmaLoop() / secs / 1e9;
  g_peak_gflops[threads] = std::max(g_peak_gflops[threads], gflops);
  state.counters["GFLOPs"] = gflops;
  state.SetLabel(kIsa);
}

// Runs fn() and returns its result: with on_pool, on one of the intra-op
// threads of BenchCpuDevice(threads) while this thread waits (asleep), else
// here. A kernel called on the pool runs as `train` runs it: its parallel
// pieces go to the pool's other threads, and no thread outside the pool
// competes with them for the cores.
template <typename Fn>
auto OnDevicePoolIf(bool on_pool, int threads, const Fn& fn) -> decltype(fn()) {
  if (!on_pool) return fn();
  decltype(fn()) result{};
  absl::Notification done;
  BenchCpuDevice(threads)->intra_op_pool()->Schedule([&] {
    result = fn();
    done.Notify();
  });
  done.WaitForNotification();
  return result;
}

// Runs the kernel in the timing loop; returns the loop's wall seconds, or a
// negative number (state skipped) on error. Counters are computed from these
// seconds as plain values (not kIsRate, which would print "/s" on ratios).
double Loop(benchmark::State& state, KernelRunner& r) {
  if (!r.status().ok()) {
    state.SkipWithError(std::string(r.status().message()).c_str());
    return -1;
  }
  auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    absl::Status s = r.Run();
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return -1;
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- MatMul ----

void BM_MatMul(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const double peak = PeakGflops(threads);
  KernelRunner r(threads, "MatMul", {{"T", MakeAttr(DT_FLOAT)}},
                 {BenchRandom(TensorShape({n, n})), BenchRandom(TensorShape({n, n}))});
  const double secs = Loop(state, r);
  if (secs < 0) return;
  const double gflops = state.iterations() * 2.0 * n * n * n / secs / 1e9;
  state.counters["GFLOPs"] = gflops;
  state.counters["frac_of_peak"] = gflops / peak;
  state.counters["peak_GFLOPs"] = peak;
}

// The same square product against the peak measured beside it: `kPairRounds`
// rounds, each the FMA loop on `threads` threads and MatMuls, in alternating
// order, each side the best of 3 short runs (the loop once, ~13 ms; MatMuls
// for >= 10 ms); the ratio is taken within each round and reported as its
// median, min and max (frac_of_peak, frac_min, frac_max). This machine's speed
// swings by 10-25% between runs (other guests on the host), which moves a
// ratio against a peak measured earlier in the process, but moves both halves
// of one round together, and best-of-3 on both sides drops the same short
// interruptions from each. One iteration runs all rounds. rounds_above_peak
// counts the rounds whose ratio is above 1, which only a change of the
// machine's speed within the round produces: with any, distrust the spread.
constexpr int kPairRounds = 9;

void BM_MatMulPaired(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  KernelRunner r(threads, "MatMul", {{"T", MakeAttr(DT_FLOAT)}},
                 {BenchRandom(TensorShape({n, n})), BenchRandom(TensorShape({n, n}))});
  if (!r.status().ok()) {
    state.SkipWithError(std::string(r.status().message()).c_str());
    return;
  }
  // MatMuls for at least `min_secs`; returns their GFLOP/s (negative on error).
  // One untimed MatMul first: the FMA loop before it left the pool's threads
  // asleep, and the first product would time their wake-up.
  auto matmul_gflops = [&](double min_secs) -> double {
    if (!r.Run().ok()) return -1;
    int64_t runs = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double secs = 0;
    do {
      if (!r.Run().ok()) return -1;
      ++runs;
      secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (secs < min_secs);
    return runs * 2.0 * n * n * n / secs / 1e9;
  };
  // MatMuls for at least `min_secs` as above, called from this thread or, with
  // on_pool, from one of the device's intra-op threads (one hand-off per
  // timed run, not per MatMul).
  const bool on_pool = state.range(2) != 0;
  auto timed = [&](double min_secs) {
    return OnDevicePoolIf(on_pool, threads, [&] { return matmul_gflops(min_secs); });
  };
  std::vector<double> ratios;
  for (auto _ : state) {
    ratios.clear();
    if (timed(0.05) < 0) {  // warm-up: packing buffers, allocator cache
      state.SkipWithError("MatMul failed");
      return;
    }
    for (int round = 0; round < kPairRounds; ++round) {
      auto best_matmul = [&]() -> double {
        double best = 0;
        for (int i = 0; i < 3; ++i) {
          const double gflops = timed(0.01);
          if (gflops < 0) return -1;
          best = std::max(best, gflops);
        }
        return best;
      };
      double peak, achieved;
      if (round % 2 == 0) {
        peak = MeasureNow(threads, FmaOnce);
        achieved = best_matmul();
      } else {
        achieved = best_matmul();
        peak = MeasureNow(threads, FmaOnce);
      }
      if (achieved <= 0) {
        state.SkipWithError("MatMul failed");
        return;
      }
      ratios.push_back(achieved / peak);
    }
  }
  std::sort(ratios.begin(), ratios.end());
  state.counters["frac_of_peak"] = ratios[ratios.size() / 2];
  state.counters["frac_min"] = ratios.front();
  state.counters["frac_max"] = ratios.back();
  // A product cannot beat the FMA loop it is made of: a round above 1 means
  // the machine's speed changed between its two halves, and the run's spread
  // says more about the host than about the kernel.
  state.counters["rounds_above_peak"] =
      static_cast<double>(std::count_if(ratios.begin(), ratios.end(), [](double r) { return r > 1.0; }));
}

// One MatMul of [m, k] x [k, n] (operands stored transposed where ta / tb) on
// `threads` threads, with its GFLOP/s and fraction of the FMA peak.
struct MatMulShape {
  int64_t m, k, n;
  bool ta, tb;
};

// on_pool: the timed loop runs on one of the device's intra-op threads
// (OnDevicePoolIf), as `train` calls the kernel.
void RunMatMulShape(benchmark::State& state, const MatMulShape& sh, int threads, bool on_pool) {
  const double peak = PeakGflops(threads);
  KernelRunner r(threads, "MatMul",
                 {{"T", MakeAttr(DT_FLOAT)}, {"transpose_a", MakeAttr(sh.ta)}, {"transpose_b", MakeAttr(sh.tb)}},
                 {BenchRandom(sh.ta ? TensorShape({sh.k, sh.m}) : TensorShape({sh.m, sh.k})),
                  BenchRandom(sh.tb ? TensorShape({sh.n, sh.k}) : TensorShape({sh.k, sh.n}))});
  const double secs = OnDevicePoolIf(on_pool, threads, [&] { return Loop(state, r); });
  if (secs < 0) return;
  const double gflops = state.iterations() * 2.0 * sh.m * sh.n * sh.k / secs / 1e9;
  state.counters["GFLOPs"] = gflops;
  state.counters["frac_of_peak"] = gflops / peak;
}

// The products of a step of configs/text_lstm.pbtxt (batch 32, 35 steps,
// LSTM 256, embedding 128, 512 sampled classes), as MatMul sees them:
// 0: h R, [32,256] x [256,1024], every forward step;
// 1: dz R^T with R^T made once before the loop, [32,1024] x [1024,256];
// 2: the recurrent kernel's gradient after the loop, [1120,256]^T x [1120,1024];
// 3: the sampled logits, [1120,256] x [513,256]^T (true class and 512 sampled);
// 4, 5: their gradients for h and for the sampled rows, [1120,513] x [513,256]
//       and [1120,513]^T x [1120,256];
// 6: the input projection, [1120,128] x [128,1024];
// 7, 8: its gradients, [1120,1024] x [128,1024]^T and [1120,128]^T x [1120,1024].
void BM_MatMulLstmShapes(benchmark::State& state) {
  static const MatMulShape kShapes[] = {{32, 256, 1024, false, false}, {32, 1024, 256, false, false},
                                        {256, 1120, 1024, true, false}, {1120, 256, 513, false, true},
                                        {1120, 513, 256, false, false}, {513, 1120, 256, true, false},
                                        {1120, 128, 1024, false, false}, {1120, 1024, 128, false, true},
                                        {128, 1120, 1024, true, false}};
  RunMatMulShape(state, kShapes[state.range(0)], static_cast<int>(state.range(1)), state.range(2) != 0);
}

// The large products of a step of configs/fashion_mlp.pbtxt (batch 128,
// 784-512-512-10), as MatMul sees them (the forward ones run fused with their
// bias and Relu, which this leaves out):
// 0, 1: the forward products of fc1 and fc2, [128,784] x [784,512] and
//       [128,512] x [512,512];
// 2: fc2's input gradient, [128,512] x [512,512]^T;
// 3, 4: the kernel gradients of fc2 and fc1, [128,512]^T x [128,512] and
//       [128,784]^T x [128,512].
void BM_MatMulMlpShapes(benchmark::State& state) {
  static const MatMulShape kShapes[] = {{128, 784, 512, false, false}, {128, 512, 512, false, false},
                                        {128, 512, 512, false, true},  {512, 128, 512, true, false},
                                        {784, 128, 512, true, false},
                                        // fashion_cnn's fc1: forward, dx, dW
                                        {128, 3136, 1024, false, false}, {128, 1024, 3136, false, true},
                                        {3136, 128, 1024, true, false}};
  RunMatMulShape(state, kShapes[state.range(0)], static_cast<int>(state.range(1)), state.range(2) != 0);
}

// ---- Elementwise against memcpy ----

constexpr int64_t kElemBytes = 32 << 20;  // 32 MiB per tensor
constexpr int64_t kElems = kElemBytes / sizeof(float);

// Copies `bytes` on `threads` threads, each its own contiguous slice.
void ParallelMemcpy(char* dst, const char* src, int64_t bytes, int threads) {
  if (threads == 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const int64_t chunk = (bytes / threads + 63) / 64 * 64;
  std::vector<std::thread> ts;
  for (int t = 1; t < threads; ++t) {
    const int64_t b = std::min(bytes, t * chunk), e = std::min(bytes, (t + 1) * chunk);
    ts.emplace_back([=] { std::memcpy(dst + b, src + b, e - b); });
  }
  std::memcpy(dst, src, std::min(bytes, chunk));
  for (auto& t : ts) t.join();
}

struct CopyBuffers {
  std::vector<char> src = std::vector<char>(kElemBytes, 1), dst = std::vector<char>(kElemBytes, 0);
};
CopyBuffers& Buffers() {
  static CopyBuffers* b = new CopyBuffers;
  return *b;
}

double MemcpyOnce(int threads) {
  CopyBuffers& b = Buffers();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i) ParallelMemcpy(b.dst.data(), b.src.data(), kElemBytes, threads);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 4 * 2.0 * kElemBytes / s / 1e9;
}

double MemcpyGbps(int threads) {
  g_memcpy_gbps[threads] = std::max(g_memcpy_gbps[threads], MeasureNow(threads, MemcpyOnce));
  return g_memcpy_gbps[threads];
}

void SetBandwidth(benchmark::State& state, double secs, double bytes_per_iter, double ref_gbps) {
  const double gbps = state.iterations() * bytes_per_iter / secs / 1e9;
  state.counters["GBps"] = gbps;
  if (ref_gbps > 0) state.counters["frac_of_memcpy"] = gbps / ref_gbps;
}

void BM_Memcpy(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  CopyBuffers& b = Buffers();
  auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    ParallelMemcpy(b.dst.data(), b.src.data(), kElemBytes, threads);
    benchmark::ClobberMemory();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  g_memcpy_gbps[threads] = std::max(g_memcpy_gbps[threads], 2.0 * kElemBytes * state.iterations() / secs / 1e9);
  SetBandwidth(state, secs, 2.0 * kElemBytes, 0);
}

// memcpy into a destination allocated fresh each time from CpuAllocator(), as
// a kernel's output is: adds the allocation and first-touch page faults (a
// 32 MiB block is above glibc's mmap threshold, so it is mmap'ed and
// munmap'ed every time). Not the reference for frac_of_memcpy; shows how much
// of the kernels' gap is the fresh output.
void BM_MemcpyFreshDst(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  CopyBuffers& b = Buffers();
  auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    char* dst = static_cast<char*>(CpuAllocator()->AllocateRaw(64, kElemBytes));
    ParallelMemcpy(dst, b.src.data(), kElemBytes, threads);
    benchmark::ClobberMemory();
    CpuAllocator()->DeallocateRaw(dst, kElemBytes);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  SetBandwidth(state, secs, 2.0 * kElemBytes, MemcpyGbps(threads));
}

void BM_Add(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const double ref = MemcpyGbps(threads);
  KernelRunner r(threads, "Add", {{"T", MakeAttr(DT_FLOAT)}},
                 {BenchRandom(TensorShape({kElems})), BenchRandom(TensorShape({kElems}))});
  const double secs = Loop(state, r);
  if (secs < 0) return;
  SetBandwidth(state, secs, 3.0 * kElemBytes, ref);
  state.counters["memcpy_GBps"] = ref;
}

// Small elementwise ops, where fixed costs (allocation, hand-offs to the
// intra-op pool) show: Add of two [rows, 1024] tensors; rows 32 is the LSTM
// step's z = x_t + h R (128 KiB per tensor).
void BM_AddSmall(benchmark::State& state) {
  const int64_t rows = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  KernelRunner r(threads, "Add", {{"T", MakeAttr(DT_FLOAT)}},
                 {BenchRandom(TensorShape({rows, 1024})), BenchRandom(TensorShape({rows, 1024}))});
  const double secs = Loop(state, r);
  if (secs < 0) return;
  state.counters["GBps"] = state.iterations() * 3.0 * rows * 1024 * sizeof(float) / secs / 1e9;
}

void BM_Relu(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const double ref = MemcpyGbps(threads);
  KernelRunner r(threads, "Relu", {{"T", MakeAttr(DT_FLOAT)}}, {BenchRandom(TensorShape({kElems}))});
  const double secs = Loop(state, r);
  if (secs < 0) return;
  SetBandwidth(state, secs, 2.0 * kElemBytes, ref);
  state.counters["memcpy_GBps"] = ref;
}

// Dropout (rate 0.4, as fashion_cnn's) of fashion_cnn's fc1 activations,
// [128, 1024]: the Philox stream, the mask and the scaled output; GBps counts
// the input read and the two outputs written.
void BM_Dropout(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  KernelRunner r(threads, "Dropout",
                 {{"T", MakeAttr(DT_FLOAT)}, {"seed", MakeAttr(int64_t{1})}, {"seed2", MakeAttr(int64_t{2})}},
                 {BenchRandom(TensorShape({128, 1024})), Tensor::Scalar<float>(0.4f), Tensor::Scalar<int64_t>(7)});
  const double secs = Loop(state, r);
  if (secs < 0) return;
  state.counters["GBps"] = state.iterations() * 3.0 * 128 * 1024 * sizeof(float) / secs / 1e9;
}

// ---- Conv2D and MaxPool, forward and backward ----

struct Layer {
  TensorShape input, filter, output, pooled;
};
Layer GetLayer(int layer) {
  if (layer == 1) {
    return {TensorShape({128, 28, 28, 1}), TensorShape({5, 5, 1, 32}), TensorShape({128, 28, 28, 32}),
            TensorShape({128, 14, 14, 32})};
  }
  return {TensorShape({128, 14, 14, 32}), TensorShape({5, 5, 32, 64}), TensorShape({128, 14, 14, 64}),
          TensorShape({128, 7, 7, 64})};
}
double ConvFlops(const Layer& l) {
  return 2.0 * l.output.num_elements() * l.filter.num_elements() / l.filter.dim_size(3);
}
std::map<std::string, AttrValue> ConvAttrs() {
  return {{"T", MakeAttr(DT_FLOAT)},
          {"strides", MakeAttr(std::vector<int64_t>{1, 1, 1, 1})},
          {"padding", MakeAttr("SAME")}};
}
std::map<std::string, AttrValue> PoolAttrs() {
  return {{"T", MakeAttr(DT_FLOAT)},
          {"ksize", MakeAttr(std::vector<int64_t>{1, 2, 2, 1})},
          {"strides", MakeAttr(std::vector<int64_t>{1, 2, 2, 1})},
          {"padding", MakeAttr("SAME")}};
}
void SetConvFlops(benchmark::State& state, double secs, double flops, int threads) {
  if (secs < 0) return;
  const double gflops = state.iterations() * flops / secs / 1e9;
  state.counters["GFLOPs"] = gflops;
  state.counters["frac_of_peak"] = gflops / PeakGflops(threads);
}

constexpr int kConvThreads = 2;

void BM_Conv2D(benchmark::State& state) {
  Layer l = GetLayer(static_cast<int>(state.range(0)));
  KernelRunner r(kConvThreads, "Conv2D", ConvAttrs(), {BenchRandom(l.input), BenchRandom(l.filter)});
  SetConvFlops(state, Loop(state, r), ConvFlops(l), kConvThreads);
}
void BM_Conv2DBackpropInput(benchmark::State& state) {
  Layer l = GetLayer(static_cast<int>(state.range(0)));
  KernelRunner r(kConvThreads, "Conv2DBackpropInput", ConvAttrs(), {BenchDims(l.input), BenchRandom(l.filter), BenchRandom(l.output)});
  SetConvFlops(state, Loop(state, r), ConvFlops(l), kConvThreads);
}
void BM_Conv2DBackpropFilter(benchmark::State& state) {
  Layer l = GetLayer(static_cast<int>(state.range(0)));
  KernelRunner r(kConvThreads, "Conv2DBackpropFilter", ConvAttrs(), {BenchRandom(l.input), BenchDims(l.filter), BenchRandom(l.output)});
  SetConvFlops(state, Loop(state, r), ConvFlops(l), kConvThreads);
}
// Pools: bytes = input read + output written (MaxPoolGrad: orig input,
// orig output and grad read, input-sized gradient written).
void BM_MaxPool(benchmark::State& state) {
  Layer l = GetLayer(static_cast<int>(state.range(0)));
  KernelRunner r(kConvThreads, "MaxPool", PoolAttrs(), {BenchRandom(l.output)});
  const double secs = Loop(state, r);
  if (secs >= 0) {
    SetBandwidth(state, secs, 4.0 * (l.output.num_elements() + l.pooled.num_elements()), MemcpyGbps(kConvThreads));
  }
}
// `op`: MaxPoolGrad, or _FusedMaxPoolGrad (with ReluGrad's mask and the bias
// gradient; the same bytes).
void RunMaxPoolGrad(benchmark::State& state, const char* op) {
  Layer l = GetLayer(static_cast<int>(state.range(0)));
  Tensor x = BenchRandom(l.output);
  KernelRunner fwd(kConvThreads, "MaxPool", PoolAttrs(), {x});
  std::vector<Tensor> y;
  absl::Status s = fwd.status().ok() ? fwd.Run(&y) : fwd.status();
  if (!s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  KernelRunner r(kConvThreads, op, PoolAttrs(), {x, y[0], BenchRandom(l.pooled)});
  const double secs = Loop(state, r);
  if (secs >= 0) {
    SetBandwidth(state, secs, 4.0 * (2 * l.output.num_elements() + 2 * l.pooled.num_elements()),
                 MemcpyGbps(kConvThreads));
  }
}
void BM_MaxPoolGrad(benchmark::State& state) { RunMaxPoolGrad(state, "MaxPoolGrad"); }
void BM_FusedMaxPoolGrad(benchmark::State& state) { RunMaxPoolGrad(state, "_FusedMaxPoolGrad"); }

// ---- Bias + activation fusion ----

// Case c: 0-1 fashion_mlp's fc1 and fc2, 2 fashion_cnn's fc1 (dense, batch
// 128), 3-4 fashion_cnn's conv1 and conv2 (GetLayer).
struct BiasReluCase {
  bool conv;
  TensorShape x, w;
  int64_t channels;
  double flops;
};
BiasReluCase GetBiasReluCase(int c) {
  if (c >= 3) {
    Layer l = GetLayer(c - 2);
    return {true, l.input, l.filter, l.filter.dim_size(3), ConvFlops(l)};
  }
  const int64_t k[] = {784, 512, 3136}, n[] = {512, 512, 1024};
  return {false, TensorShape({128, k[c]}), TensorShape({k[c], n[c]}), n[c], 2.0 * 128 * k[c] * n[c]};
}

void BM_BiasRelu(benchmark::State& state) {
  const BiasReluCase c = GetBiasReluCase(static_cast<int>(state.range(0)));
  const bool fused = state.range(1) != 0;
  std::map<std::string, AttrValue> attrs = c.conv ? ConvAttrs() : std::map<std::string, AttrValue>{
                                                                      {"T", MakeAttr(DT_FLOAT)}};
  const Tensor x = BenchRandom(c.x), w = BenchRandom(c.w), bias = BenchRandom(TensorShape({c.channels}));
  double secs = -1;
  if (fused) {
    attrs["fused_ops"] = MakeAttr(std::vector<std::string>{"BiasAdd", "Relu"});
    attrs["num_args"] = MakeAttr(int64_t{1});
    KernelRunner r(kConvThreads, c.conv ? "_FusedConv2D" : "_FusedMatMul", attrs, {x, w, bias});
    secs = Loop(state, r);
  } else {
    KernelRunner product(kConvThreads, c.conv ? "Conv2D" : "MatMul", attrs, {x, w});
    std::vector<Tensor> out;
    absl::Status s = product.status().ok() ? product.Run(&out) : product.status();
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
    KernelRunner add(kConvThreads, "BiasAdd", {{"T", MakeAttr(DT_FLOAT)}}, {out[0], bias});
    KernelRunner relu(kConvThreads, "Relu", {{"T", MakeAttr(DT_FLOAT)}}, {out[0]});
    if (!add.status().ok() || !relu.status().ok()) {
      state.SkipWithError("BiasAdd or Relu kernel missing");
      return;
    }
    auto t0 = std::chrono::steady_clock::now();
    for (auto _ : state) {
      absl::Status st = product.Run(&out);
      if (st.ok()) {
        add.SetInput(0, out[0]);
        st = add.Run(&out);
      }
      if (st.ok()) {
        relu.SetInput(0, out[0]);
        st = relu.Run();
      }
      if (!st.ok()) {
        state.SkipWithError(std::string(st.message()).c_str());
        return;
      }
    }
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  SetConvFlops(state, secs, c.flops, kConvThreads);
}

// ---- FusedBatchNormV3 and its gradient (training) ----

// Case c: 0 the census resnet_bn's batch norms, [8, 28, 28, 16] NHWC; 1 a
// ResNet's first stage at batch 32, [32, 56, 56, 64] NHWC; 2 the same in NCHW.
// GBps counts the least traffic: x read and y written (forward); dy and x
// read and dx written (gradient).
struct NormCase {
  TensorShape x;
  bool nchw;
};
NormCase GetNormCase(int c) {
  if (c == 0) return {TensorShape({8, 28, 28, 16}), false};
  if (c == 1) return {TensorShape({32, 56, 56, 64}), false};
  return {TensorShape({32, 64, 56, 56}), true};
}

void RunNorm(benchmark::State& state, bool gradient) {
  const NormCase c = GetNormCase(static_cast<int>(state.range(0)));
  const int threads = static_cast<int>(state.range(1));
  const int64_t channels = c.x.dim_size(c.nchw ? 1 : 3);
  std::map<std::string, AttrValue> attrs = {{"T", MakeAttr(DT_FLOAT)},
                                            {"U", MakeAttr(DT_FLOAT)},
                                            {"epsilon", MakeAttr(0.001f)},
                                            {"is_training", MakeAttr(true)},
                                            {"data_format", MakeAttr(std::string(c.nchw ? "NCHW" : "NHWC"))}};
  const Tensor x = BenchRandom(c.x, -2, 3), scale = BenchRandom(TensorShape({channels}), 0.5, 2);
  const Tensor empty(DT_FLOAT, TensorShape({0}));
  std::vector<Tensor> inputs;
  if (gradient) {
    inputs = {BenchRandom(c.x), x, scale, BenchRandom(TensorShape({channels}), 0.4, 0.6),
              BenchRandom(TensorShape({channels}), 2, 2.2), empty};
  } else {
    attrs["exponential_avg_factor"] = MakeAttr(1.0f);
    inputs = {x, scale, BenchRandom(TensorShape({channels})), empty, empty};
  }
  const double ref = MemcpyGbps(threads);
  KernelRunner r(threads, gradient ? "FusedBatchNormGradV3" : "FusedBatchNormV3", attrs, inputs);
  const double secs = Loop(state, r);
  if (secs < 0) return;
  SetBandwidth(state, secs, (gradient ? 3.0 : 2.0) * c.x.num_elements() * sizeof(float), ref);
}
void BM_FusedBatchNorm(benchmark::State& state) { RunNorm(state, false); }
void BM_FusedBatchNormGrad(benchmark::State& state) { RunNorm(state, true); }

// ---- Small batched products (BatchMatMulV2) ----

// The census attention block's (8 sequences, 4 heads, 16 positions, 8 dims
// per head): case 0 the scores q k^T, [32,16,8] x [32,16,8]^T; case 1 the
// context, [32,16,16] x [32,16,8]; case 2 a gradient, [32,16,16]^T x
// [32,16,8]. GFLOPs counts 2 m n k per batch.
void BM_BatchMatMulSmall(benchmark::State& state) {
  const int c = static_cast<int>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const TensorShape x[] = {TensorShape({32, 16, 8}), TensorShape({32, 16, 16}), TensorShape({32, 16, 16})};
  const TensorShape y[] = {TensorShape({32, 16, 8}), TensorShape({32, 16, 8}), TensorShape({32, 16, 8})};
  const bool adj_x[] = {false, false, true}, adj_y[] = {true, false, false};
  const int64_t m = 16, n = c == 0 ? 16 : 8, k = c == 0 ? 8 : 16;
  KernelRunner r(threads, "BatchMatMulV2",
                 {{"T", MakeAttr(DT_FLOAT)}, {"adj_x", MakeAttr(adj_x[c])}, {"adj_y", MakeAttr(adj_y[c])}},
                 {BenchRandom(x[c]), BenchRandom(y[c])});
  const double secs = Loop(state, r);
  if (secs < 0) return;
  state.counters["GFLOPs"] = state.iterations() * 2.0 * 32 * m * n * k / secs / 1e9;
}

// ---- Erfc (GELU's) ----

// Erfc of the census attention block's GELU input, [8, 16, 128] (case 0), and
// of 1M floats (case 1), against libm's erfcf in a plain loop over the same
// values (`libm` 1), both uniform in [-4, 4).
void BM_Erfc(benchmark::State& state) {
  const int64_t n = state.range(0) == 0 ? 8 * 16 * 128 : int64_t{1} << 20;
  const Tensor x = BenchRandom(TensorShape({n}), -4, 4);
  double secs = -1;
  if (state.range(1) != 0) {
    std::vector<float> out(n);
    const float* in = x.data<float>();
    auto t0 = std::chrono::steady_clock::now();
    for (auto _ : state) {
      for (int64_t i = 0; i < n; ++i) out[i] = erfcf(in[i]);
      benchmark::DoNotOptimize(out.data());
    }
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } else {
    KernelRunner r(1, "Erfc", {{"T", MakeAttr(DT_FLOAT)}}, {x});
    secs = Loop(state, r);
  }
  if (secs < 0) return;
  state.counters["ns_per_value"] = secs * 1e9 / (state.iterations() * static_cast<double>(n));
}

// The peak and memcpy references run first (registration order) and record
// their best rate for the ratios below.

BENCHMARK(BM_FmaPeak)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
#if defined(__AVX512F__)
BENCHMARK(BM_FmaPeakAvx2)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
#endif
BENCHMARK(BM_MatMul)
    ->ArgsProduct({{256, 512, 1024, 2048}, {1, 2}})
    ->ArgNames({"n", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatMulPaired)
    ->ArgsProduct({{512, 1024, 2048}, {1, 2}, {0, 1}})
    ->ArgNames({"n", "threads", "on_pool"})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatMulLstmShapes)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7, 8}, {1, 2}, {0, 1}})
    ->ArgNames({"shape", "threads", "on_pool"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatMulMlpShapes)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {1, 2}, {0, 1}})
    ->ArgNames({"shape", "threads", "on_pool"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Memcpy)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MemcpyFreshDst)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Add)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AddSmall)
    ->ArgsProduct({{32, 64, 128, 256, 512}, {1, 2}})
    ->ArgNames({"rows", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Relu)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
#define SLUICE_LAYER_ARGS Arg(1)->Arg(2)->ArgName("layer")->UseRealTime()->Unit(benchmark::kMillisecond)
BENCHMARK(BM_Conv2D)->SLUICE_LAYER_ARGS;
BENCHMARK(BM_Conv2DBackpropInput)->SLUICE_LAYER_ARGS;
BENCHMARK(BM_Conv2DBackpropFilter)->SLUICE_LAYER_ARGS;
BENCHMARK(BM_Dropout)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaxPool)->SLUICE_LAYER_ARGS;
BENCHMARK(BM_MaxPoolGrad)->SLUICE_LAYER_ARGS;
BENCHMARK(BM_FusedMaxPoolGrad)->SLUICE_LAYER_ARGS;
BENCHMARK(BM_BiasRelu)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {0, 1}})
    ->ArgNames({"case", "fused"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BatchMatMulSmall)
    ->ArgsProduct({{0, 1, 2}, {1, 2}})
    ->ArgNames({"case", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Erfc)->ArgsProduct({{0, 1}, {0, 1}})->ArgNames({"case", "libm"})->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FusedBatchNorm)
    ->ArgsProduct({{0, 1, 2}, {1, 2}})
    ->ArgNames({"case", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FusedBatchNormGrad)
    ->ArgsProduct({{0, 1, 2}, {1, 2}})
    ->ArgNames({"case", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
