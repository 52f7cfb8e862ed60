// CPU kernels for Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter (NHWC
// input, HWIO filter, SAME/VALID padding, dilation 1).
//
// One input channel at stride 1 (a first layer on grayscale images): the
// forward pass and the filter gradient read the taps from a padded copy of
// each image straight into register tiles (single_channel_conv.h).
// Otherwise all three are im2col + matrix products. The patches of a set of output
// pixels form a [rows, K = KH*KW*C] matrix (zero where a window hangs over
// the padding), and
//   forward:         out[rows, O]   = patches x filter[K, O]
//   backprop input:  dpatches       = dy[rows, O] x filter^T, scattered back
//                    (col2im) into dx
//   backprop filter: dfilter[K, O] += patches^T x dy[rows, O] (float32 may
//                    compute dfilter^T = dy^T x patches instead, see below)
// float32 (the training path) runs each intra-op thread over its own output
// rows in L2-sized pieces with a one-thread CpuGemm (see "float32" below);
// float64 forms the patches of a chunk of images (kPatchBudget elements) and
// multiplies them with Eigen's contraction on the pool. 1x1 stride-1 VALID
// convolutions skip im2col entirely. Geometry and shape checks: conv_shape.h
// (shared with the cuDNN kernels). _FusedConv2D (float32) is Conv2D with the
// bias (and Relu) applied in CpuGemm's epilogue, as each product stores its
// output rows.
// Thread safety: kernels are stateless (buffers are per call).
#include <cstring>
#include <type_traits>

#include "engine/framework/op_kernel.h"
#include "engine/kernels/conv_shape.h"
#include "engine/kernels/cpu_gemm.h"
#include "engine/kernels/fused_epilogue.h"
#include "engine/kernels/nn_util.h"
#include "engine/kernels/run_tasks.h"
#include "engine/kernels/single_channel_conv.h"
#include "engine/platform/logging.h"

namespace sluice {
namespace {

// Elements of patch buffer per chunk (4 MB of float): small enough that the
// patches im2col writes are still in cache when the product reads them.
constexpr int64_t kPatchBudget = int64_t{1} << 20;

template <typename T>
using Matrix = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Unaligned>;
template <typename T>
using ConstMatrix =
    Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Unaligned>;
using ContractDims = Eigen::array<Eigen::IndexPair<Eigen::DenseIndex>, 1>;

// c (+)= op(a) op(b) for dense row-major a (a_rows x a_cols), b (b_rows x
// b_cols) and c; op transposes when ta / tb. float32 only: `epilogue` (may be
// null) supplies CpuGemm's bias and relu.
template <typename T>
void Product(const Eigen::ThreadPoolDevice& d, const T* a, int64_t a_rows, int64_t a_cols, bool ta, const T* b,
             int64_t b_rows, int64_t b_cols, bool tb, T* c, bool accumulate, const GemmArgs* epilogue = nullptr) {
  const int64_t m = ta ? a_cols : a_rows, n = tb ? b_rows : b_cols;
  if constexpr (std::is_same<T, float>::value) {
    GemmArgs g;
    g.m = m;
    g.n = n;
    g.k = ta ? a_rows : a_cols;
    g.a = a;
    g.lda = a_cols;
    g.transpose_a = ta;
    g.b = b;
    g.ldb = b_cols;
    g.transpose_b = tb;
    g.c = c;
    g.ldc = n;
    g.accumulate = accumulate;
    if (epilogue != nullptr) {
      g.bias = epilogue->bias;
      g.relu = epilogue->relu;
    }
    CpuGemm(g, d);
  } else {
    // Other types: Eigen's contraction on this thread. Not on the device's
    // ThreadPoolDevice: that pool may be running this kernel, and its Schedule
    // then runs work at once (engine/framework/device.cc), which lets the
    // contraction's packing of the next slice of k overwrite thread-local
    // blocks the current slice still reads.
    CHECK(epilogue == nullptr) << "a fused epilogue is float32 only";
    const ContractDims dims = {Eigen::IndexPair<Eigen::DenseIndex>(ta ? 0 : 1, tb ? 1 : 0)};
    Matrix<T> out(c, m, n);
    if (accumulate) {
      out += ConstMatrix<T>(a, a_rows, a_cols).contract(ConstMatrix<T>(b, b_rows, b_cols), dims);
    } else {
      out = ConstMatrix<T>(a, a_rows, a_cols).contract(ConstMatrix<T>(b, b_rows, b_cols), dims);
    }
  }
}

// The filter taps [lo, hi) of one spatial dim that some output pixel places
// over the input. SAME padding accepts windows far wider than the input; the
// other taps only ever multiply padding zeros, and keeping them made the
// patch matrix (out pixels x window) grow with the square of the window.
void UsedTaps(const WindowDim& w, int64_t in, int64_t* lo, int64_t* hi) {
  // Output o reads input o * stride - pad + t; (out - 1) * stride <= in - 1.
  *lo = std::max<int64_t>(0, w.pad - (w.out - 1) * w.stride);
  *hi = std::min<int64_t>(w.k, w.pad + in);
}

// When some filter rows or columns never meet the input, the geometry of the
// same convolution with the filter cut to the [r0, r0 + rows) x [c0, c0 + cols)
// block that does (the padding shrinks by r0 and c0): returns true and sets
// `cut`, `r0`, `c0`. REQUIRES: the output is not empty.
bool CutToUsedTaps(const ConvGeometry& g, ConvGeometry* cut, int64_t* r0, int64_t* c0) {
  int64_t r1, c1;
  UsedTaps(g.rows, g.in_rows, r0, &r1);
  UsedTaps(g.cols, g.in_cols, c0, &c1);
  if (*r0 == 0 && r1 == g.filter_rows && *c0 == 0 && c1 == g.filter_cols) return false;
  *cut = g;
  cut->filter_rows = cut->rows.k = r1 - *r0;
  cut->filter_cols = cut->cols.k = c1 - *c0;
  cut->rows.pad -= *r0;
  cut->cols.pad -= *c0;
  return true;
}

// Copies the [r0, r0 + cut.filter_rows) x [c0, c0 + cut.filter_cols) block of
// a `full` HWIO filter to a `cut` one (to_block), or back (!to_block).
template <typename T>
void CopyFilterBlock(const ConvGeometry& full, const ConvGeometry& cut, int64_t r0, int64_t c0, T* full_filter,
                     T* block, bool to_block) {
  const int64_t tap = full.in_depth * full.out_depth;  // elements per (row, column) tap
  const int64_t run = cut.filter_cols * tap;
  for (int64_t r = 0; r < cut.filter_rows; ++r) {
    T* f = full_filter + ((r0 + r) * full.filter_cols + c0) * tap;
    T* b = block + r * run;
    if (to_block) {
      std::copy(f, f + run, b);
    } else {
      std::copy(b, b + run, f);
    }
  }
}

// When some filter taps never meet the input (a SAME filter wider than the
// input), copies the used block into *cut_filter and points *g and *w at it,
// so the patch buffers scale with the input; otherwise leaves both as they are.
template <typename T>
absl::Status CutFilterToUsedTaps(OpKernelContext* ctx, const Tensor& filter, ConvGeometry* g, Tensor* cut_filter,
                                 const T** w) {
  ConvGeometry cut;
  int64_t r0, c0;
  if (!CutToUsedTaps(*g, &cut, &r0, &c0)) return absl::OkStatus();
  absl::Status s = ctx->allocate_temp(DataTypeToEnum<T>::value, cut.filter_shape(), cut_filter);
  if (!s.ok()) return s;
  CopyFilterBlock<T>(*g, cut, r0, c0, filter.data<T>(), cut_filter->data<T>(), /*to_block=*/true);
  *w = cut_filter->data<T>();
  *g = cut;
  return absl::OkStatus();
}

// Images per chunk so that the patch buffer stays within budget.
int64_t ChunkImages(const ConvGeometry& g) {
  const int64_t pixels = g.out_pixels(), k = g.patch_size();
  if (k != 0 && pixels > kPatchBudget / k) return 1;  // also keeps the product below from overflowing
  const int64_t per_image = std::max<int64_t>(1, pixels * k);
  return std::max<int64_t>(1, std::min<int64_t>(g.batch, kPatchBudget / per_image));
}

// The filter columns [kw0, kw1) of output column ow that fall inside the input
// (dilation 1: consecutive filter columns read consecutive input columns, so in
// NHWC each filter row's valid part is one contiguous span of (kw1 - kw0) * C).
struct ColumnSpan {
  int64_t kw0, kw1, iw0;  // iw0: the input column of kw0
};
inline ColumnSpan ValidColumns(const ConvGeometry& g, int64_t ow) {
  const int64_t iw = ow * g.cols.stride - g.cols.pad;
  ColumnSpan s;
  s.kw0 = std::max<int64_t>(0, -iw);
  s.kw1 = std::min<int64_t>(g.filter_cols, g.in_cols - iw);
  if (s.kw1 < s.kw0) s.kw1 = s.kw0;
  s.iw0 = iw + s.kw0;
  return s;
}

// Calls move(offset, size) over [0, bytes) in fixed sizes (32, 16, 8 or 4
// bytes, as std::integral_constant), the last one overlapping the one before:
// for the short spans of im2col (5 floats for a one-channel 5x5 filter) the
// compiler inlines fixed-size moves, where GCC turns a plain copy or fill loop
// into a memcpy/memset call per span (so this must inline: measured 3.5 vs
// 4.2 ms for the first conv layer). REQUIRES: bytes is 0 or at least 4.
template <typename Move>
[[gnu::always_inline]] inline void ForFixedChunks(int64_t bytes, const Move& move) {
  if (bytes >= 32) {
    int64_t i = 0;
    for (; i + 32 <= bytes; i += 32) move(i, std::integral_constant<size_t, 32>());
    if (i < bytes) move(bytes - 32, std::integral_constant<size_t, 32>());
  } else if (bytes >= 16) {
    move(0, std::integral_constant<size_t, 16>());
    move(bytes - 16, std::integral_constant<size_t, 16>());
  } else if (bytes >= 8) {
    move(0, std::integral_constant<size_t, 8>());
    move(bytes - 8, std::integral_constant<size_t, 8>());
  } else if (bytes >= 4) {
    move(0, std::integral_constant<size_t, 4>());
    move(bytes - 4, std::integral_constant<size_t, 4>());
  }
}

// dst[0, n) = src[0, n).
template <typename T>
inline void CopySpan(const T* __restrict src, int64_t n, T* __restrict dst) {
  static_assert(sizeof(T) % 4 == 0, "spans are moved in multiples of 4 bytes");
  const char* s = reinterpret_cast<const char*>(src);
  char* d = reinterpret_cast<char*>(dst);
  ForFixedChunks(n * static_cast<int64_t>(sizeof(T)), [&](int64_t at, auto size) { std::memcpy(d + at, s + at, size); });
}

// dst[0, n) = 0 (all-zero bytes: float and double zero).
template <typename T>
inline void ZeroSpan(int64_t n, T* dst) {
  static_assert(sizeof(T) % 4 == 0 && std::is_trivially_copyable<T>::value, "zeroed as bytes");
  char* d = reinterpret_cast<char*>(dst);
  ForFixedChunks(n * static_cast<int64_t>(sizeof(T)), [&](int64_t at, auto size) { std::memset(d + at, 0, size); });
}

// A "unit" is one output row of one image: unit u = image * OH + oh, whose OW
// output pixels are OW rows of the patch matrix.

// Fills patches[(u - u0) * OW + ow, :] for units [u0, u1), on this thread.
template <typename T>
void Im2ColUnits(const ConvGeometry& g, const T* input, int64_t u0, int64_t u1, T* patches) {
  const int64_t oh_n = g.rows.out, ow_n = g.cols.out, c = g.in_depth;
  const int64_t filter_row = g.filter_cols * c;
  T* dst = patches;
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t i = u / oh_n, oh = u % oh_n;
    const T* image = input + i * g.in_rows * g.in_cols * c;
    for (int64_t ow = 0; ow < ow_n; ++ow) {
      const ColumnSpan span = ValidColumns(g, ow);
      const int64_t left = span.kw0 * c, valid = (span.kw1 - span.kw0) * c;
      for (int64_t kh = 0; kh < g.filter_rows; ++kh, dst += filter_row) {
        const int64_t ih = oh * g.rows.stride - g.rows.pad + kh;
        if (ih < 0 || ih >= g.in_rows) {
          ZeroSpan(filter_row, dst);
          continue;
        }
        if (left > 0) ZeroSpan(left, dst);
        if (valid > 0) CopySpan(image + (ih * g.in_cols + span.iw0) * c, valid, dst + left);
        if (left + valid < filter_row) ZeroSpan(filter_row - left - valid, dst + left + valid);
      }
    }
  }
}

// Adds patches[(u - u0) * OW + ow, :] back into `output` for units [u0, u1),
// on this thread (callers give concurrent calls disjoint images).
template <typename T>
void Col2ImUnits(const ConvGeometry& g, const T* patches, int64_t u0, int64_t u1, T* output) {
  const int64_t oh_n = g.rows.out, c = g.in_depth;
  const int64_t filter_row = g.filter_cols * c;
  const T* src = patches;
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t i = u / oh_n, oh = u % oh_n;
    T* image = output + i * g.in_rows * g.in_cols * c;
    for (int64_t ow = 0; ow < g.cols.out; ++ow) {
      const ColumnSpan span = ValidColumns(g, ow);
      const int64_t left = span.kw0 * c, valid = (span.kw1 - span.kw0) * c;
      for (int64_t kh = 0; kh < g.filter_rows; ++kh, src += filter_row) {
        const int64_t ih = oh * g.rows.stride - g.rows.pad + kh;
        if (ih < 0 || ih >= g.in_rows || valid == 0) continue;
        T* __restrict dst = image + (ih * g.in_cols + span.iw0) * c;
        const T* __restrict from = src + left;
        for (int64_t j = 0; j < valid; ++j) dst[j] += from[j];
      }
    }
  }
}

// Im2ColUnits for images [first_image, +count), output rows in parallel.
template <typename T>
void Im2Col(const Eigen::ThreadPoolDevice& d, const ConvGeometry& g, const T* input, int64_t first_image,
            int64_t count, T* patches) {
  const int64_t oh_n = g.rows.out, ow_n = g.cols.out, k = g.patch_size();
  ParallelForRanges(d.getPool(), d.numThreads(), count * oh_n, ow_n * g.filter_rows * g.filter_cols, 1,
                    [&](int64_t first, int64_t last) {
                      Im2ColUnits(g, input, first_image * oh_n + first, first_image * oh_n + last,
                                  patches + first * ow_n * k);
                    });
}

// Col2ImUnits for images [first_image, +count) of `output` (which the caller
// zeroed); images in parallel.
template <typename T>
void Col2Im(const Eigen::ThreadPoolDevice& d, const ConvGeometry& g, const T* patches, int64_t first_image,
            int64_t count, T* output) {
  const int64_t oh_n = g.rows.out;
  const int64_t per_image = g.out_pixels() * g.patch_size();
  ParallelForRanges(d.getPool(), d.numThreads(), count, per_image, 1, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const int64_t image = first_image + i;
      Col2ImUnits(g, patches + i * per_image, image * oh_n, (image + 1) * oh_n, output);
    }
  });
}

template <typename T>
absl::Status AllocatePatches(OpKernelContext* ctx, int64_t rows, int64_t k, Tensor* patches) {
  auto shape = TensorShape::Build({rows, k});
  if (!shape.ok()) return shape.status();
  return ctx->allocate_temp(DataTypeToEnum<T>::value, *shape, patches);
}

// ---- float32: each intra-op thread walks its own output rows in pieces ----
//
// A task owns a range of units and works through it in pieces of at most
// kPieceFloats patch elements (they stay in L2): im2col of the piece, then a
// one-thread CpuGemm against the filter, packed once per call (PackGemmB).
// No patch matrix for the whole batch, and one hand-off to the pool per op
// rather than one per chunk. Results do not depend on the thread count: the
// pieces of a unit range always run in the same order, and the filter
// gradient sums fixed groups of units (kFilterGroups) in a fixed order.

constexpr int64_t kPieceFloats = 96 * 1024;          // 384 KB of patches per piece
constexpr int64_t kFilterPieceFloats = 256 * 1024;   // filter gradient: longer products per C
constexpr int64_t kFilterGroups = 8;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Units per piece: at least one, at most `budget` patch floats when possible.
int64_t PieceUnits(const ConvGeometry& g, int64_t budget) {
  return std::max<int64_t>(1, budget / std::max<int64_t>(1, g.cols.out * g.patch_size()));
}

// One product of a piece; a lone task (tiny inputs) keeps the pool for the
// product itself.
void PieceGemm(const Eigen::ThreadPoolDevice& d, int64_t tasks, const GemmArgs& args) {
  if (tasks == 1) {
    CpuGemm(args, d);
  } else {
    CpuGemm(args, nullptr, 1);
  }
}

absl::Status AllocateFloats(OpKernelContext* ctx, int64_t n, Tensor* t) {
  auto shape = TensorShape::Build({n});
  if (!shape.ok()) return shape.status();
  return ctx->allocate_temp(DT_FLOAT, *shape, t);
}

int64_t TaskCount(const Eigen::ThreadPoolDevice& d, int64_t work_items) {
  return std::max<int64_t>(1, std::min<int64_t>(d.numThreads(), work_items));
}

// out[units x OW, O] = patches x filter[K, O], then `epilogue`'s bias and
// relu (none when null) as each piece's product stores its rows.
absl::Status ConvForwardFloat(OpKernelContext* ctx, const ConvGeometry& g, const float* input, const float* filter,
                              float* out, const GemmArgs* epilogue) {
  const auto& d = ctx->eigen_cpu_device();
  const int64_t k = g.patch_size(), o = g.out_depth, ow = g.cols.out;
  Tensor packed, buffers;
  absl::Status s = AllocateFloats(ctx, PackedGemmBFloats(k, o), &packed);
  if (!s.ok()) return s;
  PackGemmB(filter, o, /*transpose_b=*/false, k, o, packed.data<float>());
  const int64_t units = g.batch * g.rows.out, piece = std::min(units, PieceUnits(g, kPieceFloats));
  const int64_t tasks = TaskCount(d, CeilDiv(units, piece));
  s = AllocateFloats(ctx, tasks * piece * ow * k, &buffers);
  if (!s.ok()) return s;
  RunTasks(d.getPool(), tasks, [&](int64_t t) {
    float* patches = buffers.data<float>() + t * piece * ow * k;
    const int64_t end = (t + 1) * units / tasks;
    for (int64_t u = t * units / tasks; u < end; u += piece) {
      const int64_t u1 = std::min(end, u + piece);
      Im2ColUnits(g, input, u, u1, patches);
      GemmArgs args;
      args.m = (u1 - u) * ow;
      args.n = o;
      args.k = k;
      args.a = patches;
      args.lda = k;
      args.packed_b = packed.data<float>();
      args.c = out + u * ow * o;
      args.ldc = o;
      if (epilogue != nullptr) {
        args.bias = epilogue->bias;
        args.relu = epilogue->relu;
      }
      PieceGemm(d, tasks, args);
    }
  });
  return absl::OkStatus();
}

// dx (zeroed by the caller) += col2im(dy x filter^T). Tasks own whole images,
// so no two write the same element.
absl::Status ConvBackpropInputFloat(OpKernelContext* ctx, const ConvGeometry& g, const float* filter,
                                    const float* dy, float* dx) {
  const auto& d = ctx->eigen_cpu_device();
  const int64_t k = g.patch_size(), o = g.out_depth, ow = g.cols.out, oh_n = g.rows.out;
  Tensor packed, buffers;
  absl::Status s = AllocateFloats(ctx, PackedGemmBFloats(o, k), &packed);
  if (!s.ok()) return s;
  PackGemmB(filter, o, /*transpose_b=*/true, o, k, packed.data<float>());
  const int64_t piece = std::min(oh_n, PieceUnits(g, kPieceFloats));
  const int64_t tasks = TaskCount(d, g.batch);
  s = AllocateFloats(ctx, tasks * piece * ow * k, &buffers);
  if (!s.ok()) return s;
  RunTasks(d.getPool(), tasks, [&](int64_t t) {
    float* patches = buffers.data<float>() + t * piece * ow * k;
    for (int64_t image = t * g.batch / tasks; image < (t + 1) * g.batch / tasks; ++image) {
      for (int64_t u = image * oh_n; u < (image + 1) * oh_n; u += piece) {
        const int64_t u1 = std::min((image + 1) * oh_n, u + piece);
        GemmArgs args;
        args.m = (u1 - u) * ow;
        args.n = k;
        args.k = o;
        args.a = dy + u * ow * o;
        args.lda = o;
        args.packed_b = packed.data<float>();
        args.c = patches;
        args.ldc = k;
        PieceGemm(d, tasks, args);
        Col2ImUnits(g, patches, u, u1, dx);
      }
    }
  });
  return absl::OkStatus();
}

// dfilter[K, O] = patches^T x dy, summed over kFilterGroups fixed groups of
// units (one partial each, added in group order). Each partial is
// dfilter^T = dy^T x patches, which reads the patches row by row in place,
// unless dfilter = patches^T x dy wastes clearly less on tile padding (a
// one-channel 5x5 filter: K = 25 columns fill 2 tiles of 16 badly).
absl::Status ConvBackpropFilterFloat(OpKernelContext* ctx, const ConvGeometry& g, const float* input,
                                     const float* dy, float* dw) {
  const auto& d = ctx->eigen_cpu_device();
  const int64_t k = g.patch_size(), o = g.out_depth, ow = g.cols.out;
  const bool transposed = CpuGemmTileUse(o, k) * 1.1 >= CpuGemmTileUse(k, o);
  const int64_t units = g.batch * g.rows.out, groups = std::min(units, kFilterGroups);
  const int64_t piece = std::min(CeilDiv(units, groups), PieceUnits(g, kFilterPieceFloats));
  const int64_t tasks = TaskCount(d, groups);
  Tensor partials, buffers;
  absl::Status s = AllocateFloats(ctx, groups * o * k, &partials);
  if (!s.ok()) return s;
  s = AllocateFloats(ctx, tasks * piece * ow * k, &buffers);
  if (!s.ok()) return s;
  RunTasks(d.getPool(), tasks, [&](int64_t t) {
    float* patches = buffers.data<float>() + t * piece * ow * k;
    for (int64_t group = t; group < groups; group += tasks) {
      const int64_t begin = group * units / groups, end = (group + 1) * units / groups;
      for (int64_t u = begin; u < end; u += piece) {
        const int64_t u1 = std::min(end, u + piece);
        Im2ColUnits(g, input, u, u1, patches);
        const float* dy_rows = dy + u * ow * o;
        GemmArgs args;
        args.k = (u1 - u) * ow;
        args.transpose_a = true;
        if (transposed) {  // dfilter^T [O, K] (+)= dy^T x patches
          args.m = o;
          args.n = k;
          args.a = dy_rows;
          args.lda = o;
          args.b = patches;
          args.ldb = k;
          args.ldc = k;
        } else {  // dfilter [K, O] (+)= patches^T x dy
          args.m = k;
          args.n = o;
          args.a = patches;
          args.lda = k;
          args.b = dy_rows;
          args.ldb = o;
          args.ldc = o;
        }
        args.c = partials.data<float>() + group * o * k;
        args.accumulate = u > begin;
        PieceGemm(d, tasks, args);
      }
    }
  });
  const float* partial = partials.data<float>();
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < o; ++j) {
      const int64_t at = transposed ? j * k + i : i * o + j;
      float sum = partial[at];
      for (int64_t group = 1; group < groups; ++group) sum += partial[group * o * k + at];
      dw[i * o + j] = sum;
    }
  }
  return absl::OkStatus();
}

class ConvOpBase : public OpKernel {
 public:
  explicit ConvOpBase(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadWindowAttrs(ctx, &strides_, nullptr, &padding_));
  }

 protected:
  std::vector<int64_t> strides_;
  std::string padding_;
};

// The forward convolution of Conv2D and _FusedConv2D: output 0 = the
// convolution of inputs 0 and 1, then (float32 only) `bias` (null: none, else
// checked against the output channels) and relu in the products' epilogue.
template <typename T>
void ConvForward(OpKernelContext* ctx, const std::vector<int64_t>& strides, const std::string& padding,
                 const Tensor* bias, bool relu) {
  const Tensor& input = ctx->input(0);
  const Tensor& filter = ctx->input(1);
  ConvGeometry g;
  OP_REQUIRES_OK(ctx, MakeConvGeometry(input.shape(), filter.shape(), strides, padding, &g));
  GemmArgs epilogue_args;
  const GemmArgs* epilogue = nullptr;
  if (bias != nullptr || relu) {
    if constexpr (std::is_same<T, float>::value) {
      if (bias != nullptr) {
        OP_REQUIRES_OK(ctx, CheckBias(*bias, g.out_depth));
        epilogue_args.bias = bias->data<float>();
      }
      epilogue_args.relu = relu;
      epilogue = &epilogue_args;
    } else {
      CHECK(false) << "a fused epilogue is float32 only";
    }
  }
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.out_shape, &out));
  if (out->NumElements() == 0) return;
  const auto& d = ctx->eigen_cpu_device();
  if (g.patch_size() == 0) {
    out->flat<T>().setZero();
    if constexpr (std::is_same<T, float>::value) {
      if (epilogue != nullptr) {  // act(0 + bias) everywhere, as CpuGemm does for k == 0
        GemmArgs zero_k = epilogue_args;
        zero_k.m = out->NumElements() / g.out_depth;
        zero_k.n = g.out_depth;
        zero_k.c = out->data<float>();
        zero_k.ldc = g.out_depth;
        zero_k.accumulate = true;
        CpuGemm(zero_k, nullptr, 1);
      }
    }
    return;
  }
  const T* w = filter.data<T>();
  Tensor cut_filter;
  OP_REQUIRES_OK(ctx, CutFilterToUsedTaps<T>(ctx, filter, &g, &cut_filter, &w));
  const int64_t k = g.patch_size(), o = g.out_depth;
  if constexpr (std::is_same<T, float>::value) {
    if (single_channel::Applies(g)) {  // one input channel: no patch matrix
      single_channel::Forward(g, input.data<float>(), w, epilogue_args.bias, epilogue_args.relu, out->data<float>(),
                              d.getPool(), d.numThreads());
      return;
    }
  }
  if (g.is_pointwise() && g.rows.pad == 0 && g.cols.pad == 0) {
    const int64_t rows = g.batch * g.in_rows * g.in_cols;
    Product<T>(d, input.data<T>(), rows, k, false, w, k, o, false, out->data<T>(), false, epilogue);
    return;
  }
  if constexpr (std::is_same<T, float>::value) {
    OP_REQUIRES_OK(ctx, ConvForwardFloat(ctx, g, input.data<float>(), w, out->data<float>(), epilogue));
    return;
  }
  const int64_t chunk = ChunkImages(g);
  Tensor patches;
  OP_REQUIRES_OK(ctx, AllocatePatches<T>(ctx, chunk * g.out_pixels(), k, &patches));
  for (int64_t first = 0; first < g.batch; first += chunk) {
    const int64_t count = std::min(chunk, g.batch - first);
    const int64_t rows = count * g.out_pixels();
    Im2Col<T>(d, g, input.data<T>(), first, count, patches.data<T>());
    Product<T>(d, patches.data<T>(), rows, k, false, w, k, o, false, out->data<T>() + first * g.out_pixels() * o,
               false);
  }
}

template <typename T>
class Conv2DOp : public ConvOpBase {
 public:
  using ConvOpBase::ConvOpBase;
  void Compute(OpKernelContext* ctx) override { ConvForward<T>(ctx, strides_, padding_, nullptr, false); }
};

// out = act(Conv2D(input, filter) + bias); fused_ops [BiasAdd] or [BiasAdd, Relu].
class FusedConv2DOp : public ConvOpBase {
 public:
  explicit FusedConv2DOp(OpKernelConstruction* ctx) : ConvOpBase(ctx) {
    OP_REQUIRES_OK(ctx, ReadBiasEpilogueAttrs(ctx, &relu_));
  }
  void Compute(OpKernelContext* ctx) override { ConvForward<float>(ctx, strides_, padding_, &ctx->input(2), relu_); }

 private:
  bool relu_ = false;
};

template <typename T>
class Conv2DBackpropInputOp : public ConvOpBase {
 public:
  using ConvOpBase::ConvOpBase;
  void Compute(OpKernelContext* ctx) override {
    TensorShape input_shape;
    ConvGeometry g;
    OP_REQUIRES_OK(ctx, ConvBackpropInputGeometry(ctx, strides_, padding_, &input_shape, &g));
    const Tensor& filter = ctx->input(1);
    const Tensor& dy = ctx->input(2);
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input_shape, &dx));
    if (dx->NumElements() == 0) return;
    dx->flat<T>().setZero();
    if (dy.NumElements() == 0) return;
    const auto& d = ctx->eigen_cpu_device();
    const T* w = filter.data<T>();
    Tensor cut_filter;
    OP_REQUIRES_OK(ctx, CutFilterToUsedTaps<T>(ctx, filter, &g, &cut_filter, &w));
    const int64_t k = g.patch_size(), o = g.out_depth;
    if (g.is_pointwise() && g.rows.pad == 0 && g.cols.pad == 0) {
      const int64_t rows = g.batch * g.in_rows * g.in_cols;
      Product<T>(d, dy.data<T>(), rows, o, false, w, k, o, true, dx->data<T>(), false);
      return;
    }
    if constexpr (std::is_same<T, float>::value) {
      OP_REQUIRES_OK(ctx, ConvBackpropInputFloat(ctx, g, w, dy.data<float>(), dx->data<float>()));
      return;
    }
    const int64_t chunk = ChunkImages(g);
    Tensor patches;
    OP_REQUIRES_OK(ctx, AllocatePatches<T>(ctx, chunk * g.out_pixels(), k, &patches));
    for (int64_t first = 0; first < g.batch; first += chunk) {
      const int64_t count = std::min(chunk, g.batch - first);
      const int64_t rows = count * g.out_pixels();
      Product<T>(d, dy.data<T>() + first * g.out_pixels() * o, rows, o, false, w, k, o, true, patches.data<T>(),
                 false);
      Col2Im<T>(d, g, patches.data<T>(), first, count, dx->data<T>());
    }
  }
};

template <typename T>
class Conv2DBackpropFilterOp : public ConvOpBase {
 public:
  using ConvOpBase::ConvOpBase;
  void Compute(OpKernelContext* ctx) override {
    TensorShape filter_shape;
    ConvGeometry g;
    OP_REQUIRES_OK(ctx, ConvBackpropFilterGeometry(ctx, strides_, padding_, &filter_shape, &g));
    const Tensor& input = ctx->input(0);
    const Tensor& dy = ctx->input(2);
    Tensor* dw;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, filter_shape, &dw));
    if (dw->NumElements() == 0) return;
    dw->flat<T>().setZero();
    if (dy.NumElements() == 0) return;
    // Taps that never meet the input get a zero gradient; only the used block
    // is computed, in a buffer of its own, and copied into place.
    ConvGeometry cut;
    int64_t r0, c0;
    if (CutToUsedTaps(g, &cut, &r0, &c0)) {
      Tensor block;
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeToEnum<T>::value, cut.filter_shape(), &block));
      block.flat<T>().setZero();
      OP_REQUIRES_OK(ctx, FilterGradient(ctx, cut, input, dy, block.data<T>()));
      CopyFilterBlock<T>(g, cut, r0, c0, dw->data<T>(), block.data<T>(), /*to_block=*/false);
      return;
    }
    OP_REQUIRES_OK(ctx, FilterGradient(ctx, g, input, dy, dw->data<T>()));
  }

 private:
  // dw (zeroed, of g's filter shape) = the filter gradient.
  static absl::Status FilterGradient(OpKernelContext* ctx, const ConvGeometry& g, const Tensor& input, const Tensor& dy,
                                     T* dw) {
    const auto& d = ctx->eigen_cpu_device();
    const int64_t k = g.patch_size(), o = g.out_depth;
    if (g.is_pointwise() && g.rows.pad == 0 && g.cols.pad == 0) {
      const int64_t rows = g.batch * g.in_rows * g.in_cols;
      Product<T>(d, input.data<T>(), rows, k, true, dy.data<T>(), rows, o, false, dw, false);
      return absl::OkStatus();
    }
    if constexpr (std::is_same<T, float>::value) {
      if (single_channel::Applies(g)) {
        single_channel::BackpropFilter(g, input.data<float>(), dy.data<float>(), dw, d.getPool(), d.numThreads());
        return absl::OkStatus();
      }
      return ConvBackpropFilterFloat(ctx, g, input.data<float>(), dy.data<float>(), dw);
    }
    const int64_t chunk = ChunkImages(g);
    Tensor patches;
    absl::Status s = AllocatePatches<T>(ctx, chunk * g.out_pixels(), k, &patches);
    if (!s.ok()) return s;
    for (int64_t first = 0; first < g.batch; first += chunk) {
      const int64_t count = std::min(chunk, g.batch - first);
      const int64_t rows = count * g.out_pixels();
      Im2Col<T>(d, g, input.data<T>(), first, count, patches.data<T>());
      Product<T>(d, patches.data<T>(), rows, k, true, dy.data<T>() + first * g.out_pixels() * o, rows, o, false, dw,
                 true);
    }
    return absl::OkStatus();
  }
};

#define SLUICE_REGISTER_CONV_(T)                                                                            \
  REGISTER_KERNEL_BUILDER(Name("Conv2D").Device(kDeviceCpu).TypeConstraint<T>("T"), Conv2DOp<T>);           \
  REGISTER_KERNEL_BUILDER(Name("Conv2DBackpropInput").Device(kDeviceCpu).TypeConstraint<T>("T"),            \
                          Conv2DBackpropInputOp<T>);                                                        \
  REGISTER_KERNEL_BUILDER(Name("Conv2DBackpropFilter").Device(kDeviceCpu).TypeConstraint<T>("T"),           \
                          Conv2DBackpropFilterOp<T>)
SLUICE_REGISTER_CONV_(float);
SLUICE_REGISTER_CONV_(double);
#undef SLUICE_REGISTER_CONV_
REGISTER_KERNEL_BUILDER(Name("_FusedConv2D").Device(kDeviceCpu).TypeConstraint<float>("T"), FusedConv2DOp);

}  // namespace
}  // namespace sluice
