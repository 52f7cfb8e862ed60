// The CUDA kernels of cudnn_util_kernels.h: transposes (one with a bias and
// Relu on the way), the turned filter, bottom/right zero padding and its
// crop, and NHWC pooling (MaxPoolGrad: a gather per input element, or a
// scatter per window when windows do not overlap). Every kernel walks its
// elements (or tiles) with a grid-stride loop, so any size runs with a
// bounded grid; the pooling kernels index with int32 where everything fits,
// else int64.
#include "engine/kernels/gpu/cudnn_util_kernels.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "engine/kernels/gpu/conv_filter_flip.h"

namespace sluice {
namespace gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

int64_t Blocks(int64_t n) { return std::max<int64_t>(1, std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks * 8)); }

#define SLUICE_GRID_LOOP(i, n) \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// ---- transpose: 32x32 tiles through shared memory, 32x8 threads ----
constexpr int kTile = 32;
constexpr int kTileRowsPerPass = 8;

// kEpilogue: out = in + bias[row of in], then max(0, .) with `relu` (NaN
// stays NaN, as Relu's a < 0 ? 0 : a): a convolution's bias and Relu applied
// on its way from NCHW back to NHWC, in the same pass.
template <typename T, bool kEpilogue = false>
__global__ void TransposeKernel(const T* __restrict__ in, int64_t batch, int64_t rows, int64_t cols,
                                T* __restrict__ out, const T* __restrict__ bias = nullptr, bool relu = false) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t tiles_r = (rows + kTile - 1) / kTile, tiles_c = (cols + kTile - 1) / kTile;
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    const T* src = in + b * rows * cols;
    T* dst = out + b * rows * cols;
    for (int64_t tr = blockIdx.y; tr < tiles_r; tr += gridDim.y) {
      for (int64_t tc = blockIdx.x; tc < tiles_c; tc += gridDim.x) {
        const int64_t r0 = tr * kTile, c0 = tc * kTile;
        for (int j = threadIdx.y; j < kTile; j += kTileRowsPerPass) {
          const int64_t r = r0 + j, c = c0 + threadIdx.x;
          if (r < rows && c < cols) {
            T v = src[r * cols + c];
            if (kEpilogue) {
              v += bias[r];
              if (relu && v < T(0)) v = T(0);
            }
            tile[j][threadIdx.x] = v;
          }
        }
        __syncthreads();
        // out is [cols, rows]: thread x walks rows of `in` (contiguous in out).
        for (int j = threadIdx.y; j < kTile; j += kTileRowsPerPass) {
          const int64_t c = c0 + j, r = r0 + threadIdx.x;
          if (r < rows && c < cols) dst[c * rows + r] = tile[threadIdx.x][j];
        }
        __syncthreads();
      }
    }
  }
}

// With `bias` not null: the epilogue (TransposeKernel's kEpilogue).
template <typename T>
cudaError_t Transpose(cudaStream_t stream, const T* in, int64_t batch, int64_t rows, int64_t cols, T* out,
                      const T* bias = nullptr, bool relu = false) {
  if (batch <= 0 || rows <= 0 || cols <= 0) return cudaSuccess;
  const int64_t tiles_r = (rows + kTile - 1) / kTile, tiles_c = (cols + kTile - 1) / kTile;
  dim3 grid(static_cast<unsigned>(std::min<int64_t>(tiles_c, 1 << 20)),
            static_cast<unsigned>(std::min<int64_t>(tiles_r, kMaxBlocks)),
            static_cast<unsigned>(std::min<int64_t>(batch, kMaxBlocks)));
  if (bias != nullptr) {
    TransposeKernel<T, true><<<grid, dim3(kTile, kTileRowsPerPass), 0, stream>>>(in, batch, rows, cols, out, bias, relu);
  } else {
    TransposeKernel<T><<<grid, dim3(kTile, kTileRowsPerPass), 0, stream>>>(in, batch, rows, cols, out);
  }
  return cudaGetLastError();
}

// ---- filter layouts ----
template <typename T>
__global__ void HwioToOihwKernel(const T* __restrict__ in, int64_t h, int64_t w, int64_t i, int64_t o,
                                 T* __restrict__ out) {
  const int64_t n = h * w * i * o;
  SLUICE_GRID_LOOP(idx, n) {  // idx walks `in` (HWIO)
    int64_t rest = idx;
    const int64_t oo = rest % o;
    rest /= o;
    const int64_t ii = rest % i;
    rest /= i;
    const int64_t ww = rest % w;
    const int64_t hh = rest / w;
    out[((oo * i + ii) * h + hh) * w + ww] = in[idx];
  }
}

template <typename T>
__global__ void OihwToHwioKernel(const T* __restrict__ in, int64_t h, int64_t w, int64_t i, int64_t o,
                                 T* __restrict__ out) {
  const int64_t n = h * w * i * o;
  SLUICE_GRID_LOOP(idx, n) {  // idx walks `out` (HWIO)
    int64_t rest = idx;
    const int64_t oo = rest % o;
    rest /= o;
    const int64_t ii = rest % i;
    rest /= i;
    const int64_t ww = rest % w;
    const int64_t hh = rest / w;
    out[idx] = in[((oo * i + ii) * h + hh) * w + ww];
  }
}

// The turned filter (conv_filter_flip.h): one thread per element of `out`.
template <typename T>
__global__ void FlipFilterKernel(const T* __restrict__ in, int64_t h, int64_t w, int64_t i, int64_t o, bool nchw,
                                 T* __restrict__ out) {
  const int64_t n = h * w * i * o;
  SLUICE_GRID_LOOP(idx, n) { out[idx] = in[FlippedFilterSource(idx, h, w, i, o, nchw)]; }
}

// ---- padding and crop ----
template <typename T>
__global__ void PadKernel(const T* __restrict__ in, int64_t images, int64_t rows, int64_t cols, int64_t depth,
                          int64_t out_rows, int64_t out_cols, T* __restrict__ out) {
  const int64_t n = images * out_rows * out_cols * depth;
  SLUICE_GRID_LOOP(idx, n) {
    int64_t rest = idx / depth;
    const int64_t d = idx % depth;
    const int64_t c = rest % out_cols;
    rest /= out_cols;
    const int64_t r = rest % out_rows;
    const int64_t image = rest / out_rows;
    out[idx] = (r < rows && c < cols) ? in[((image * rows + r) * cols + c) * depth + d] : T(0);
  }
}

template <typename T>
__global__ void CropKernel(const T* __restrict__ in, int64_t images, int64_t rows, int64_t cols, int64_t depth,
                           int64_t in_rows, int64_t in_cols, T* __restrict__ out) {
  const int64_t n = images * rows * cols * depth;
  SLUICE_GRID_LOOP(idx, n) {
    int64_t rest = idx / depth;
    const int64_t d = idx % depth;
    const int64_t c = rest % cols;
    rest /= cols;
    const int64_t r = rest % rows;
    const int64_t image = rest / rows;
    out[idx] = in[((image * in_rows + r) * in_cols + c) * depth + d];
  }
}

// ---- uniform fill (the convolution search's inputs) ----

// A counter-based hash (SplitMix64's finalizer) of (seed, i) to [low, high].
template <typename T>
__global__ void FillUniformKernel(T* __restrict__ out, int64_t n, uint64_t seed, double low, double high) {
  SLUICE_GRID_LOOP(i, n) {
    uint64_t z = seed + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    out[i] = static_cast<T>(low + static_cast<double>(z >> 11) * ((high - low) / 9007199254740992.0));
  }
}

// ---- pooling ----
// The kernels index with I = int32_t when every tensor and attr fits (the
// usual case: 64-bit division and modulo cost tens of instructions each on a
// GPU, and MaxPoolGrad's gather does about ten of them per element; with
// int64 it took 0.94 ms for fashion_cnn's pool1 at batch 1024 on an H200),
// else with int64_t.
template <typename I>
struct Dims {
  I batch, in_rows, in_cols, depth, out_rows, out_cols, k_rows, k_cols, stride_rows, stride_cols, pad_rows, pad_cols;
  explicit Dims(const PoolDims& d)
      : batch(static_cast<I>(d.batch)),
        in_rows(static_cast<I>(d.in_rows)),
        in_cols(static_cast<I>(d.in_cols)),
        depth(static_cast<I>(d.depth)),
        out_rows(static_cast<I>(d.out_rows)),
        out_cols(static_cast<I>(d.out_cols)),
        k_rows(static_cast<I>(d.k_rows)),
        k_cols(static_cast<I>(d.k_cols)),
        stride_rows(static_cast<I>(d.stride_rows)),
        stride_cols(static_cast<I>(d.stride_cols)),
        pad_rows(static_cast<I>(d.pad_rows)),
        pad_cols(static_cast<I>(d.pad_cols)) {}
};

// Whether int32 indices cannot overflow: element counts below 2^30 (so an
// index plus the grid's stride, at most 2^27, stays below 2^31), and window
// attrs and sizes below 2^20. Every index product is at most an element
// count; window starts (o * stride - pad) stay within the padded input,
// since the kernels' callers derive the output sizes from the input's
// (PoolOpBase::Geometry).
static_assert(kMaxBlocks * 8 * kThreads <= (int64_t{1} << 27), "FitsInt32 assumes a grid stride below 2^27");
bool FitsInt32(const PoolDims& d) {
  constexpr int64_t kElements = int64_t{1} << 30, kAttr = int64_t{1} << 20;
  auto product_below = [](std::initializer_list<int64_t> factors, int64_t limit) {
    int64_t p = 1;
    for (int64_t f : factors) {
      if (f < 0 || (f > 0 && p > limit / f)) return false;
      p *= f;
    }
    return p < limit;
  };
  return product_below({d.batch, d.in_rows, d.in_cols, d.depth}, kElements) &&
         product_below({d.batch, d.out_rows, d.out_cols, d.depth}, kElements) && d.k_rows < kAttr &&
         d.k_cols < kAttr && d.stride_rows < kAttr && d.stride_cols < kAttr && d.pad_rows < kAttr &&
         d.pad_cols < kAttr && d.in_rows < kAttr && d.in_cols < kAttr && d.out_rows < kAttr && d.out_cols < kAttr;
}

#define SLUICE_GRID_LOOP_I(I, i, n) \
  for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < (n); \
       i += static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x))

template <typename I>
struct Range {
  I lo, hi;  // [lo, hi)
};

// The input positions of window `o` along one dimension, clipped.
template <typename I>
__device__ inline Range<I> WindowOf(I o, I stride, I pad, I k, I in) {
  const I start = o * stride - pad;
  Range<I> r;
  r.hi = k >= in - start ? in : start + k;
  r.lo = start < 0 ? 0 : start;
  return r;
}

// The windows [lo, hi) along one dimension that cover input position p.
template <typename I>
__device__ inline Range<I> WindowsCovering(I p, I stride, I pad, I k, I out) {
  const I a = p + pad;  // window o covers p iff o*stride <= a < o*stride + k
  Range<I> r;
  const I first = a - k + 1;  // o*stride >= first
  r.lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  r.hi = a / stride + 1;
  if (r.hi > out) r.hi = out;
  if (r.lo > r.hi) r.lo = r.hi;
  return r;
}

// Element `idx` of a pooled [batch, out_rows, out_cols, depth] tensor: the
// offset of its image's first element of its channel in the input (and in
// dx), and its window.
template <typename I>
struct PooledElement {
  I channel_offset;
  Range<I> rows, cols;
};

template <typename I>
__device__ inline PooledElement<I> PooledAt(const Dims<I>& d, I idx) {
  I rest = idx / d.depth;
  const I ch = idx % d.depth;
  const I ow = rest % d.out_cols;
  rest /= d.out_cols;
  const I oh = rest % d.out_rows;
  const I image = rest / d.out_rows;
  PooledElement<I> e;
  e.channel_offset = image * d.in_rows * d.in_cols * d.depth + ch;
  e.rows = WindowOf(oh, d.stride_rows, d.pad_rows, d.k_rows, d.in_rows);
  e.cols = WindowOf(ow, d.stride_cols, d.pad_cols, d.k_cols, d.in_cols);
  return e;
}

// The first maximal position of a window in row-major order (a NaN never
// wins: the CPU kernel's `best < v`), and its value; `base` points at the
// channel's element (0, 0) of the image.
template <typename T, typename I>
struct WindowMax {
  I h, w;
  T value;
};

template <typename T, typename I>
__device__ inline WindowMax<T, I> FirstMaximum(const T* base, I in_cols, I depth, Range<I> hr, Range<I> wr) {
  WindowMax<T, I> m{hr.lo, wr.lo, base[(hr.lo * in_cols + wr.lo) * depth]};
  for (I h = hr.lo; h < hr.hi; ++h) {
    for (I w = wr.lo; w < wr.hi; ++w) {
      const T v = base[(h * in_cols + w) * depth];
      if (m.value < v) {
        m.value = v;
        m.h = h;
        m.w = w;
      }
    }
  }
  return m;
}

// Element `idx` of a pool's input [batch, in_rows, in_cols, depth] (the
// gradients' gathers): its row and column, the offsets of its image's element
// (0, 0) of its channel in the input and in the pooled gradient, and the
// windows that cover it.
template <typename I>
struct InputElement {
  I y, x, channel_offset, grad_offset;
  Range<I> out_rows, out_cols;
};

template <typename I>
__device__ inline InputElement<I> InputAt(const Dims<I>& d, I idx) {
  I rest = idx / d.depth;
  const I ch = idx % d.depth;
  InputElement<I> e;
  e.x = rest % d.in_cols;
  rest /= d.in_cols;
  e.y = rest % d.in_rows;
  const I image = rest / d.in_rows;
  e.channel_offset = image * d.in_rows * d.in_cols * d.depth + ch;
  e.grad_offset = image * d.out_rows * d.out_cols * d.depth + ch;
  e.out_rows = WindowsCovering(e.y, d.stride_rows, d.pad_rows, d.k_rows, d.out_rows);
  e.out_cols = WindowsCovering(e.x, d.stride_cols, d.pad_cols, d.k_cols, d.out_cols);
  return e;
}

template <typename T, bool kMax, typename I>
__global__ void PoolKernel(Dims<I> d, const T* __restrict__ in, T* __restrict__ out) {
  const I n = d.batch * d.out_rows * d.out_cols * d.depth;
  SLUICE_GRID_LOOP_I(I, idx, n) {
    const PooledElement<I> e = PooledAt(d, idx);
    const Range<I> hr = e.rows, wr = e.cols;
    const T* base = in + e.channel_offset;
    T acc = base[(hr.lo * d.in_cols + wr.lo) * d.depth];
    bool first = true;
    for (I h = hr.lo; h < hr.hi; ++h) {
      for (I w = wr.lo; w < wr.hi; ++w) {
        if (first) {
          first = false;
          continue;
        }
        const T v = base[(h * d.in_cols + w) * d.depth];
        if (kMax) {
          acc = acc < v ? v : acc;
        } else {
          acc += v;
        }
      }
    }
    if (!kMax) acc = acc / static_cast<T>((hr.hi - hr.lo) * (wr.hi - wr.lo));
    out[idx] = acc;
  }
}

template <typename T, bool kRelu, typename I>
__global__ void MaxPoolGradKernel(Dims<I> d, const T* __restrict__ in, const T* __restrict__ dy,
                                  T* __restrict__ dx) {
  const I n = d.batch * d.in_rows * d.in_cols * d.depth;
  SLUICE_GRID_LOOP_I(I, idx, n) {
    const InputElement<I> e = InputAt(d, idx);
    const I y = e.y, x = e.x;
    const T* base = in + e.channel_offset;
    const T* gbase = dy + e.grad_offset;
    const Range<I> ohr = e.out_rows, owr = e.out_cols;
    T sum = T(0);
    for (I oh = ohr.lo; oh < ohr.hi; ++oh) {
      const Range<I> hr = WindowOf(oh, d.stride_rows, d.pad_rows, d.k_rows, d.in_rows);
      for (I ow = owr.lo; ow < owr.hi; ++ow) {
        const Range<I> wr = WindowOf(ow, d.stride_cols, d.pad_cols, d.k_cols, d.in_cols);
        const WindowMax<T, I> m = FirstMaximum(base, d.in_cols, d.depth, hr, wr);
        if (m.h == y && m.w == x) sum = sum + gbase[(oh * d.out_cols + ow) * d.depth];
      }
    }
    // ReluGrad's mask: the element is a window's maximum only if it was
    // searched, so its own value decides.
    if (kRelu && !(base[(y * d.in_cols + x) * d.depth] > T(0))) sum = T(0);
    dx[idx] = sum;
  }
}

// Windows that do not overlap (stride >= size in both dimensions): one
// thread per window and channel finds the first maximal position (row-major,
// as the gather above), writes the window's gradient there and zeros at the
// window's other positions; with kRelu the gradient is zero unless that
// maximum is > 0 (ReluGrad's mask on the pool's input). Input positions that
// no window covers are zeroed beforehand by the caller. `window_grad` (may be
// null) receives each window's gradient after the mask, in dy's layout.
template <typename T, bool kRelu, typename I>
__global__ void MaxPoolGradScatterKernel(Dims<I> d, const T* __restrict__ in, const T* __restrict__ dy,
                                         T* __restrict__ dx, T* __restrict__ window_grad) {
  const I n = d.batch * d.out_rows * d.out_cols * d.depth;
  SLUICE_GRID_LOOP_I(I, idx, n) {
    const PooledElement<I> e = PooledAt(d, idx);
    const WindowMax<T, I> m = FirstMaximum(in + e.channel_offset, d.in_cols, d.depth, e.rows, e.cols);
    T g = dy[idx];
    if (kRelu && !(m.value > T(0))) g = T(0);
    T* dbase = dx + e.channel_offset;
    for (I h = e.rows.lo; h < e.rows.hi; ++h) {
      for (I w = e.cols.lo; w < e.cols.hi; ++w) {
        dbase[(h * d.in_cols + w) * d.depth] = (h == m.h && w == m.w) ? g : T(0);
      }
    }
    if (window_grad != nullptr) window_grad[idx] = g;
  }
}

template <typename T, typename I>
__global__ void AvgPoolGradKernel(Dims<I> d, const T* __restrict__ dy, T* __restrict__ dx) {
  const I n = d.batch * d.in_rows * d.in_cols * d.depth;
  SLUICE_GRID_LOOP_I(I, idx, n) {
    const InputElement<I> e = InputAt(d, idx);
    const T* gbase = dy + e.grad_offset;
    const Range<I> ohr = e.out_rows, owr = e.out_cols;
    T sum = T(0);
    for (I oh = ohr.lo; oh < ohr.hi; ++oh) {
      const Range<I> hr = WindowOf(oh, d.stride_rows, d.pad_rows, d.k_rows, d.in_rows);
      for (I ow = owr.lo; ow < owr.hi; ++ow) {
        const Range<I> wr = WindowOf(ow, d.stride_cols, d.pad_cols, d.k_cols, d.in_cols);
        const T inv = T(1) / static_cast<T>((hr.hi - hr.lo) * (wr.hi - wr.lo));
        sum += gbase[(oh * d.out_cols + ow) * d.depth] * inv;
      }
    }
    dx[idx] = sum;
  }
}

// Calls launch(Dims<int32_t>) or launch(Dims<int64_t>) (FitsInt32) for `n`
// elements; a kernel's index type is deduced from its Dims argument.
template <typename Launch>
cudaError_t WithIndexType(const PoolDims& d, int64_t n, Launch launch) {
  if (n <= 0) return cudaSuccess;
  if (FitsInt32(d)) {
    launch(Dims<int32_t>(d));
  } else {
    launch(Dims<int64_t>(d));
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t Pool(cudaStream_t stream, const PoolDims& d, const T* in, T* out, bool max) {
  const int64_t n = d.batch * d.out_rows * d.out_cols * d.depth;
  return WithIndexType(d, n, [&](auto dims) {
    if (max) {
      PoolKernel<T, true><<<Blocks(n), kThreads, 0, stream>>>(dims, in, out);
    } else {
      PoolKernel<T, false><<<Blocks(n), kThreads, 0, stream>>>(dims, in, out);
    }
  });
}

// Whether the windows along one dimension tile it: stride == size, the first
// starting at or before 0 (pad >= 0) and the last ending at or after the edge.
bool Tiles(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  return stride == k && (out - 1) * stride - pad + k >= in;
}

template <typename T>
cudaError_t MaxPoolGrad(cudaStream_t stream, const PoolDims& d, const T* in, const T* dy, T* dx, bool relu,
                        T* window_grad) {
  const int64_t n_in = d.batch * d.in_rows * d.in_cols * d.depth;
  if (!PoolWindowsDisjoint(d)) {
    if (window_grad != nullptr) return cudaErrorInvalidValue;  // the caller's bug: see the header
    return WithIndexType(d, n_in, [&](auto dims) {
      if (relu) {
        MaxPoolGradKernel<T, true><<<Blocks(n_in), kThreads, 0, stream>>>(dims, in, dy, dx);
      } else {
        MaxPoolGradKernel<T, false><<<Blocks(n_in), kThreads, 0, stream>>>(dims, in, dy, dx);
      }
    });
  }
  if (n_in <= 0) return cudaSuccess;
  // Positions outside every window get zeros first (stride > size, or VALID
  // windows that stop short of the edge).
  if (!Tiles(d.in_rows, d.out_rows, d.k_rows, d.stride_rows, d.pad_rows) ||
      !Tiles(d.in_cols, d.out_cols, d.k_cols, d.stride_cols, d.pad_cols)) {
    const cudaError_t e = cudaMemsetAsync(dx, 0, static_cast<size_t>(n_in) * sizeof(T), stream);
    if (e != cudaSuccess) return e;
  }
  const int64_t n_out = d.batch * d.out_rows * d.out_cols * d.depth;
  return WithIndexType(d, n_out, [&](auto dims) {
    if (relu) {
      MaxPoolGradScatterKernel<T, true><<<Blocks(n_out), kThreads, 0, stream>>>(dims, in, dy, dx, window_grad);
    } else {
      MaxPoolGradScatterKernel<T, false><<<Blocks(n_out), kThreads, 0, stream>>>(dims, in, dy, dx, window_grad);
    }
  });
}

template <typename T>
cudaError_t AvgPoolGrad(cudaStream_t stream, const PoolDims& d, const T* dy, T* dx) {
  const int64_t n = d.batch * d.in_rows * d.in_cols * d.depth;
  return WithIndexType(d, n, [&](auto dims) { AvgPoolGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(dims, dy, dx); });
}

}  // namespace

#define SLUICE_DEFINE_FOR_(T)                                                                                    \
  cudaError_t LaunchTranspose(cudaStream_t stream, const T* in, int64_t batch, int64_t rows, int64_t cols,      \
                              T* out) {                                                                         \
    return Transpose<T>(stream, in, batch, rows, cols, out);                                                     \
  }                                                                                                              \
  cudaError_t LaunchHwioToOihw(cudaStream_t stream, const T* in, int64_t h, int64_t w, int64_t i, int64_t o,    \
                               T* out) {                                                                        \
    const int64_t n = h * w * i * o;                                                                             \
    if (n <= 0) return cudaSuccess;                                                                              \
    HwioToOihwKernel<T><<<Blocks(n), kThreads, 0, stream>>>(in, h, w, i, o, out);                                \
    return cudaGetLastError();                                                                                   \
  }                                                                                                              \
  cudaError_t LaunchOihwToHwio(cudaStream_t stream, const T* in, int64_t h, int64_t w, int64_t i, int64_t o,    \
                               T* out) {                                                                        \
    const int64_t n = h * w * i * o;                                                                             \
    if (n <= 0) return cudaSuccess;                                                                              \
    OihwToHwioKernel<T><<<Blocks(n), kThreads, 0, stream>>>(in, h, w, i, o, out);                                \
    return cudaGetLastError();                                                                                   \
  }                                                                                                              \
  cudaError_t LaunchTransposeBiasAdd(cudaStream_t stream, const T* in, int64_t batch, int64_t rows, int64_t cols, \
                                     const T* bias, bool relu, T* out) {                                         \
    return Transpose<T>(stream, in, batch, rows, cols, out, bias, relu);                                         \
  }                                                                                                              \
  cudaError_t LaunchFlipFilter(cudaStream_t stream, const T* in, int64_t h, int64_t w, int64_t i, int64_t o,    \
                               bool nchw, T* out) {                                                             \
    const int64_t n = h * w * i * o;                                                                             \
    if (n <= 0) return cudaSuccess;                                                                              \
    FlipFilterKernel<T><<<Blocks(n), kThreads, 0, stream>>>(in, h, w, i, o, nchw, out);                          \
    return cudaGetLastError();                                                                                   \
  }                                                                                                              \
  cudaError_t LaunchPadBottomRight(cudaStream_t stream, const T* in, int64_t images, int64_t rows, int64_t cols, \
                                   int64_t depth, int64_t extra_rows, int64_t extra_cols, T* out) {             \
    const int64_t n = images * (rows + extra_rows) * (cols + extra_cols) * depth;                               \
    if (n <= 0) return cudaSuccess;                                                                              \
    PadKernel<T><<<Blocks(n), kThreads, 0, stream>>>(in, images, rows, cols, depth, rows + extra_rows,           \
                                                     cols + extra_cols, out);                                   \
    return cudaGetLastError();                                                                                   \
  }                                                                                                              \
  cudaError_t LaunchCropBottomRight(cudaStream_t stream, const T* in, int64_t images, int64_t rows,             \
                                    int64_t cols, int64_t depth, int64_t extra_rows, int64_t extra_cols,        \
                                    T* out) {                                                                   \
    const int64_t n = images * rows * cols * depth;                                                              \
    if (n <= 0) return cudaSuccess;                                                                              \
    CropKernel<T><<<Blocks(n), kThreads, 0, stream>>>(in, images, rows, cols, depth, rows + extra_rows,          \
                                                      cols + extra_cols, out);                                  \
    return cudaGetLastError();                                                                                   \
  }                                                                                                              \
  cudaError_t LaunchFillUniform(cudaStream_t stream, T* out, int64_t n, uint64_t seed, double low, double high) { \
    if (n <= 0) return cudaSuccess;                                                                              \
    FillUniformKernel<T><<<Blocks(n), kThreads, 0, stream>>>(out, n, seed, low, high);                           \
    return cudaGetLastError();                                                                                   \
  }                                                                                                              \
  cudaError_t LaunchMaxPool(cudaStream_t stream, const PoolDims& d, const T* in, T* out) {                       \
    return Pool<T>(stream, d, in, out, true);                                                                    \
  }                                                                                                              \
  cudaError_t LaunchAvgPool(cudaStream_t stream, const PoolDims& d, const T* in, T* out) {                       \
    return Pool<T>(stream, d, in, out, false);                                                                   \
  }                                                                                                              \
  cudaError_t LaunchMaxPoolGrad(cudaStream_t stream, const PoolDims& d, const T* in, const T* dy, T* dx,        \
                                bool relu, T* window_grad) {                                                     \
    return MaxPoolGrad<T>(stream, d, in, dy, dx, relu, window_grad);                                             \
  }                                                                                                              \
  cudaError_t LaunchAvgPoolGrad(cudaStream_t stream, const PoolDims& d, const T* dy, T* dx) {                    \
    return AvgPoolGrad<T>(stream, d, dy, dx);                                                                    \
  }

SLUICE_DEFINE_FOR_(float)
SLUICE_DEFINE_FOR_(double)
#undef SLUICE_DEFINE_FOR_

}  // namespace gpu
}  // namespace sluice
