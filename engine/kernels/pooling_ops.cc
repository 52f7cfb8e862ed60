// CPU kernels for MaxPool, MaxPoolGrad, AvgPool and AvgPoolGrad (NHWC,
// SAME/VALID, windows never span the batch or depth dimensions).
// Windows only cover positions inside the input: MaxPool ignores the padding
// (as if it held -inf), AvgPool divides by the number of covered positions
// (TensorFlow's semantics). MaxPoolGrad sends each window's gradient to the
// first maximal position in the window (row-major order), per channel.
// _FusedMaxPoolGrad (float32; the fusion pass's MaxPoolGrad + ReluGrad [+
// BiasAddGrad]) is MaxPoolGrad's kernel with the ReluGrad mask applied where
// each window's gradient lands (orig_input > 0 there) and the per-channel sum
// of the result taken from the pooled gradient.
// Work is split by image (grads) or by output row (forward) on the intra-op pool.
// Thread safety: kernels are stateless.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/float_vec.h"
#include "engine/kernels/nn_util.h"
#include "engine/kernels/run_tasks.h"

namespace sluice {
namespace {

// The per-channel steps of a forward window: acc = src; acc = max(acc, src)
// or acc += src; dst = acc (or acc / count). Eigen vectorizes them when no
// conversion is needed (GCC's -O2 left the plain loops scalar: MaxPool ran
// at a tenth of PyTorch's speed).
template <typename T, typename Acc>
inline void PoolLoad(Acc* acc, const T* src, int64_t c) {
  if constexpr (std::is_same_v<T, Acc>) {
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(acc, c) = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(src, c);
  } else {
    for (int64_t j = 0; j < c; ++j) acc[j] = static_cast<Acc>(src[j]);
  }
}
template <typename T, typename Acc, bool kMax>
inline void PoolCombine(Acc* acc, const T* src, int64_t c) {
  if constexpr (std::is_same_v<T, Acc>) {
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> a(acc, c);
    Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> s(src, c);
    if constexpr (kMax) {
      a = a.max(s);
    } else {
      a += s;
    }
  } else if constexpr (kMax) {
    for (int64_t j = 0; j < c; ++j) acc[j] = acc[j] < static_cast<Acc>(src[j]) ? static_cast<Acc>(src[j]) : acc[j];
  } else {
    for (int64_t j = 0; j < c; ++j) acc[j] += static_cast<Acc>(src[j]);
  }
}
template <typename T, typename Acc, bool kMax>
inline void PoolStore(T* dst, const Acc* acc, int64_t c, Acc count) {
  if constexpr (std::is_same_v<T, Acc>) {
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> d(dst, c);
    Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> a(acc, c);
    if constexpr (kMax) {
      d = a;
    } else {
      d = a / count;
    }
  } else {
    for (int64_t j = 0; j < c; ++j) dst[j] = static_cast<T>(kMax ? acc[j] : acc[j] / count);
  }
}

struct PoolGeometry {
  int64_t batch = 0, in_rows = 0, in_cols = 0, depth = 0;
  WindowDim rows, cols;
  TensorShape out_shape;  // built (checked) by Geometry
};

class PoolOpBase : public OpKernel {
 public:
  explicit PoolOpBase(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadWindowAttrs(ctx, &strides_, &ksize_, &padding_));
  }

 protected:
  absl::Status Geometry(const TensorShape& input, PoolGeometry* g) const {
    if (input.dims() != 4) {
      return absl::InvalidArgumentError(absl::StrCat("input must be 4-D (NHWC), got ", input.DebugString()));
    }
    g->batch = input.dim_size(0);
    g->in_rows = input.dim_size(1);
    g->in_cols = input.dim_size(2);
    g->depth = input.dim_size(3);
    absl::Status s = ComputeWindow(g->in_rows, ksize_[1], strides_[1], padding_, &g->rows);
    if (s.ok()) s = ComputeWindow(g->in_cols, ksize_[2], strides_[2], padding_, &g->cols);
    if (!s.ok()) return s;
    auto out = TensorShape::Build({g->batch, g->rows.out, g->cols.out, g->depth});
    if (!out.ok()) return out.status();
    g->out_shape = *std::move(out);
    return absl::OkStatus();
  }

  std::vector<int64_t> strides_, ksize_;
  std::string padding_;
};

// The window of output (oh, ow) clipped to the input: [h0, h1) x [w0, w1).
struct Window {
  int64_t h0, h1, w0, w1;
};
inline Window Clip(const PoolGeometry& g, int64_t oh, int64_t ow) {
  Window w;
  // Start <= in - 1 and k >= 1, so comparing k with (in - start) cannot overflow.
  w.h0 = oh * g.rows.stride - g.rows.pad;
  w.h1 = g.rows.k >= g.in_rows - w.h0 ? g.in_rows : w.h0 + g.rows.k;
  w.h0 = std::max<int64_t>(w.h0, 0);
  w.w0 = ow * g.cols.stride - g.cols.pad;
  w.w1 = g.cols.k >= g.in_cols - w.w0 ? g.in_cols : w.w0 + g.cols.k;
  w.w0 = std::max<int64_t>(w.w0, 0);
  return w;
}

// Cuts c channels into blocks for kernels that keep a window's values in
// vector registers: fn(std::integral_constant<int, V>(), c0, lanes) for blocks
// of V = 4, then 2, then 1 whole vectors of kWidth lanes (lanes == kWidth),
// and last V = 0 for the remaining lanes < kWidth channels, if any.
template <int kWidth, typename Fn>
inline void ForEachChannelBlock(int64_t c, Fn&& fn) {
  int64_t c0 = 0;
  for (; c0 + 4 * kWidth <= c; c0 += 4 * kWidth) fn(std::integral_constant<int, 4>(), c0, int64_t{kWidth});
  if (c0 + 2 * kWidth <= c) {
    fn(std::integral_constant<int, 2>(), c0, int64_t{kWidth});
    c0 += 2 * kWidth;
  }
  if (c0 + kWidth <= c) {
    fn(std::integral_constant<int, 1>(), c0, int64_t{kWidth});
    c0 += kWidth;
  }
  if (c0 < c) fn(std::integral_constant<int, 0>(), c0, c - c0);
}

// The maximum over window `w` of channels [c0, c0 + kVectors * kLanes) (or of
// `lanes` < kLanes channels when kVectors is 0), into dst[c0...]: the window's
// positions are read in order, each a contiguous run of channels, and the
// maxima stay in registers.
template <int kVectors>
inline void MaxWindowChannels(const float* image, int64_t in_cols, int64_t c, const Window& w, int64_t c0,
                              int64_t lanes, float* dst) {
  using namespace simd;  // NOLINT(build/namespaces): Vec, Load, StdMax, ...
  constexpr int kCount = kVectors == 0 ? 1 : kVectors;
  auto load = [&](const float* p) { return kVectors == 0 ? LoadPartial(p, lanes) : Load(p); };
  Vec m[kCount];
  const float* corner = image + (w.h0 * in_cols + w.w0) * c + c0;
#pragma GCC unroll 4
  for (int v = 0; v < kCount; ++v) m[v] = load(corner + v * kLanes);
  for (int64_t h = w.h0; h < w.h1; ++h) {
    for (int64_t x = h == w.h0 ? w.w0 + 1 : w.w0; x < w.w1; ++x) {
      const float* p = image + (h * in_cols + x) * c + c0;
#pragma GCC unroll 4
      for (int v = 0; v < kCount; ++v) m[v] = StdMax(m[v], load(p + v * kLanes));
    }
  }
  if constexpr (kVectors == 0) {
    StorePartial(dst + c0, m[0], lanes);
  } else {
#pragma GCC unroll 4
    for (int v = 0; v < kCount; ++v) Store(dst + c0 + v * kLanes, m[v]);
  }
}

// Float max pooling of output rows [first, last) (batch x output rows), in
// blocks of up to four vectors of channels (the generic loop below went
// through an accumulator row with an Eigen call per window position, which at
// fashion_cnn's 32 and 64 channels cost more than the maxima: layer 2 ran at
// 2.3x oneDNN's time). The same std::max order as the generic loop, so the
// results are identical.
void FloatMaxPoolRows(const PoolGeometry& g, const float* in, float* out, int64_t first, int64_t last) {
  using simd::kLanes;
  const int64_t c = g.depth;
  for (int64_t r = first; r < last; ++r) {
    const int64_t n = r / g.rows.out, oh = r % g.rows.out;
    const float* image = in + n * g.in_rows * g.in_cols * c;
    for (int64_t ow = 0; ow < g.cols.out; ++ow) {
      const Window w = Clip(g, oh, ow);
      float* dst = out + (r * g.cols.out + ow) * c;
      ForEachChannelBlock<kLanes>(c, [&](auto vectors, int64_t c0, int64_t lanes) {
        MaxWindowChannels<decltype(vectors)::value>(image, g.in_cols, c, w, c0, lanes, dst);
      });
    }
  }
}

template <typename T, bool kMax>
class PoolOp : public PoolOpBase {
 public:
  using PoolOpBase::PoolOpBase;
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename std::conditional<kMax, T, typename AccumulatorType<T>::type>::type;
    const Tensor& input = ctx->input(0);
    PoolGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(input.shape(), &g));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.out_shape, &out));
    if (out->NumElements() == 0) return;
    const T* in = input.data<T>();
    T* o = out->data<T>();
    const int64_t c = g.depth;
    // Cost estimates in double: huge ksize attrs must not overflow.
    const double window = std::min<double>(static_cast<double>(g.rows.k) * g.cols.k,
                                           static_cast<double>(g.in_rows) * g.in_cols);
    const double row_work = static_cast<double>(g.cols.out) * window * c;
    if constexpr (kMax && std::is_same_v<T, float>) {
      ParallelForRanges(ctx->eigen_cpu_device().getPool(), ctx->eigen_cpu_device().numThreads(),
                        g.batch * g.rows.out, static_cast<int64_t>(row_work), 1,
                        [&](Eigen::Index first, Eigen::Index last) { FloatMaxPoolRows(g, in, o, first, last); });
      return;
    }
    ParallelForRanges(
        ctx->eigen_cpu_device().getPool(), ctx->eigen_cpu_device().numThreads(), g.batch * g.rows.out,
        static_cast<int64_t>(row_work), 1,
        [&](Eigen::Index first, Eigen::Index last) {
          std::vector<Acc> acc(c);
          for (Eigen::Index r = first; r < last; ++r) {
            const int64_t n = r / g.rows.out, oh = r % g.rows.out;
            const T* image = in + n * g.in_rows * g.in_cols * c;
            for (int64_t ow = 0; ow < g.cols.out; ++ow) {
              const Window w = Clip(g, oh, ow);
              T* dst = o + (r * g.cols.out + ow) * c;
              bool first_pos = true;
              for (int64_t h = w.h0; h < w.h1; ++h) {
                for (int64_t x = w.w0; x < w.w1; ++x) {
                  const T* src = image + (h * g.in_cols + x) * c;
                  if (first_pos) {
                    PoolLoad<T, Acc>(acc.data(), src, c);
                    first_pos = false;
                  } else {
                    PoolCombine<T, Acc, kMax>(acc.data(), src, c);
                  }
                }
              }
              // Windows always cover at least one input position (SAME pads
              // less than a window; VALID windows fit).
              const Acc count = static_cast<Acc>((w.h1 - w.h0) * (w.w1 - w.w0));
              PoolStore<T, Acc, kMax>(dst, acc.data(), c, count);
            }
          }
        });
  }
};

#if defined(__AVX512F__)
// The gradient of one max-pooling window for the channels [c0, c0 + 16 *
// kVectors), the last vector's lanes in `tail`, with the maxima, their
// positions (as floats: exact below 2^24 positions) and the gradient in
// registers: the same selections and sums as MaxPoolGradOp's generic loop
// (first strictly larger value; with `relu`, only maxima > 0 pass and `sum`
// adds the gradient that passes; `tiled`: dx written, else added to).
template <int kVectors>
inline void FloatMaxPoolGradWindow(const float* image, float* dimage, const float* gsrc, float* sum,
                                   int64_t in_cols, int64_t c, const Window& w, int64_t c0, __mmask16 tail,
                                   bool relu, bool tiled) {
  auto lanes = [&](int v) { return v == kVectors - 1 ? tail : static_cast<__mmask16>(0xFFFF); };
  __m512 best[kVectors], at[kVectors], grad[kVectors];
  const float* first = image + (w.h0 * in_cols + w.w0) * c + c0;
#pragma GCC unroll 4
  for (int v = 0; v < kVectors; ++v) {
    best[v] = _mm512_maskz_loadu_ps(lanes(v), first + 16 * v);
    at[v] = _mm512_setzero_ps();
  }
  float q = 0;
  for (int64_t h = w.h0; h < w.h1; ++h) {
    for (int64_t x = h == w.h0 ? w.w0 + 1 : w.w0; x < w.w1; ++x) {
      q += 1;
      const float* p = image + (h * in_cols + x) * c + c0;
      const __m512 position = _mm512_set1_ps(q);
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        const __m512 value = _mm512_maskz_loadu_ps(lanes(v), p + 16 * v);
        const __mmask16 larger = _mm512_cmp_ps_mask(best[v], value, _CMP_LT_OQ);
        best[v] = _mm512_mask_mov_ps(best[v], larger, value);
        at[v] = _mm512_mask_mov_ps(at[v], larger, position);
      }
    }
  }
#pragma GCC unroll 4
  for (int v = 0; v < kVectors; ++v) {
    grad[v] = _mm512_maskz_loadu_ps(lanes(v), gsrc + c0 + 16 * v);
    if (relu) {
      const __mmask16 positive = _mm512_cmp_ps_mask(best[v], _mm512_setzero_ps(), _CMP_GT_OQ);
      at[v] = _mm512_mask_mov_ps(_mm512_set1_ps(-1.0f), positive, at[v]);
      float* s = sum + c0 + 16 * v;
      _mm512_mask_storeu_ps(s, lanes(v),
                            _mm512_add_ps(_mm512_maskz_loadu_ps(lanes(v), s), _mm512_maskz_mov_ps(positive, grad[v])));
    }
  }
  q = 0;
  for (int64_t h = w.h0; h < w.h1; ++h) {
    for (int64_t x = w.w0; x < w.w1; ++x, q += 1) {
      float* d = dimage + (h * in_cols + x) * c + c0;
      const __m512 position = _mm512_set1_ps(q);
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        __m512 value = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(at[v], position, _CMP_EQ_OQ), grad[v]);
        if (!tiled) value = _mm512_add_ps(_mm512_maskz_loadu_ps(lanes(v), d + 16 * v), value);
        _mm512_mask_storeu_ps(d + 16 * v, lanes(v), value);
      }
    }
  }
}

// All channels of one window, in blocks of four, two and one vectors; the
// last, partial vector is a one-vector block whose masked lanes are ignored.
inline void FloatMaxPoolGradChannels(const float* image, float* dimage, const float* gsrc, float* sum,
                                     int64_t in_cols, int64_t c, const Window& w, bool relu, bool tiled) {
  ForEachChannelBlock<16>(c, [&](auto vectors, int64_t c0, int64_t lanes) {
    constexpr int kVectors = decltype(vectors)::value == 0 ? 1 : decltype(vectors)::value;
    const __mmask16 tail = static_cast<__mmask16>((1u << lanes) - 1);
    FloatMaxPoolGradWindow<kVectors>(image, dimage, gsrc, sum, in_cols, c, w, c0, tail, relu, tiled);
  });
}
#endif

template <typename T>
class MaxPoolGradOp : public PoolOpBase {
 public:
  explicit MaxPoolGradOp(OpKernelConstruction* ctx)
      : PoolOpBase(ctx), fused_(ctx->def().op() == "_FusedMaxPoolGrad") {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& output = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    PoolGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(input.shape(), &g));
    OP_REQUIRES(ctx, output.shape() == g.out_shape && grad.shape() == g.out_shape,
                absl::InvalidArgumentError(absl::StrCat(
                    "orig_output ", output.shape().DebugString(), " and grad ", grad.shape().DebugString(),
                    " must have the pooled shape ", g.out_shape.DebugString())));
    // Positions within a window are counted in int32 (the vectorized argmax).
    const int64_t window_positions =
        std::min(g.rows.k, g.in_rows) * std::min(g.cols.k, g.in_cols);
    OP_REQUIRES(ctx, window_positions <= std::numeric_limits<int32_t>::max(),
                absl::InvalidArgumentError(absl::StrCat("a pooling window covers ", window_positions,
                                                        " input positions; at most 2^31 - 1 are supported")));
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &dx));
    // _FusedMaxPoolGrad: the per-channel sum of dx, from per-image partial
    // sums (float32, over one image's windows) added in double in image order
    // (the same for any thread count).
    Tensor* bias_grad = nullptr;
    std::vector<double> image_sums;
    if (fused_) {
      OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({g.depth}), &bias_grad));
      std::fill(bias_grad->data<T>(), bias_grad->data<T>() + g.depth, T(0));
      if (dx->NumElements() > 0) image_sums.assign(static_cast<size_t>(g.batch * g.depth), 0.0);
    }
    if (dx->NumElements() == 0) return;
    const bool relu = fused_;
    const T* in = input.data<T>();
    const T* dy = grad.data<T>();
    T* o = dx->data<T>();
    const int64_t c = g.depth;
    const int64_t image_size = g.in_rows * g.in_cols * c, out_image = g.rows.out * g.cols.out * c;
    // Windows that tile the input (stride == size, the first starting at or
    // before 0 and the last ending at or after the edge: 2x2 stride-2 pooling)
    // put every input position in exactly one window, so dx is written once
    // instead of zeroed and then added to.
    auto tiles = [](const WindowDim& w, int64_t in) {  // pad >= 0: the first window starts at or before 0
      return w.stride == w.k && (w.out - 1) * w.stride - w.pad + w.k >= in;
    };
    const bool tiled = tiles(g.rows, g.in_rows) && tiles(g.cols, g.in_cols);
    const double image_work =
        static_cast<double>(out_image) * std::min<double>(static_cast<double>(g.rows.k) * g.cols.k, image_size);
    // The float AVX-512 path counts window positions in float lanes.
    [[maybe_unused]] const bool vector_positions = window_positions <= (int64_t{1} << 24);
    ParallelForRanges(
        ctx->eigen_cpu_device().getPool(), ctx->eigen_cpu_device().numThreads(), g.batch,
        static_cast<int64_t>(image_work), 1,
        [&](Eigen::Index first, Eigen::Index last) {
          // Per channel: the largest value so far and its position in the
          // window (row-major order). Two branch-free passes per window (find,
          // then add the gradient where the position matches) vectorize
          // across channels; a per-channel scatter did not.
          std::vector<T> best_value(c), image_sum(relu ? c : 0);
          std::vector<int32_t> best_at(c);
          T* __restrict bv = best_value.data();
          int32_t* __restrict bi = best_at.data();
          T* __restrict sum = image_sum.data();
          for (Eigen::Index n = first; n < last; ++n) {
            const T* image = in + n * image_size;
            T* dimage = o + n * image_size;
            if (relu) std::fill(sum, sum + c, T(0));
            if (!tiled) std::fill(dimage, dimage + image_size, T(0));
            for (int64_t oh = 0; oh < g.rows.out; ++oh) {
              for (int64_t ow = 0; ow < g.cols.out; ++ow) {
                // Windows always cover at least one input position: start
                // from the first, then keep the first strictly larger value.
                const Window w = Clip(g, oh, ow);
#if defined(__AVX512F__)
                if constexpr (std::is_same_v<T, float>) {
                  if (vector_positions) {
                    FloatMaxPoolGradChannels(image, dimage, dy + n * out_image + (oh * g.cols.out + ow) * c, sum,
                                             g.in_cols, c, w, relu, tiled);
                    continue;
                  }
                }
#endif
                const T* __restrict first_src = image + (w.h0 * g.in_cols + w.w0) * c;
                for (int64_t j = 0; j < c; ++j) {
                  bv[j] = first_src[j];
                  bi[j] = 0;
                }
                int32_t q = 0;
                for (int64_t h = w.h0; h < w.h1; ++h) {
                  for (int64_t x = (h == w.h0 ? w.w0 + 1 : w.w0); x < w.w1; ++x) {
                    const T* __restrict src = image + (h * g.in_cols + x) * c;
                    ++q;
                    for (int64_t j = 0; j < c; ++j) {
                      const bool larger = bv[j] < src[j];
                      bv[j] = larger ? src[j] : bv[j];
                      bi[j] = larger ? q : bi[j];
                    }
                  }
                }
                const T* __restrict gsrc = dy + n * out_image + (oh * g.cols.out + ow) * c;
                if (relu) {
                  // ReluGrad against orig_input: the window's gradient counts
                  // only where its maximum (the element it lands on) is > 0.
                  // Two loops of one element width each, so both vectorize.
                  for (int64_t j = 0; j < c; ++j) bi[j] = bv[j] > T(0) ? bi[j] : -1;
                  for (int64_t j = 0; j < c; ++j) sum[j] += bv[j] > T(0) ? gsrc[j] : T(0);
                }
                q = 0;
                for (int64_t h = w.h0; h < w.h1; ++h) {
                  for (int64_t x = w.w0; x < w.w1; ++x, ++q) {
                    T* __restrict dst = dimage + (h * g.in_cols + x) * c;
                    if (tiled) {
                      for (int64_t j = 0; j < c; ++j) dst[j] = bi[j] == q ? gsrc[j] : T(0);
                    } else {
                      for (int64_t j = 0; j < c; ++j) dst[j] = static_cast<T>(dst[j] + (bi[j] == q ? gsrc[j] : T(0)));
                    }
                  }
                }
              }
            }
            if (relu) std::copy(sum, sum + c, image_sums.begin() + n * c);
          }
        });
    if (fused_) {
      T* b = bias_grad->data<T>();
      for (int64_t n = 0; n < g.batch; ++n) {
        for (int64_t j = 0; j < c; ++j) image_sums[n * c + j] += n > 0 ? image_sums[(n - 1) * c + j] : 0.0;
      }
      for (int64_t j = 0; j < c; ++j) b[j] = static_cast<T>(image_sums[(g.batch - 1) * c + j]);
    }
  }

 private:
  const bool fused_;
};

template <typename T>
class AvgPoolGradOp : public PoolOpBase {
 public:
  using PoolOpBase::PoolOpBase;
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    TensorShape input_shape;
    OP_REQUIRES_OK(ctx, ShapeFromTensor(ctx->input(0), 4, &input_shape));
    const Tensor& grad = ctx->input(1);
    PoolGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(input_shape, &g));
    OP_REQUIRES(ctx, grad.shape() == g.out_shape,
                absl::InvalidArgumentError(absl::StrCat("grad ", grad.shape().DebugString(),
                                                        " must have the pooled shape ", g.out_shape.DebugString())));
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input_shape, &dx));
    if (dx->NumElements() == 0) return;
    const T* dy = grad.data<T>();
    T* o = dx->data<T>();
    const int64_t c = g.depth;
    const int64_t image_size = g.in_rows * g.in_cols * c, out_image = g.rows.out * g.cols.out * c;
    const double image_work =
        static_cast<double>(out_image) * std::min<double>(static_cast<double>(g.rows.k) * g.cols.k, image_size);
    ParallelForRanges(
        ctx->eigen_cpu_device().getPool(), ctx->eigen_cpu_device().numThreads(), g.batch,
        static_cast<int64_t>(image_work), 1,
        [&](Eigen::Index first, Eigen::Index last) {
          std::vector<Acc> acc(image_size);
          for (Eigen::Index n = first; n < last; ++n) {
            std::fill(acc.begin(), acc.end(), Acc(0));
            for (int64_t oh = 0; oh < g.rows.out; ++oh) {
              for (int64_t ow = 0; ow < g.cols.out; ++ow) {
                const Window w = Clip(g, oh, ow);
                const Acc inv = Acc(1) / static_cast<Acc>((w.h1 - w.h0) * (w.w1 - w.w0));
                const T* gsrc = dy + n * out_image + (oh * g.cols.out + ow) * c;
                for (int64_t h = w.h0; h < w.h1; ++h) {
                  for (int64_t x = w.w0; x < w.w1; ++x) {
                    Acc* dst = acc.data() + (h * g.in_cols + x) * c;
                    for (int64_t j = 0; j < c; ++j) dst[j] += static_cast<Acc>(gsrc[j]) * inv;
                  }
                }
              }
            }
            T* dimage = o + n * image_size;
            for (int64_t i = 0; i < image_size; ++i) dimage[i] = static_cast<T>(acc[i]);
          }
        });
  }
};

#define SLUICE_REGISTER_MAX_POOL_(T)                                                               \
  REGISTER_KERNEL_BUILDER(Name("MaxPool").Device(kDeviceCpu).TypeConstraint<T>("T"), PoolOp<T, true>); \
  REGISTER_KERNEL_BUILDER(Name("MaxPoolGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), MaxPoolGradOp<T>)
SLUICE_REGISTER_MAX_POOL_(float);
SLUICE_REGISTER_MAX_POOL_(double);
SLUICE_REGISTER_MAX_POOL_(half);
SLUICE_REGISTER_MAX_POOL_(bfloat16);
SLUICE_REGISTER_MAX_POOL_(int8_t);
SLUICE_REGISTER_MAX_POOL_(int16_t);
SLUICE_REGISTER_MAX_POOL_(int32_t);
SLUICE_REGISTER_MAX_POOL_(int64_t);
SLUICE_REGISTER_MAX_POOL_(uint8_t);
SLUICE_REGISTER_MAX_POOL_(uint16_t);
#undef SLUICE_REGISTER_MAX_POOL_
REGISTER_KERNEL_BUILDER(Name("_FusedMaxPoolGrad").Device(kDeviceCpu).TypeConstraint<float>("T"), MaxPoolGradOp<float>);

#define SLUICE_REGISTER_AVG_POOL_(T)                                                                \
  REGISTER_KERNEL_BUILDER(Name("AvgPool").Device(kDeviceCpu).TypeConstraint<T>("T"), PoolOp<T, false>); \
  REGISTER_KERNEL_BUILDER(Name("AvgPoolGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), AvgPoolGradOp<T>)
SLUICE_REGISTER_AVG_POOL_(float);
SLUICE_REGISTER_AVG_POOL_(double);
SLUICE_REGISTER_AVG_POOL_(half);
SLUICE_REGISTER_AVG_POOL_(bfloat16);
#undef SLUICE_REGISTER_AVG_POOL_

}  // namespace
}  // namespace sluice
