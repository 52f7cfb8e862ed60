// CPU kernels for FusedBatchNormV3 and FusedBatchNormGradV3. x is viewed as
// [outer, C, inner] (channels last: inner = 1; channels first: outer = N).
// Training: y uses the batch mean and biased variance; batch_variance is the
// unbiased one, blended into the given running values when
// exponential_avg_factor != 1; reserve_space_1/2 keep the batch mean and
// biased variance for the gradient. Inference: the given mean and variance.
// reserve_space_3/4/5 are empty.
// _FusedBatchNormEx (engine/ops/batch_norm_ops.cc) is FusedBatchNormV3's
// kernel with an epilogue in its last pass: + side_input, then Relu.
// _FusedBatchNormGradEx is FusedBatchNormGradV3's with y_backprop masked by
// y > 0 block by block in the first pass (the mask written to
// side_input_backprop, or to dx, which the second pass reads and overwrites).
//
// How: the statistics accumulate in double, in blocks of whole outer indices
// (about 32K elements each where the shape allows: at least one outer index,
// at most 128 blocks, and their count depends only on the shape). A block
// takes its own mean and sum of squared deviations in two passes over its
// elements (cache-resident for blocks of that size), and the blocks combine
// in order (Chan, Golub and LeVeque's pairwise update), so the result does
// not depend on the threads and a large mean costs no precision.
// y = (x - mean) * scale / sqrt(var + eps) + offset, and dx, are then
// computed per element in float (double for double tensors) from
// per-channel factors, with the mean split in two (Centers) so that x - mean
// keeps its precision. Blocks run on the intra-op pool when the tensor is
// large. Inner loops use 4-lane double (simd::Double4) and 8-lane float GCC
// vectors (AVX2 where the target has it).
// Thread safety: kernels are stateless.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/float_vec.h"
#include "engine/kernels/run_tasks.h"

namespace sluice {
namespace {

using D4 = simd::Double4;
typedef float F8 __attribute__((vector_size(32)));

struct Layout {
  int64_t outer = 1, channels = 1, inner = 1;
  int64_t count() const { return outer * inner; }  // elements per channel
  int64_t elements() const { return outer * channels * inner; }
};

absl::Status ReadFormat(OpKernelConstruction* ctx, bool* channels_first) {
  std::string format = "NHWC";
  if (ctx->def().attr().count("data_format")) {
    absl::Status s = ctx->GetAttr("data_format", &format);
    if (!s.ok()) return s;
  }
  if (format != "NHWC" && format != "NCHW" && format != "NDHWC" && format != "NCDHW") {
    return absl::InvalidArgumentError(
        absl::StrCat("data_format must be NHWC, NCHW, NDHWC or NCDHW, got '", format, "'"));
  }
  *channels_first = format == "NCHW" || format == "NCDHW";
  return absl::OkStatus();
}

absl::Status MakeLayout(const Tensor& x, bool channels_first, Layout* l) {
  if (x.dims() != 4 && x.dims() != 5) {
    return absl::InvalidArgumentError(absl::StrCat("x must have rank 4 or 5, got shape ", x.shape().DebugString()));
  }
  const int c = channels_first ? 1 : x.dims() - 1;
  l->channels = x.dim_size(c);
  l->outer = l->inner = 1;
  for (int d = 0; d < c; ++d) l->outer *= x.dim_size(d);
  for (int d = c + 1; d < x.dims(); ++d) l->inner *= x.dim_size(d);
  return absl::OkStatus();
}

absl::Status CheckChannelVector(const Tensor& v, const char* name, int64_t channels) {
  if (v.dims() != 1 || v.dim_size(0) != channels) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be a vector of the ", channels,
                                                   " channels of x, got shape ", v.shape().DebugString()));
  }
  return absl::OkStatus();
}

// ---- Blocks ----

constexpr int64_t kBlockElements = int64_t{1} << 15;
constexpr int64_t kMaxBlocks = 128;
// Below this many elements the blocks run on the calling thread.
constexpr int64_t kParallelElements = int64_t{1} << 17;

// Block t covers the outer indices [t * per, min(outer, (t + 1) * per)).
struct Blocks {
  int64_t count = 0, per = 1;
};

Blocks MakeBlocks(const Layout& l) {
  Blocks b;
  if (l.outer == 0) return b;
  const int64_t row = std::max<int64_t>(l.channels * l.inner, 1);
  b.per = std::max<int64_t>(1, kBlockElements / row);
  // Each block keeps two doubles per channel: at most one block per 64
  // elements of a channel keeps them under a sixteenth of a float tensor's
  // bytes (x = [128, 1, 1, 10^6] would otherwise take 128 blocks, 2 GB).
  const int64_t max_blocks = std::min(kMaxBlocks, std::max<int64_t>(1, l.count() / 64));
  b.per = std::max(b.per, (l.outer + max_blocks - 1) / max_blocks);
  b.count = (l.outer + b.per - 1) / b.per;
  return b;
}

// fn(t, first outer index, last) for every block, on the intra-op pool when
// the tensor is large.
template <typename Fn>
void ForBlocks(OpKernelContext* ctx, const Layout& l, const Blocks& b, const Fn& fn) {
  const auto& device = ctx->eigen_cpu_device();
  Eigen::ThreadPoolInterface* pool =
      l.elements() >= kParallelElements && device.numThreads() > 1 ? device.getPool() : nullptr;
  RunTasks(pool, b.count, [&](int64_t t) { fn(t, t * b.per, std::min(l.outer, (t + 1) * b.per)); });
}

// ---- Vectors ----

// Four elements of x as doubles.
template <typename T>
inline D4 Load4(const T* p) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return simd::Load4(p);
  } else {
    return D4{static_cast<double>(p[0]), static_cast<double>(p[1]), static_cast<double>(p[2]),
              static_cast<double>(p[3])};
  }
}
inline D4 LoadD4(const double* p) { return simd::Load4(p); }
inline void StoreD4(double* p, D4 v) { simd::Store4(p, v); }
inline double Sum4(D4 v) { return (v[0] + v[1]) + (v[2] + v[3]); }

// ---- Statistics: rows of C channels (inner == 1) and runs of one channel ----

// The row functions take `rows` rows of C channels and add four rows at a
// time into the per-channel sums: one row at a time, each sum's load, add and
// store would wait for the previous row's (about 10 cycles a row for C = 16).

// acc[c] += the rows' x[c].
template <typename T>
void AddRows(const T* x, int64_t rows, int64_t C, double* acc) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4, x += 4 * C) {
    int64_t c = 0;
    for (; c + 4 <= C; c += 4) {
      const D4 v = (Load4(x + c) + Load4(x + C + c)) + (Load4(x + 2 * C + c) + Load4(x + 3 * C + c));
      StoreD4(acc + c, LoadD4(acc + c) + v);
    }
    for (; c < C; ++c) {
      acc[c] += (static_cast<double>(x[c]) + static_cast<double>(x[C + c])) +
                (static_cast<double>(x[2 * C + c]) + static_cast<double>(x[3 * C + c]));
    }
  }
  for (; r < rows; ++r, x += C) {
    for (int64_t c = 0; c < C; ++c) acc[c] += static_cast<double>(x[c]);
  }
}

// acc[c] += the rows' (x[c] - center[c])^2.
template <typename T>
void AddSquaresRows(const T* x, int64_t rows, int64_t C, const double* center, double* acc) {
  auto square = [](D4 d) { return d * d; };
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4, x += 4 * C) {
    int64_t c = 0;
    for (; c + 4 <= C; c += 4) {
      const D4 m = LoadD4(center + c);
      const D4 v = (square(Load4(x + c) - m) + square(Load4(x + C + c) - m)) +
                   (square(Load4(x + 2 * C + c) - m) + square(Load4(x + 3 * C + c) - m));
      StoreD4(acc + c, LoadD4(acc + c) + v);
    }
    for (; c < C; ++c) {
      const double d0 = static_cast<double>(x[c]) - center[c], d1 = static_cast<double>(x[C + c]) - center[c];
      const double d2 = static_cast<double>(x[2 * C + c]) - center[c];
      const double d3 = static_cast<double>(x[3 * C + c]) - center[c];
      acc[c] += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
    }
  }
  for (; r < rows; ++r, x += C) {
    for (int64_t c = 0; c < C; ++c) {
      const double d = static_cast<double>(x[c]) - center[c];
      acc[c] += d * d;
    }
  }
}

// sum_dy[c] += the rows' dy[c]; sum_dy_xc[c] += the rows' dy[c] * (x[c] - center[c]).
template <typename T>
void AddGradRows(const T* dy, const T* x, int64_t rows, int64_t C, const double* center, double* sum_dy,
                 double* sum_dy_xc) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4, dy += 4 * C, x += 4 * C) {
    int64_t c = 0;
    for (; c + 4 <= C; c += 4) {
      const D4 m = LoadD4(center + c);
      const D4 g0 = Load4(dy + c), g1 = Load4(dy + C + c), g2 = Load4(dy + 2 * C + c), g3 = Load4(dy + 3 * C + c);
      StoreD4(sum_dy + c, LoadD4(sum_dy + c) + ((g0 + g1) + (g2 + g3)));
      const D4 v = (g0 * (Load4(x + c) - m) + g1 * (Load4(x + C + c) - m)) +
                   (g2 * (Load4(x + 2 * C + c) - m) + g3 * (Load4(x + 3 * C + c) - m));
      StoreD4(sum_dy_xc + c, LoadD4(sum_dy_xc + c) + v);
    }
    for (; c < C; ++c) {
      double s = 0, sx = 0;
      for (int k = 0; k < 4; ++k) {
        const double g = static_cast<double>(dy[k * C + c]);
        s += g;
        sx += g * (static_cast<double>(x[k * C + c]) - center[c]);
      }
      sum_dy[c] += s;
      sum_dy_xc[c] += sx;
    }
  }
  for (; r < rows; ++r, dy += C, x += C) {
    for (int64_t c = 0; c < C; ++c) {
      const double g = static_cast<double>(dy[c]);
      sum_dy[c] += g;
      sum_dy_xc[c] += g * (static_cast<double>(x[c]) - center[c]);
    }
  }
}

// Sum of run[0, n).
template <typename T>
double SumRun(const T* run, int64_t n) {
  D4 a = {0, 0, 0, 0}, b = a, c = a, d = a;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a += Load4(run + i);
    b += Load4(run + i + 4);
    c += Load4(run + i + 8);
    d += Load4(run + i + 12);
  }
  for (; i + 4 <= n; i += 4) a += Load4(run + i);
  double s = Sum4((a + b) + (c + d));
  for (; i < n; ++i) s += static_cast<double>(run[i]);
  return s;
}

// Sum of (run[i] - center)^2.
template <typename T>
double SumSquaresRun(const T* run, int64_t n, double center) {
  const D4 m = {center, center, center, center};
  D4 a = {0, 0, 0, 0}, b = a, c = a, d = a;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const D4 d0 = Load4(run + i) - m, d1 = Load4(run + i + 4) - m;
    const D4 d2 = Load4(run + i + 8) - m, d3 = Load4(run + i + 12) - m;
    a += d0 * d0;
    b += d1 * d1;
    c += d2 * d2;
    d += d3 * d3;
  }
  for (; i + 4 <= n; i += 4) {
    const D4 d0 = Load4(run + i) - m;
    a += d0 * d0;
  }
  double s = Sum4((a + b) + (c + d));
  for (; i < n; ++i) {
    const double d = static_cast<double>(run[i]) - center;
    s += d * d;
  }
  return s;
}

// *sum_dy += sum of dy; *sum_dy_xc += sum of dy * (x - center).
template <typename T>
void AddGradRun(const T* dy, const T* x, int64_t n, double center, double* sum_dy, double* sum_dy_xc) {
  const D4 m = {center, center, center, center};
  D4 g = {0, 0, 0, 0}, g1 = g, gx = g, gx1 = g;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const D4 d = Load4(dy + i), d1 = Load4(dy + i + 4);
    g += d;
    g1 += d1;
    gx += d * (Load4(x + i) - m);
    gx1 += d1 * (Load4(x + i + 4) - m);
  }
  for (; i + 4 <= n; i += 4) {
    const D4 d = Load4(dy + i);
    g += d;
    gx += d * (Load4(x + i) - m);
  }
  double s = Sum4(g + g1), sx = Sum4(gx + gx1);
  for (; i < n; ++i) {
    const double d = static_cast<double>(dy[i]);
    s += d;
    sx += d * (static_cast<double>(x[i]) - center);
  }
  *sum_dy += s;
  *sum_dy_xc += sx;
}

// ---- Per-element passes, in float (double for double tensors) ----

template <typename T>
using Arith = std::conditional_t<std::is_same_v<T, double>, double, float>;

// A channel's mean as the sum of two values of the arithmetic's type, so that
// x - mean is (x - hi) - lo: x - hi is exact for x near the mean, and a mean
// far from zero (against the deviations) loses no precision to its rounding.
template <typename T>
struct Centers {
  std::vector<Arith<T>> hi, lo;
  explicit Centers(const std::vector<double>& mean) : hi(mean.size()), lo(mean.size()) {
    for (size_t c = 0; c < mean.size(); ++c) {
      hi[c] = static_cast<Arith<T>>(mean[c]);
      // An infinite mean (a running one) keeps lo 0, not inf - inf.
      lo[c] = std::isfinite(hi[c]) ? static_cast<Arith<T>>(mean[c] - static_cast<double>(hi[c])) : Arith<T>(0);
    }
  }
};

inline F8 Splat8(float v) { return F8{v, v, v, v, v, v, v, v}; }
inline F8 Load8(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void Store8(float* p, F8 v) { std::memcpy(p, &v, sizeof v); }

// The fused forward's epilogue (_FusedBatchNormEx): the normalized value,
// rounded to T as FusedBatchNormV3's y is, plus the side input's element
// (kSide), then Relu (kRelu): v < 0 ? 0 : v, so a NaN stays NaN. In T's
// arithmetic, as the AddN and Relu it stands for.
template <bool kSide, bool kRelu, typename T>
inline T Epilogue(T v, const T* side, int64_t i) {
  if constexpr (kSide) v = static_cast<T>(static_cast<Arith<T>>(v) + static_cast<Arith<T>>(side[i]));
  if constexpr (kRelu) v = static_cast<Arith<T>>(v) < 0 ? T(0) : v;
  return v;
}
template <bool kSide, bool kRelu>
inline F8 Epilogue8(F8 v, const float* side, int64_t i) {
  if constexpr (kSide) v += Load8(side + i);
  if constexpr (kRelu) v = v < Splat8(0.0f) ? Splat8(0.0f) : v;
  return v;
}

// out = epilogue(((in - hi) - lo) * mul + add) over a row of n channels, each
// with its own factors (AffineRow), or over a run of n elements of one channel
// (AffineRun); side (read only with kSide) is indexed as out.
template <typename T, bool kSide, bool kRelu>
void AffineRow(const T* in, int64_t n, const Arith<T>* hi, const Arith<T>* lo, const Arith<T>* mul,
               const Arith<T>* add, const T* side, T* out) {
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 8 <= n; i += 8) {
      const F8 v = ((Load8(in + i) - Load8(hi + i)) - Load8(lo + i)) * Load8(mul + i) + Load8(add + i);
      Store8(out + i, Epilogue8<kSide, kRelu>(v, side, i));
    }
  }
  for (; i < n; ++i) {
    const T v = static_cast<T>(((static_cast<Arith<T>>(in[i]) - hi[i]) - lo[i]) * mul[i] + add[i]);
    out[i] = Epilogue<kSide, kRelu>(v, side, i);
  }
}

template <typename T, bool kSide, bool kRelu>
void AffineRun(const T* in, int64_t n, Arith<T> hi, Arith<T> lo, Arith<T> mul, Arith<T> add, const T* side, T* out) {
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    const F8 h = Splat8(hi), l = Splat8(lo), m = Splat8(mul), a = Splat8(add);
    for (; i + 8 <= n; i += 8) Store8(out + i, Epilogue8<kSide, kRelu>(((Load8(in + i) - h) - l) * m + a, side, i));
  }
  for (; i < n; ++i) {
    const T v = static_cast<T>(((static_cast<Arith<T>>(in[i]) - hi) - lo) * mul + add);
    out[i] = Epilogue<kSide, kRelu>(v, side, i);
  }
}

// dx = p * dy + q * ((x - hi) - lo) + r, over a row of n channels (GradRow)
// or a run of one channel (GradRun).
template <typename T>
void GradRow(const T* dy, const T* x, int64_t n, const Centers<T>& center, const Arith<T>* p, const Arith<T>* q,
             const Arith<T>* r, T* dx) {
  const Arith<T>* hi = center.hi.data();
  const Arith<T>* lo = center.lo.data();
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 8 <= n; i += 8) {
      Store8(dx + i, Load8(p + i) * Load8(dy + i) + Load8(q + i) * ((Load8(x + i) - Load8(hi + i)) - Load8(lo + i)) +
                         Load8(r + i));
    }
  }
  for (; i < n; ++i) {
    dx[i] = static_cast<T>(p[i] * static_cast<Arith<T>>(dy[i]) +
                           q[i] * ((static_cast<Arith<T>>(x[i]) - hi[i]) - lo[i]) + r[i]);
  }
}

template <typename T>
void GradRun(const T* dy, const T* x, int64_t n, Arith<T> hi, Arith<T> lo, Arith<T> p, Arith<T> q, Arith<T> r,
             T* dx) {
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    const F8 h = Splat8(hi), l = Splat8(lo), pv = Splat8(p), qv = Splat8(q), rv = Splat8(r);
    for (; i + 8 <= n; i += 8) Store8(dx + i, pv * Load8(dy + i) + qv * ((Load8(x + i) - h) - l) + rv);
  }
  for (; i < n; ++i) {
    dx[i] = static_cast<T>(p * static_cast<Arith<T>>(dy[i]) + q * ((static_cast<Arith<T>>(x[i]) - hi) - lo) + r);
  }
}

// out = (in - center) * mul + add per channel, over the whole tensor, then
// the epilogue: + side (when not null), Relu (when relu).
template <typename T, bool kSide, bool kRelu>
void AffineWith(OpKernelContext* ctx, const Layout& l, const Blocks& blocks, const T* in, const Centers<T>& center,
                const std::vector<Arith<T>>& mul, const std::vector<Arith<T>>& add, const T* side, T* out) {
  const int64_t C = l.channels, inner = l.inner;
  ForBlocks(ctx, l, blocks, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t o = first; o < last; ++o) {
      if (inner == 1) {
        AffineRow<T, kSide, kRelu>(in + o * C, C, center.hi.data(), center.lo.data(), mul.data(), add.data(),
                                   kSide ? side + o * C : nullptr, out + o * C);
        continue;
      }
      for (int64_t c = 0; c < C; ++c) {
        const int64_t base = (o * C + c) * inner;
        AffineRun<T, kSide, kRelu>(in + base, inner, center.hi[c], center.lo[c], mul[c], add[c],
                                   kSide ? side + base : nullptr, out + base);
      }
    }
  });
}

template <typename T>
void Affine(OpKernelContext* ctx, const Layout& l, const Blocks& blocks, const T* in, const Centers<T>& center,
            const std::vector<Arith<T>>& mul, const std::vector<Arith<T>>& add, T* out, const T* side = nullptr,
            bool relu = false) {
  if (side != nullptr) {
    if (relu) AffineWith<T, true, true>(ctx, l, blocks, in, center, mul, add, side, out);
    else AffineWith<T, true, false>(ctx, l, blocks, in, center, mul, add, side, out);
  } else {
    if (relu) AffineWith<T, false, true>(ctx, l, blocks, in, center, mul, add, side, out);
    else AffineWith<T, false, false>(ctx, l, blocks, in, center, mul, add, side, out);
  }
}

// g = y_backprop where y > 0, else 0 (ReluGrad), over n elements.
template <typename T>
void ReluMask(const T* dy, const T* y, int64_t n, T* g) {
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 8 <= n; i += 8) Store8(g + i, Load8(y + i) > Splat8(0.0f) ? Load8(dy + i) : Splat8(0.0f));
  }
  for (; i < n; ++i) g[i] = static_cast<Arith<T>>(y[i]) > 0 ? dy[i] : T(0);
}

// The fused ops' attrs: activation_mode (Identity or Relu) and
// num_side_inputs (0 or 1); absent (the unfused ops) they read as Identity and 0.
absl::Status ReadEpilogue(OpKernelConstruction* ctx, bool* relu, int64_t* side_inputs) {
  *relu = false;
  *side_inputs = 0;
  if (ctx->def().attr().count("activation_mode")) {
    std::string mode;
    absl::Status s = ctx->GetAttr("activation_mode", &mode);
    if (!s.ok()) return s;
    if (mode != "Identity" && mode != "Relu") {
      return absl::InvalidArgumentError(absl::StrCat("activation_mode must be Identity or Relu, got '", mode, "'"));
    }
    *relu = mode == "Relu";
  }
  if (ctx->def().attr().count("num_side_inputs")) {
    absl::Status s = ctx->GetAttr("num_side_inputs", side_inputs);
    if (!s.ok()) return s;
    if (*side_inputs != 0 && *side_inputs != 1) {
      return absl::InvalidArgumentError(absl::StrCat("num_side_inputs must be 0 or 1, got ", *side_inputs));
    }
  }
  return absl::OkStatus();
}

// ---- The kernels ----

template <typename T, typename U>
class FusedBatchNormOp : public OpKernel {
 public:
  explicit FusedBatchNormOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadFormat(ctx, &channels_first_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("epsilon", &epsilon_));
    if (ctx->def().attr().count("exponential_avg_factor")) {
      OP_REQUIRES_OK(ctx, ctx->GetAttr("exponential_avg_factor", &avg_factor_));
    }
    OP_REQUIRES_OK(ctx, ctx->GetAttr("is_training", &is_training_));
    OP_REQUIRES_OK(ctx, ReadEpilogue(ctx, &relu_, &side_inputs_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Layout l;
    OP_REQUIRES_OK(ctx, MakeLayout(x, channels_first_, &l));
    const T* side = nullptr;
    if (side_inputs_ == 1) {
      const Tensor& s = ctx->input(5);
      OP_REQUIRES(ctx, s.shape() == x.shape(),
                  absl::InvalidArgumentError(absl::StrCat("side_input must have x's shape ", x.shape().DebugString(),
                                                          ", got ", s.shape().DebugString())));
      side = s.data<T>();
    }
    const char* names[] = {"scale", "offset", "mean", "variance"};
    for (int i = 1; i <= 4; ++i) {
      // Training with exponential_avg_factor 1 ignores the running statistics
      // (TensorFlow allows them empty); a blend needs them.
      if (is_training_ && avg_factor_ == 1.0f && i >= 3) continue;
      OP_REQUIRES_OK(ctx, CheckChannelVector(ctx->input(i), names[i - 1], l.channels));
    }
    const int64_t C = l.channels, n = l.count();
    const T* in = x.data<T>();
    const U* scale = ctx->input(1).data<U>();
    const U* offset = ctx->input(2).data<U>();
    const Blocks blocks = MakeBlocks(l);
    std::vector<double> mean(C, 0.0), var(C, 0.0);
    if (is_training_) {
      BatchMoments(ctx, l, blocks, in, &mean, &var);
    } else {
      for (int64_t c = 0; c < C; ++c) {
        mean[c] = static_cast<double>(ctx->input(3).data<U>()[c]);
        var[c] = static_cast<double>(ctx->input(4).data<U>()[c]);
      }
    }
    Tensor* y;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
    const Centers<T> center(mean);
    std::vector<Arith<T>> mul(C), add(C);
    for (int64_t c = 0; c < C; ++c) {
      mul[c] = static_cast<Arith<T>>(static_cast<double>(scale[c]) / std::sqrt(var[c] + epsilon_));
      add[c] = static_cast<Arith<T>>(offset[c]);
    }
    Affine(ctx, l, blocks, in, center, mul, add, y->data<T>(), side, relu_);

    Tensor* outs[5];
    for (int i = 1; i <= 4; ++i) OP_REQUIRES_OK(ctx, ctx->allocate_output(i, TensorShape({C}), &outs[i - 1]));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(5, TensorShape({0}), &outs[4]));
    const bool blend = is_training_ && avg_factor_ != 1.0f;
    for (int64_t c = 0; c < C; ++c) {
      double batch_mean = mean[c], batch_var = var[c];
      if (is_training_) {
        batch_var = n > 1 ? var[c] * n / (n - 1) : var[c];
        if (blend) {
          const double f = avg_factor_;
          batch_mean = (1 - f) * static_cast<double>(ctx->input(3).data<U>()[c]) + f * batch_mean;
          batch_var = (1 - f) * static_cast<double>(ctx->input(4).data<U>()[c]) + f * batch_var;
        }
      }
      outs[0]->data<U>()[c] = static_cast<U>(batch_mean);
      outs[1]->data<U>()[c] = static_cast<U>(batch_var);
      outs[2]->data<U>()[c] = static_cast<U>(mean[c]);
      outs[3]->data<U>()[c] = static_cast<U>(var[c]);
    }
  }

 private:
  // Per-channel mean and biased variance of x (0 and 0 for no elements): each
  // block's own mean and sum of squared deviations, combined in block order.
  static void BatchMoments(OpKernelContext* ctx, const Layout& l, const Blocks& blocks, const T* in,
                           std::vector<double>* mean, std::vector<double>* var) {
    const int64_t C = l.channels, inner = l.inner;
    if (l.count() == 0 || C == 0) return;
    // Per block: C sums (then the block's means), C sums of squares.
    std::vector<double> partial(static_cast<size_t>(blocks.count * 2 * C), 0.0);
    ForBlocks(ctx, l, blocks, [&](int64_t t, int64_t first, int64_t last) {
      double* sum = partial.data() + t * 2 * C;
      double* squares = sum + C;
      const double elements = static_cast<double>((last - first) * inner);
      if (inner == 1) {
        AddRows(in + first * C, last - first, C, sum);
        for (int64_t c = 0; c < C; ++c) sum[c] /= elements;
        AddSquaresRows(in + first * C, last - first, C, sum, squares);
        return;
      }
      for (int64_t o = first; o < last; ++o) {
        for (int64_t c = 0; c < C; ++c) sum[c] += SumRun(in + (o * C + c) * inner, inner);
      }
      for (int64_t c = 0; c < C; ++c) sum[c] /= elements;
      for (int64_t o = first; o < last; ++o) {
        for (int64_t c = 0; c < C; ++c) squares[c] += SumSquaresRun(in + (o * C + c) * inner, inner, sum[c]);
      }
    });
    // Chan et al.: merging (n_a, mean_a, M2_a) with (n_b, mean_b, M2_b) gives
    // mean_a + d * n_b / n and M2_a + M2_b + d^2 * n_a * n_b / n, d = mean_b - mean_a.
    double n_a = 0;
    for (int64_t t = 0; t < blocks.count; ++t) {
      const double* block_mean = partial.data() + t * 2 * C;
      const double* block_squares = block_mean + C;
      const int64_t first = t * blocks.per, last = std::min(l.outer, (t + 1) * blocks.per);
      const double n_b = static_cast<double>((last - first) * inner), n = n_a + n_b;
      for (int64_t c = 0; c < C; ++c) {
        if (t == 0) {  // taken as it is: d * d * 0 is NaN for a mean past 1e154
          (*mean)[c] = block_mean[c];
          (*var)[c] = block_squares[c];
          continue;
        }
        const double d = block_mean[c] - (*mean)[c];
        (*mean)[c] += d * n_b / n;
        (*var)[c] += block_squares[c] + d * d * n_a * n_b / n;
      }
      n_a = n;
    }
    for (double& v : *var) v /= n_a;
  }

  bool channels_first_ = false;
  float epsilon_ = 1e-4f;
  float avg_factor_ = 1.0f;
  bool is_training_ = true;
  bool relu_ = false;         // _FusedBatchNormEx's activation_mode Relu
  int64_t side_inputs_ = 0;   // _FusedBatchNormEx's num_side_inputs
};

template <typename T, typename U>
class FusedBatchNormGradOp : public OpKernel {
 public:
  explicit FusedBatchNormGradOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadFormat(ctx, &channels_first_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("epsilon", &epsilon_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("is_training", &is_training_));
    OP_REQUIRES_OK(ctx, ReadEpilogue(ctx, &relu_, &side_inputs_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    Layout l;
    OP_REQUIRES_OK(ctx, MakeLayout(x, channels_first_, &l));
    OP_REQUIRES(ctx, dy.shape() == x.shape(),
                absl::InvalidArgumentError(absl::StrCat("y_backprop and x must have one shape, got ",
                                                        dy.shape().DebugString(), " and ", x.shape().DebugString())));
    OP_REQUIRES_OK(ctx, CheckChannelVector(ctx->input(2), "scale", l.channels));
    OP_REQUIRES_OK(ctx, CheckChannelVector(ctx->input(3), "reserve_space_1 (mean)", l.channels));
    OP_REQUIRES_OK(ctx, CheckChannelVector(ctx->input(4), "reserve_space_2 (variance)", l.channels));
    const int64_t C = l.channels, n = l.count(), inner = l.inner;
    // _FusedBatchNormGradEx: the gradient is g = y_backprop masked by y > 0
    // (Relu), written as the blocks are summed into side_input_backprop when
    // there is one, else into dx, which the second pass then overwrites in
    // place (element by element); with Identity, g is y_backprop.
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &dx));
    Tensor* side_grad = nullptr;
    if (side_inputs_ == 1) {
      if (relu_) {
        OP_REQUIRES_OK(ctx, ctx->allocate_output(5, x.shape(), &side_grad));
      } else {
        ctx->set_output(5, dy);
      }
    }
    const T* y = nullptr;
    T* masked = nullptr;
    if (relu_) {
      const Tensor& y_tensor = ctx->input(7);
      OP_REQUIRES(ctx, y_tensor.shape() == x.shape(),
                  absl::InvalidArgumentError(absl::StrCat("y must have x's shape ", x.shape().DebugString(), ", got ",
                                                          y_tensor.shape().DebugString())));
      y = y_tensor.data<T>();
      masked = side_grad != nullptr ? side_grad->data<T>() : dx->data<T>();
    }
    const T* g = relu_ ? masked : dy.data<T>();
    const T* in = x.data<T>();
    const U* scale = ctx->input(2).data<U>();
    std::vector<double> inv(C), mean(C), sum_dy(C, 0.0), sum_dy_xc(C, 0.0);
    for (int64_t c = 0; c < C; ++c) {
      mean[c] = static_cast<double>(ctx->input(3).data<U>()[c]);
      inv[c] = 1.0 / std::sqrt(static_cast<double>(ctx->input(4).data<U>()[c]) + epsilon_);
    }
    const Blocks blocks = MakeBlocks(l);
    // Per block: C sums of dy, C sums of dy * (x - mean); added in block order.
    std::vector<double> partial(static_cast<size_t>(blocks.count * 2 * C), 0.0);
    ForBlocks(ctx, l, blocks, [&](int64_t t, int64_t first, int64_t last) {
      double* s = partial.data() + t * 2 * C;
      double* sx = s + C;
      if (relu_) {  // the block's g, summed below while it is in cache
        const int64_t begin = first * C * inner, count = (last - first) * C * inner;
        ReluMask(dy.data<T>() + begin, y + begin, count, masked + begin);
      }
      if (inner == 1) {
        AddGradRows(g + first * C, in + first * C, last - first, C, mean.data(), s, sx);
        return;
      }
      for (int64_t o = first; o < last; ++o) {
        for (int64_t c = 0; c < C; ++c) {
          const int64_t base = (o * C + c) * inner;
          AddGradRun(g + base, in + base, inner, mean[c], s + c, sx + c);
        }
      }
    });
    for (int64_t t = 0; t < blocks.count; ++t) {
      for (int64_t c = 0; c < C; ++c) {
        sum_dy[c] += partial[t * 2 * C + c];
        sum_dy_xc[c] += partial[t * 2 * C + C + c];
      }
    }
    T* out = dx->data<T>();
    // Training: dx = scale * inv * (dy - sum(dy) / n - xhat * sum(dy * xhat) / n),
    // xhat = (x - mean) * inv, i.e. p * dy + q * (x - mean) + r. Inference:
    // dx = scale * inv * dy.
    const Centers<T> center(mean);
    std::vector<Arith<T>> p(C), q(C), r(C);
    for (int64_t c = 0; c < C; ++c) {
      const double pc = static_cast<double>(scale[c]) * inv[c];
      p[c] = static_cast<Arith<T>>(pc);
      q[c] = static_cast<Arith<T>>(n > 0 ? -pc * inv[c] * inv[c] * sum_dy_xc[c] / n : 0.0);
      r[c] = static_cast<Arith<T>>(n > 0 ? -pc * sum_dy[c] / n : 0.0);
    }
    if (is_training_) {
      ForBlocks(ctx, l, blocks, [&](int64_t, int64_t first, int64_t last) {
        for (int64_t o = first; o < last; ++o) {
          if (inner == 1) {
            GradRow(g + o * C, in + o * C, C, center, p.data(), q.data(), r.data(), out + o * C);
            continue;
          }
          for (int64_t c = 0; c < C; ++c) {
            const int64_t base = (o * C + c) * inner;
            GradRun(g + base, in + base, inner, center.hi[c], center.lo[c], p[c], q[c], r[c], out + base);
          }
        }
      });
    } else {
      const std::vector<Arith<T>> zeros(C, Arith<T>(0));
      Affine(ctx, l, blocks, g, Centers<T>(std::vector<double>(C, 0.0)), p, zeros, out);
    }
    Tensor *dscale, *doffset, *r4, *r5;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({C}), &dscale));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({C}), &doffset));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(3, TensorShape({0}), &r4));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(4, TensorShape({0}), &r5));
    for (int64_t c = 0; c < C; ++c) {
      dscale->data<U>()[c] = static_cast<U>(sum_dy_xc[c] * inv[c]);
      doffset->data<U>()[c] = static_cast<U>(sum_dy[c]);
    }
  }

 private:
  bool channels_first_ = false;
  float epsilon_ = 1e-4f;
  bool is_training_ = true;
  bool relu_ = false;        // _FusedBatchNormGradEx's activation_mode Relu
  int64_t side_inputs_ = 0;  // _FusedBatchNormGradEx's num_side_inputs
};

#define SLUICE_REG_(T, U)                                                                               \
  REGISTER_KERNEL_BUILDER(                                                                             \
      Name("FusedBatchNormV3").Device(kDeviceCpu).TypeConstraint<T>("T").TypeConstraint<U>("U"),       \
      (FusedBatchNormOp<T, U>));                                                                       \
  REGISTER_KERNEL_BUILDER(                                                                             \
      Name("FusedBatchNormGradV3").Device(kDeviceCpu).TypeConstraint<T>("T").TypeConstraint<U>("U"),   \
      (FusedBatchNormGradOp<T, U>))
SLUICE_REG_(float, float);
SLUICE_REG_(half, float);
SLUICE_REG_(bfloat16, float);
SLUICE_REG_(double, double);
#undef SLUICE_REG_
REGISTER_KERNEL_BUILDER(Name("_FusedBatchNormEx").Device(kDeviceCpu).TypeConstraint<float>("T").TypeConstraint<float>("U"),
                        (FusedBatchNormOp<float, float>));
REGISTER_KERNEL_BUILDER(
    Name("_FusedBatchNormGradEx").Device(kDeviceCpu).TypeConstraint<float>("T").TypeConstraint<float>("U"),
    (FusedBatchNormGradOp<float, float>));

}  // namespace
}  // namespace sluice
