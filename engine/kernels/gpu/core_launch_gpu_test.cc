// Direct checks of the core launch functions (cwise_gpu.h, bias_gpu.h) and
// of the row-major cuBLAS mapping matmul_ops_gpu.cc uses, against host
// references, with no device runtime or session involved: the first thing
// to run on a GPU machine when a kernel is in doubt. Also prints
// BiasAddGrad timings. Without a GPU it prints "SKIP: no GPU" and passes.
#include "engine/runtime/gpu/cublas_loader.h"
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include "engine/kernels/gpu/bias_gpu.h"
#include "engine/runtime/gpu/gpu_test_util.h"
#include "engine/kernels/gpu/cwise_gpu.h"
using namespace sluice::gpu;  // NOLINT (a test program)
static int fails = 0;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA ERR %s at %s:%d: %s\n", cudaGetErrorString(e), __FILE__, __LINE__, #x); fails++; } } while (0)
template <typename T> T* Dev(const std::vector<T>& h) { T* d; CK(cudaMalloc(&d, std::max<size_t>(1, h.size() * sizeof(T)))); CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice)); return d; }
template <typename T> std::vector<T> Host(const T* d, size_t n) { std::vector<T> h(n); CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost)); return h; }
std::vector<float> Rand(size_t n, int seed, float lo = -1, float hi = 1) { std::mt19937 g(seed); std::uniform_real_distribution<float> d(lo, hi); std::vector<float> v(n); for (auto& x : v) x = d(g); return v; }
void Cmp(const char* what, const std::vector<float>& ref, const std::vector<float>& got, double tol) {
  int bad = 0; for (size_t i = 0; i < ref.size(); ++i) if (!(std::fabs(ref[i] - got[i]) <= tol * (1 + std::fabs(ref[i])))) { if (bad++ < 3) printf("  %s: [%zu] ref %g got %g\n", what, i, ref[i], got[i]); }
  printf("%s %s (%zu elems)\n", bad ? "FAIL" : "ok  ", what, ref.size()); if (bad) fails++;
}
// Broadcast reference over full-rank shapes.
void BroadcastCase(std::vector<int64_t> xs, std::vector<int64_t> ys) {
  int r = std::max(xs.size(), ys.size()); while ((int)xs.size() < r) xs.insert(xs.begin(), 1); while ((int)ys.size() < r) ys.insert(ys.begin(), 1);
  std::vector<int64_t> os(r); int64_t n = 1, nx = 1, ny = 1; for (int i = 0; i < r; ++i) { os[i] = std::max(xs[i], ys[i]); n *= os[i]; nx *= xs[i]; ny *= ys[i]; }
  auto x = Rand(nx, 1), y = Rand(ny, 2);
  std::vector<float> ref(n);
  for (int64_t i = 0; i < n; ++i) { int64_t rem = i, xo = 0, yo = 0, sx = 1, sy = 1; for (int d = r - 1; d >= 0; --d) { int64_t idx = rem % os[d]; rem /= os[d]; xo += (xs[d] == 1 ? 0 : idx) * sx; yo += (ys[d] == 1 ? 0 : idx) * sy; sx *= xs[d]; sy *= ys[d]; } ref[i] = x[xo] - y[yo]; }
  // Uncollapsed shape as a general broadcast (rank r, strides).
  BroadcastShape s; s.rank = r; int64_t sx = 1, sy = 1; for (int d = r - 1; d >= 0; --d) { s.dims[d] = os[d]; s.x_strides[d] = xs[d] == 1 ? 0 : sx; s.y_strides[d] = ys[d] == 1 ? 0 : sy; sx *= xs[d]; sy *= ys[d]; }
  float *dx = Dev(x), *dy = Dev(y), *dout; CK(cudaMalloc(&dout, n * 4));
  CK(LaunchBinary(0, BinaryOp::kSub, ElemType::kFloat, dx, dy, dout, n, BroadcastMode::kGeneral, s));
  char buf[64]; snprintf(buf, sizeof buf, "broadcast sub rank %d n=%ld", r, (long)n); Cmp(buf, ref, Host(dout, n), 1e-6);
  cudaFree(dx); cudaFree(dy); cudaFree(dout);
}
int main() {
  if (!sluice::gpu::HaveGpu()) { printf("SKIP: no GPU\n"); return 0; }
  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0); printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  // Same-shape, scalar, vector tails (also misaligned by offsetting).
  for (int64_t n : {1L, 3L, 4L, 1000L, (1L << 20) + 3}) for (int off : {0, 1}) {
    auto x = Rand(n + 1, 3), y = Rand(n + 1, 4, 0.5, 2);
    float *dx = Dev(x), *dy = Dev(y), *dout; CK(cudaMalloc(&dout, (n + 1) * 4));
    std::vector<float> ref(n);
    for (int64_t i = 0; i < n; ++i) ref[i] = x[i + off] / y[i + off];
    CK(LaunchBinary(0, BinaryOp::kDiv, ElemType::kFloat, dx + off, dy + off, dout + off, n, BroadcastMode::kSame, {}));
    char b[64]; snprintf(b, sizeof b, "div same n=%ld off=%d", (long)n, off); Cmp(b, ref, Host(dout + off, n), 1e-6);
    for (int64_t i = 0; i < n; ++i) ref[i] = x[i + off] * y[0];
    CK(LaunchBinary(0, BinaryOp::kMul, ElemType::kFloat, dx + off, dy, dout + off, n, BroadcastMode::kYScalar, {}));
    snprintf(b, sizeof b, "mul yscalar n=%ld off=%d", (long)n, off); Cmp(b, ref, Host(dout + off, n), 1e-6);
    for (int64_t i = 0; i < n; ++i) ref[i] = y[0] > x[i + off] ? 1 : 0;
    bool* db; CK(cudaMalloc(&db, n + 1));
    CK(LaunchBinary(0, BinaryOp::kGreater, ElemType::kFloat, dy, dx + off, db + off, n, BroadcastMode::kXScalar, {}));
    auto hb = Host((const uint8_t*)(db + off), n); std::vector<float> got(n); for (int64_t i = 0; i < n; ++i) got[i] = hb[i];
    snprintf(b, sizeof b, "greater xscalar n=%ld off=%d", (long)n, off); Cmp(b, ref, got, 0);
    for (int64_t i = 0; i < n; ++i) ref[i] = 1.f / (1.f + std::exp(-x[i + off]));
    CK(LaunchUnary(0, UnaryOp::kSigmoid, ElemType::kFloat, dx + off, dout + off, n));
    snprintf(b, sizeof b, "sigmoid n=%ld off=%d", (long)n, off); Cmp(b, ref, Host(dout + off, n), 1e-6);
    cudaFree(dx); cudaFree(dy); cudaFree(dout); cudaFree(db);
  }
  BroadcastCase({1024, 512}, {512}); BroadcastCase({1024, 512}, {1024, 1}); BroadcastCase({3, 1, 5}, {4, 1});
  BroadcastCase({2, 1, 3, 1, 5}, {1, 4, 1, 6, 1}); BroadcastCase({2049, 1, 513}, {1, 3, 1});
  // Cast float -> int32 -> float; AddN 11 inputs; fill.
  { int64_t n = 100003; auto x = Rand(n, 5, -1000, 1000); float* dx = Dev(x); int32_t* di; float* dout; CK(cudaMalloc(&di, n * 4)); CK(cudaMalloc(&dout, n * 4));
    CK(LaunchCast(0, ElemType::kFloat, ElemType::kInt32, dx, di, n)); CK(LaunchCast(0, ElemType::kInt32, ElemType::kFloat, di, dout, n));
    std::vector<float> ref(n); for (int64_t i = 0; i < n; ++i) ref[i] = (float)(int32_t)x[i]; Cmp("cast f->i32->f", ref, Host(dout, n), 0);
    std::vector<const void*> ins; std::vector<float> sum(n, 0.f); for (int k = 0; k < 11; ++k) { auto v = Rand(n, 100 + k); for (int64_t i = 0; i < n; ++i) sum[i] += v[i]; ins.push_back(Dev(v)); }
    CK(LaunchAddN(0, ElemType::kFloat, ins.data(), 11, dout, n)); Cmp("addn 11", sum, Host(dout, n), 1e-5);
    CK(LaunchFillFromDevice(0, ElemType::kFloat, dx + 7, dout, n)); Cmp("fill", std::vector<float>(n, x[7]), Host(dout, n), 0);
  }
  // BiasAdd + BiasAddGrad.
  struct BC { int64_t outer, c, inner; };
  for (BC b : {BC{128, 512, 1}, BC{1024, 512, 1}, BC{1024, 10, 1}, BC{4096, 300, 1}, BC{50176, 32, 1}, BC{8, 6, 35}, BC{64, 32, 784}, BC{0, 5, 1}, BC{3, 7, 0}}) {
    int64_t n = b.outer * b.c * b.inner; auto x = Rand(n, 9), bias = Rand(b.c, 10);
    float *dx = Dev(x), *db = Dev(bias), *dout, *dg, *tmp; CK(cudaMalloc(&dout, std::max<int64_t>(n, 1) * 4)); CK(cudaMalloc(&dg, b.c * 4));
    std::vector<float> ref(n); std::vector<double> g(b.c, 0);
    for (int64_t o = 0; o < b.outer; ++o) for (int64_t c = 0; c < b.c; ++c) for (int64_t i = 0; i < b.inner; ++i) { int64_t k = (o * b.c + c) * b.inner + i; ref[k] = x[k] + bias[c]; g[c] += x[k]; }
    CK(LaunchBiasAdd(0, ElemType::kFloat, dx, db, dout, b.outer, b.c, b.inner));
    char s[96]; snprintf(s, sizeof s, "biasadd %ld,%ld,%ld", (long)b.outer, (long)b.c, (long)b.inner); Cmp(s, ref, Host(dout, n), 1e-6);
    BiasGradPlan plan = PlanBiasGrad(b.outer, b.c, b.inner, prop.multiProcessorCount);
    CK(cudaMalloc(&tmp, plan.splits * b.c * 4));
    CK(LaunchBiasAddGrad(0, ElemType::kFloat, plan, dx, dg, tmp, b.outer, b.c, b.inner));
    std::vector<float> gf(g.begin(), g.end());
    snprintf(s, sizeof s, "biasgrad %ld,%ld,%ld splits=%ld", (long)b.outer, (long)b.c, (long)b.inner, (long)plan.splits); Cmp(s, gf, Host(dg, b.c), 1e-4);
    // timing
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); cudaEventRecord(e0);
    for (int it = 0; it < 100; ++it) LaunchBiasAddGrad(0, ElemType::kFloat, plan, dx, dg, tmp, b.outer, b.c, b.inner);
    cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1);
    printf("     biasgrad time %.2f us (%.1f GB/s)\n", ms * 10, n * 4 / (ms * 1e-2) / 1e6);
    cudaFree(dx); cudaFree(db); cudaFree(dout); cudaFree(dg); cudaFree(tmp);
  }
  // cuBLAS row-major mapping check (same formula as matmul_ops_gpu.cc).
  if (!sluice::gpu::LoadCublas().ok()) { printf("FAIL: cannot load cuBLAS\n"); return 1; }
  cublasHandle_t h; cublasCreate(&h);
  for (int ta = 0; ta < 2; ++ta) for (int tb = 0; tb < 2; ++tb) {
    int64_t m = 67, n = 45, k = 33; auto a = Rand(m * k, 11), bm = Rand(k * n, 12);
    int64_t lda = ta ? m : k, ldb = tb ? k : n;
    std::vector<float> ref(m * n, 0);
    for (int64_t i = 0; i < m; ++i) for (int64_t j = 0; j < n; ++j) { double s = 0; for (int64_t p = 0; p < k; ++p) s += (double)(ta ? a[p * m + i] : a[i * k + p]) * (tb ? bm[j * k + p] : bm[p * n + j]); ref[i * n + j] = s; }
    float *da = Dev(a), *dbm = Dev(bm), *dc; CK(cudaMalloc(&dc, m * n * 4)); const float one = 1, zero = 0;
    cublasStatus_t st = cublasSgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, dbm, ldb, da, lda, &zero, dc, n);
    if (st != CUBLAS_STATUS_SUCCESS) { printf("cublas err %d\n", st); fails++; }
    char s[64]; snprintf(s, sizeof s, "sgemm ta=%d tb=%d", ta, tb); Cmp(s, ref, Host(dc, m * n), 1e-5);
  }
  CK(cudaDeviceSynchronize());
  printf(fails ? "FAILURES: %d\n" : "ALL OK\n", fails);
  return fails ? 1 : 0;
}
