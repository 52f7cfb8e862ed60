// GPU kernels for Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter
// (float32 and float64; _FusedConv2D float32: Conv2D, then its bias [+ Relu]
// in one pass) on cuDNN's legacy convolution API, with the attrs,
// shape checks and errors of the CPU kernels (ReadWindowAttrs in nn_util.h,
// conv_shape.h): NHWC input, HWIO filter, SAME/VALID padding, dilation 1.
//
// How a convolution maps onto cuDNN:
//   * Padding. cuDNN pads both sides of a dimension alike; TensorFlow's SAME
//     puts the odd row/column of padding at the bottom/right. The kernels give
//     cuDNN the smaller (top/left) padding and append the odd row/column of
//     zeros to the input themselves (a padded copy; backprop input computes
//     the padded dx and crops it). Symmetric padding (fashion_cnn's 5x5
//     stride-1 SAME) needs no copy.
//   * Layout. Each shape is planned once: cuDNN's own search
//     (cudnnFind*AlgorithmEx, on scratch buffers) times every algorithm both
//     on NHWC tensors as they are and on NCHW copies, and the plan keeps the
//     faster layout (the NCHW time includes an estimate of the transposes).
//     SLUICE_CUDNN_LAYOUT=NHWC or NCHW forces one. Filters go HWIO -> OHWI
//     (NHWC) or OIHW (NCHW) through small transpose kernels.
//   * The input gradient. With stride 1, Conv2DBackpropInput is also a
//     forward convolution of dy with the filter turned by 180 degrees, in and
//     out channels swapped (conv_cudnn_shape.h): the same products, summed in
//     another order. Its plan searches cuDNN's backward-data algorithms and
//     that forward convolution, in both layouts, and keeps the fastest.
//     SLUICE_CUDNN_INPUT_GRADIENT=backward or forward forces one way.
//   * Math. float32 runs with CUDNN_FMA_MATH: plain fp32 FMA, no TF32 tensor
//     cores (which would round inputs to 10 mantissa bits).
//   * Algorithms. The unlabeled kernels use only direct and GEMM-like
//     algorithms, whose results differ from a direct sum by rounding alone.
//     The float32 kernels labeled "winograd" (selected like the CPU's
//     Winograd kernels: `train { kernels { winograd } }`, unset = on;
//     engine/graph/kernel_selection.h) also time cuDNN's FFT and Winograd
//     transforms, as TensorFlow's and PyTorch's autotuners do, but keep one
//     only after checking it: each transform faster than the fastest exact
//     algorithm, fastest first, is run beside that algorithm once on the same
//     random inputs, and the first one whose output has no element further
//     from the exact one than kTransformTolerance (1e-4) of the output's RMS
//     wins (cudnn_algorithms.h); if none does, the exact algorithm. On an H200, cuDNN's WINOGRAD_NONFUSED for
//     fashion_cnn's conv2 was off by 3.5e-2 to 8.1e-2 of that scale (all
//     three convolutions), far more than rounding; its FFT_TILING by 1e-5.
//     SLUICE_CUDNN_LOG=1 prints each plan (algorithm, time, the check);
//     SLUICE_CUDNN_TRANSFORM_TOLERANCE=x checks against x instead (to measure
//     what the check costs).
//   * Workspace: at most kWorkspaceCap bytes, from ctx->allocate_temp
//     (DT_UINT8: device memory), freed when the kernel returns (later users of
//     the memory run after it on the same compute stream).
// Everything is enqueued on the device's compute stream (the cuDNN handle is
// bound to it); nothing waits for the GPU except the one-time search of a new
// shape, which times algorithms and so blocks until the stream drains.
// Thread safety: Compute may run concurrently; the plan cache has a mutex,
// cuDNN calls run under the device's cuDNN lock.
#include <cudnn.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/conv_shape.h"
#include "engine/kernels/fused_epilogue.h"
#include "engine/kernels/gpu/bias_gpu.h"
#include "engine/kernels/gpu/conv_cudnn_shape.h"
#include "engine/kernels/gpu/cudnn_algorithms.h"
#include "engine/kernels/gpu/cudnn_util_kernels.h"
#include "engine/kernels/gpu/gpu_kernel_util.h"
#include "engine/kernels/nn_util.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {
namespace {

constexpr size_t kWorkspaceCap = size_t{256} << 20;

// cuDNN's descriptors take int dimensions, and its legacy kernels index
// tensors of fewer than 2^31 elements.
absl::Status CheckCudnnLimits(const ConvShape& s) {
  const int64_t in = s.n * s.padded_h() * s.padded_w() * s.c, out = s.n * s.oh * s.ow * s.o,
                filter = s.kh * s.kw * s.c * s.o;
  for (int64_t v : {in, out, filter, s.sh, s.sw, s.ph, s.pw}) {
    if (v > INT_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat("convolution too large for cuDNN: a tensor or attr of ", v, " elements (at most 2^31 - 1)"));
    }
  }
  return absl::OkStatus();
}

template <typename T>
cudnnDataType_t CudnnType();
template <>
cudnnDataType_t CudnnType<float>() {
  return CUDNN_DATA_FLOAT;
}
template <>
cudnnDataType_t CudnnType<double>() {
  return CUDNN_DATA_DOUBLE;
}

enum class ConvKind { kForward, kBackpropInput, kBackpropFilter };

const char* KindName(ConvKind k) {
  switch (k) {
    case ConvKind::kForward:
      return "forward";
    case ConvKind::kBackpropInput:
      return "backprop input";
    case ConvKind::kBackpropFilter:
      return "backprop filter";
  }
  return "?";
}

// Descriptors and the chosen algorithm of one shape in one layout.
struct ConvPlan {
  ConvPlan() = default;
  ConvPlan(const ConvPlan&) = delete;
  ConvPlan& operator=(const ConvPlan&) = delete;
  ~ConvPlan() {
    if (x != nullptr) cudnnDestroyTensorDescriptor(x);
    if (y != nullptr) cudnnDestroyTensorDescriptor(y);
    if (w != nullptr) cudnnDestroyFilterDescriptor(w);
    if (conv != nullptr) cudnnDestroyConvolutionDescriptor(conv);
  }
  bool nchw = false;
  // A Conv2DBackpropInput plan that runs a forward convolution of dy with the
  // turned filter (conv_cudnn_shape.h): then x describes dy (the forward's
  // input), y the padded input gradient, w the turned filter, and `algo` is a
  // forward algorithm.
  bool input_gradient_as_forward = false;
  cudnnTensorDescriptor_t x = nullptr;  // the (padded) input
  cudnnTensorDescriptor_t y = nullptr;  // the output
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int algo = 0;  // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  size_t workspace = 0;
  float time_ms = 0;  // the search's time of `algo`
};

template <typename T>
absl::Status MakeDescriptors(const ConvShape& s, bool nchw, ConvPlan* p) {
  const cudnnDataType_t type = CudnnType<T>();
  const cudnnTensorFormat_t format = nchw ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
  p->nchw = nchw;
  absl::Status st = CudnnStatus(cudnnCreateTensorDescriptor(&p->x), "cudnnCreateTensorDescriptor");
  if (st.ok()) st = CudnnStatus(cudnnCreateTensorDescriptor(&p->y), "cudnnCreateTensorDescriptor");
  if (st.ok()) st = CudnnStatus(cudnnCreateFilterDescriptor(&p->w), "cudnnCreateFilterDescriptor");
  if (st.ok()) st = CudnnStatus(cudnnCreateConvolutionDescriptor(&p->conv), "cudnnCreateConvolutionDescriptor");
  if (!st.ok()) return st;
  const auto i = [](int64_t v) { return static_cast<int>(v); };
  st = CudnnStatus(cudnnSetTensor4dDescriptor(p->x, format, type, i(s.n), i(s.c), i(s.padded_h()), i(s.padded_w())),
                   "cudnnSetTensor4dDescriptor(input)");
  if (st.ok()) {
    st = CudnnStatus(cudnnSetTensor4dDescriptor(p->y, format, type, i(s.n), i(s.o), i(s.oh), i(s.ow)),
                     "cudnnSetTensor4dDescriptor(output)");
  }
  if (st.ok()) {
    st = CudnnStatus(cudnnSetFilter4dDescriptor(p->w, type, format, i(s.o), i(s.c), i(s.kh), i(s.kw)),
                     "cudnnSetFilter4dDescriptor");
  }
  if (st.ok()) {
    st = CudnnStatus(cudnnSetConvolution2dDescriptor(p->conv, i(s.ph), i(s.pw), i(s.sh), i(s.sw), 1, 1,
                                                     CUDNN_CROSS_CORRELATION, type),
                     "cudnnSetConvolution2dDescriptor");
  }
  if (st.ok()) {
    st = CudnnStatus(cudnnSetConvolutionMathType(p->conv, std::is_same<T, float>::value ? CUDNN_FMA_MATH
                                                                                        : CUDNN_DEFAULT_MATH),
                     "cudnnSetConvolutionMathType");
  }
  if (!st.ok()) return st;
  int dims[4];
  st = CudnnStatus(cudnnGetConvolutionNdForwardOutputDim(p->conv, p->x, p->w, 4, dims),
                   "cudnnGetConvolutionNdForwardOutputDim");
  if (!st.ok()) return st;
  if (dims[0] != s.n || dims[1] != s.o || dims[2] != s.oh || dims[3] != s.ow) {
    return absl::InternalError(absl::StrCat("cuDNN's output shape [", dims[0], ", ", dims[1], ", ", dims[2], ", ",
                                            dims[3], "] (NCHW) differs from TensorFlow's [", s.n, ", ", s.o, ", ",
                                            s.oh, ", ", s.ow, "]"));
  }
  return absl::OkStatus();
}

absl::Status AllocateBytes(OpKernelContext* ctx, int64_t bytes, Tensor* t) {
  return ctx->allocate_temp(DT_UINT8, TensorShape({std::max<int64_t>(bytes, 1)}), t);
}

// The largest search workspace we can get, up to kWorkspaceCap.
size_t AllocateSearchWorkspace(OpKernelContext* ctx, Tensor* t) {
  for (size_t bytes = kWorkspaceCap; bytes >= (size_t{1} << 20); bytes /= 4) {
    if (AllocateBytes(ctx, static_cast<int64_t>(bytes), t).ok()) return bytes;
  }
  return 0;
}

// "n=N HxWxC -> O (KHxKW filter)", for the plan log.
std::string ShapeText(const ConvShape& s) {
  return absl::StrCat("n=", s.n, " ", s.h, "x", s.w, "x", s.c, " -> ", s.o, " (", s.kh, "x", s.kw, " filter)");
}

// Whether SLUICE_CUDNN_LOG is set to anything but "" or "0": each plan prints
// a line to stderr (the shape, the layout, the algorithm and its time, a
// transform's check), and so does the plan chosen for each shape.
bool LogPlans() {
  static const bool log = [] {
    const char* v = std::getenv("SLUICE_CUDNN_LOG");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return log;
}

// A diagnostic for measuring what the check costs (docs/PERFORMANCE.md):
// SLUICE_CUDNN_TRANSFORM_TOLERANCE overrides kTransformTolerance (a larger
// value keeps less accurate transforms).
double TransformTolerance() {
  static const double tolerance = [] {
    const char* v = std::getenv("SLUICE_CUDNN_TRANSFORM_TOLERANCE");
    char* end = nullptr;
    const double parsed = v != nullptr ? std::strtod(v, &end) : 0;
    return v != nullptr && end != v && parsed >= 0 ? parsed : kTransformTolerance;
  }();
  return tolerance;
}

// Runs algorithm `algo` of `kind` on the search's buffers (x, w, y: the
// input, filter and output in the plan's layout) and copies its output (y,
// x or w) to the host. Blocks until the copy is done.
template <typename T>
absl::Status RunOnce(cudnnHandle_t handle, cudaStream_t stream, ConvKind kind, const ConvPlan& p, int algo,
                     void* ws, size_t ws_bytes, Tensor* x, Tensor* w, Tensor* y, std::vector<T>* out) {
  const T one = 1, zero = 0;
  absl::Status st;
  Tensor* result = nullptr;
  switch (kind) {
    case ConvKind::kForward:
      result = y;
      st = CudnnStatus(cudnnConvolutionForward(handle, &one, p.x, x->raw_data(), p.w, w->raw_data(), p.conv,
                                               static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws, ws_bytes, &zero,
                                               p.y, y->raw_data()),
                       "cudnnConvolutionForward");
      break;
    case ConvKind::kBackpropInput:
      result = x;
      st = CudnnStatus(cudnnConvolutionBackwardData(handle, &one, p.w, w->raw_data(), p.y, y->raw_data(), p.conv,
                                                    static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws, ws_bytes,
                                                    &zero, p.x, x->raw_data()),
                       "cudnnConvolutionBackwardData");
      break;
    case ConvKind::kBackpropFilter:
      result = w;
      st = CudnnStatus(cudnnConvolutionBackwardFilter(handle, &one, p.x, x->raw_data(), p.y, y->raw_data(), p.conv,
                                                      static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws,
                                                      ws_bytes, &zero, p.w, w->raw_data()),
                       "cudnnConvolutionBackwardFilter");
      break;
  }
  if (!st.ok()) return st;
  out->resize(static_cast<size_t>(result->TotalBytes() / sizeof(T)));
  st = CudaStatus(cudaMemcpyAsync(out->data(), result->raw_data(), result->TotalBytes(), cudaMemcpyDeviceToHost,
                                  stream),
                  "cudaMemcpyAsync(device to host)");
  if (st.ok()) st = CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return st;
}

// Times the algorithms of `kind` on scratch buffers of random values and sets
// p->algo, p->workspace, p->time_ms. Each transform (allow_transforms) faster
// than the fastest exact algorithm is run once beside it on the same inputs,
// fastest first, and the first within the tolerance is kept (PickAlgorithm).
// REQUIRES: the cuDNN lock is held (handle).
template <typename T>
absl::Status Search(OpKernelContext* ctx, cudnnHandle_t handle, ConvKind kind, bool allow_transforms,
                    const ConvShape& s, const Tensor& workspace, size_t workspace_bytes, ConvPlan* p) {
  Tensor x, w, y;
  const int64_t bytes = sizeof(T);
  absl::Status st = AllocateBytes(ctx, s.n * s.padded_h() * s.padded_w() * s.c * bytes, &x);
  if (st.ok()) st = AllocateBytes(ctx, s.kh * s.kw * s.c * s.o * bytes, &w);
  if (st.ok()) st = AllocateBytes(ctx, s.n * s.oh * s.ow * s.o * bytes, &y);
  if (!st.ok()) return st;
  // Random values: inputs for the transforms' check, and no garbage (NaN,
  // denormals) to mislead the timings. The input in [0, 1), like activations
  // after a Relu (a mean away from zero, which some transforms handle worse);
  // the filter and dy in [-1, 1).
  cudaStream_t stream = GetGpuDevice(ctx)->compute_stream();
  uint64_t seed = 1;
  for (Tensor* t : {&x, &w, &y}) {
    const double low = t == &x ? 0.0 : -1.0;
    st = CudaStatus(
        LaunchFillUniform(stream, static_cast<T*>(t->raw_data()), t->TotalBytes() / bytes, seed++, low, 1.0),
        "LaunchFillUniform");
    if (!st.ok()) return st;
  }
  void* ws = workspace_bytes > 0 ? workspace.raw_data() : nullptr;
  int returned = 0;
  auto pick = [&](const auto* perfs) -> absl::Status {
    absl::Status check;
    std::vector<T> transformed, exact;
    const AlgorithmChoice c =
        PickAlgorithm(perfs, returned, workspace_bytes, allow_transforms, [&](int transform, int direct) {
          check = RunOnce<T>(handle, stream, kind, *p, static_cast<int>(perfs[transform].algo), ws, workspace_bytes,
                             &x, &w, &y, &transformed);
          if (check.ok()) {
            check = RunOnce<T>(handle, stream, kind, *p, static_cast<int>(perfs[direct].algo), ws, workspace_bytes,
                               &x, &w, &y, &exact);
          }
          return check.ok() ? MaxDifferenceOverRms(transformed.data(), exact.data(), exact.size())
                            : std::numeric_limits<double>::infinity();
        },
        TransformTolerance());
    if (c.index < 0) {
      return absl::InternalError(absl::StrCat("cuDNN has no usable fp32/fp64 algorithm for the convolution ",
                                              KindName(kind), " (", returned, " tried)"));
    }
    p->algo = static_cast<int>(perfs[c.index].algo);
    p->workspace = perfs[c.index].memory;
    p->time_ms = perfs[c.index].time;
    if (LogPlans()) {
      std::string transform;
      for (const TransformCheck& t : c.checked) {
        absl::StrAppend(&transform, "; transform ", static_cast<int>(perfs[t.index].algo), " off by ", t.error,
                        " of the output's rms: ", t.kept ? "kept" : "rejected");
      }
      if (!check.ok()) absl::StrAppend(&transform, " (", check.message(), ")");
      std::fprintf(stderr, "cuDNN plan: %s%s %s %s: algo %d, %.3f ms%s\n", KindName(kind),
                   p->input_gradient_as_forward ? " (the input gradient as a forward convolution)" : "",
                   ShapeText(s).c_str(), p->nchw ? "NCHW" : "NHWC", p->algo, p->time_ms, transform.c_str());
    }
    return absl::OkStatus();
  };
  switch (kind) {
    case ConvKind::kForward: {
      cudnnConvolutionFwdAlgoPerf_t perfs[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      st = CudnnStatus(cudnnFindConvolutionForwardAlgorithmEx(handle, p->x, x.raw_data(), p->w, w.raw_data(), p->conv,
                                                              p->y, y.raw_data(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                              &returned, perfs, ws, workspace_bytes),
                       "cudnnFindConvolutionForwardAlgorithmEx");
      return st.ok() ? pick(perfs) : st;
    }
    case ConvKind::kBackpropInput: {
      cudnnConvolutionBwdDataAlgoPerf_t perfs[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      st = CudnnStatus(cudnnFindConvolutionBackwardDataAlgorithmEx(
                           handle, p->w, w.raw_data(), p->y, y.raw_data(), p->conv, p->x, x.raw_data(),
                           CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perfs, ws, workspace_bytes),
                       "cudnnFindConvolutionBackwardDataAlgorithmEx");
      return st.ok() ? pick(perfs) : st;
    }
    case ConvKind::kBackpropFilter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perfs[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      st = CudnnStatus(cudnnFindConvolutionBackwardFilterAlgorithmEx(
                           handle, p->x, x.raw_data(), p->y, y.raw_data(), p->conv, p->w, w.raw_data(),
                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perfs, ws, workspace_bytes),
                       "cudnnFindConvolutionBackwardFilterAlgorithmEx");
      return st.ok() ? pick(perfs) : st;
    }
  }
  return absl::InternalError("unknown convolution kind");
}

// Whether NCHW needs a real transpose of a [n, c, pixels] tensor.
bool NeedsTranspose(int64_t c, int64_t pixels) { return c > 1 && pixels > 1; }

// Estimated milliseconds of the NCHW transposes of one call (read + write of
// each transposed tensor at ~2 TB/s, plus ~3 us per launch).
double TransposeCostMs(ConvKind kind, const ConvShape& s, int64_t elem_bytes) {
  double bytes = 0;
  int launches = 0;
  auto add = [&](int64_t c, int64_t pixels) {
    if (!NeedsTranspose(c, pixels)) return;
    bytes += 2.0 * static_cast<double>(s.n * c * pixels * elem_bytes);
    ++launches;
  };
  const int64_t in_pixels = s.padded_h() * s.padded_w(), out_pixels = s.oh * s.ow;
  switch (kind) {
    case ConvKind::kForward:
      add(s.c, in_pixels);
      add(s.o, out_pixels);
      break;
    case ConvKind::kBackpropInput:
      add(s.o, out_pixels);
      add(s.c, in_pixels);
      break;
    case ConvKind::kBackpropFilter:
      add(s.c, in_pixels);
      add(s.o, out_pixels);
      break;
  }
  return bytes / 2e9 + 0.003 * launches;
}

// The layout SLUICE_CUDNN_LAYOUT forces: 0 none, 1 NHWC, 2 NCHW.
int ForcedLayout() {
  static const int forced = [] {
    const char* v = std::getenv("SLUICE_CUDNN_LAYOUT");
    if (v == nullptr) return 0;
    if (std::strcmp(v, "NHWC") == 0) return 1;
    if (std::strcmp(v, "NCHW") == 0) return 2;
    return 0;
  }();
  return forced;
}

// How Conv2DBackpropInput may run: SLUICE_CUDNN_INPUT_GRADIENT=backward
// (cuDNN's backward-data algorithms only), forward (a forward convolution of
// dy with the turned filter wherever the shape allows one: stride 1; a
// diagnostic for tests, with no fallback when that search fails), or unset or
// anything else (both searched, the faster kept).
enum class InputGradientWay { kEither, kBackward, kForward };
InputGradientWay ForcedInputGradientWay() {
  static const InputGradientWay forced = [] {
    const char* v = std::getenv("SLUICE_CUDNN_INPUT_GRADIENT");
    if (v != nullptr && std::strcmp(v, "backward") == 0) return InputGradientWay::kBackward;
    if (v != nullptr && std::strcmp(v, "forward") == 0) return InputGradientWay::kForward;
    return InputGradientWay::kEither;
  }();
  return forced;
}

// Plans one shape: searches both layouts (unless one is forced) and keeps the
// faster. A Conv2DBackpropInput with stride 1 also searches the forward
// convolution that computes the same gradient (InputGradientAsForward).
template <typename T>
absl::StatusOr<std::shared_ptr<const ConvPlan>> MakePlan(OpKernelContext* ctx, ConvKind kind, bool allow_transforms,
                                                         const ConvShape& s) {
  Tensor workspace;
  const size_t workspace_bytes = AllocateSearchWorkspace(ctx, &workspace);
  auto lock = GetGpuDevice(ctx)->LockCudnn();
  if (!lock.ok()) return lock.status();
  // (the shape cuDNN runs, the kind it runs as, whether that is the input
  // gradient as a forward convolution)
  struct Way {
    ConvShape shape;
    ConvKind kind;
    bool as_forward;
  };
  std::vector<Way> ways;
  const std::optional<ConvShape> forward_shape =
      kind == ConvKind::kBackpropInput ? InputGradientAsForward(s) : std::nullopt;
  const InputGradientWay forced_way = ForcedInputGradientWay();
  if (forced_way != InputGradientWay::kForward || !forward_shape) ways.push_back({s, kind, false});
  if (forward_shape && forced_way != InputGradientWay::kBackward) {
    ways.push_back({*forward_shape, ConvKind::kForward, true});
  }
  std::shared_ptr<ConvPlan> best;
  absl::Status last_error;
  for (const Way& way : ways) {
    for (bool nchw : {false, true}) {
      if (ForcedLayout() == (nchw ? 1 : 2)) continue;
      auto plan = std::make_shared<ConvPlan>();
      plan->input_gradient_as_forward = way.as_forward;
      absl::Status st = MakeDescriptors<T>(way.shape, nchw, plan.get());
      if (st.ok()) {
        st = Search<T>(ctx, (*lock)->handle, way.kind, allow_transforms, way.shape, workspace, workspace_bytes,
                       plan.get());
      }
      if (!st.ok()) {
        last_error = st;
        continue;
      }
      // The same tensors cross layouts either way (dy in, dx out).
      if (nchw) plan->time_ms += static_cast<float>(TransposeCostMs(kind, s, sizeof(T)));
      if (best == nullptr || plan->time_ms < best->time_ms) best = plan;
    }
  }
  if (best == nullptr) return last_error;
  if (LogPlans()) {
    std::fprintf(stderr, "cuDNN plan chosen: %s %s: %s%s, algo %d, %.3f ms%s\n", KindName(kind),
                 ShapeText(s).c_str(), best->nchw ? "NCHW" : "NHWC",
                 best->input_gradient_as_forward ? " as a forward convolution" : "", best->algo, best->time_ms,
                 best->nchw ? " (with the transposes' estimate)" : "");
  }
  return std::shared_ptr<const ConvPlan>(best);
}

// ---- the kernels ----

template <typename T>
class CudnnConvOp : public OpKernel {
 public:
  CudnnConvOp(OpKernelConstruction* ctx, ConvKind kind, bool allow_transforms)
      : OpKernel(ctx), kind_(kind), allow_transforms_(allow_transforms) {
    OP_REQUIRES_OK(ctx, ReadWindowAttrs(ctx, &strides_, nullptr, &padding_));
  }

 protected:
  // The cached plan of `s`, made on first use.
  absl::StatusOr<std::shared_ptr<const ConvPlan>> Plan(OpKernelContext* ctx, const ConvShape& s) {
    {
      absl::MutexLock l(&mu_);
      auto it = plans_.find(s);
      if (it != plans_.end()) return it->second;
    }
    auto plan = MakePlan<T>(ctx, kind_, allow_transforms_, s);  // outside mu_: searches take a while
    if (!plan.ok()) return plan.status();
    absl::MutexLock l(&mu_);
    return plans_.emplace(s, *plan).first->second;
  }

  // `dst` = `src` with the bottom/right padding appended (when the shape has
  // any), then in the plan's layout: `src` itself when neither applies, else
  // a temp kept in *holder. `pixels` of [n, rows, cols, c].
  absl::Status InputForCudnn(OpKernelContext* ctx, const ConvPlan& p, const ConvShape& s, const T* src,
                             Tensor* pad_holder, Tensor* holder, const T** dst) {
    cudaStream_t stream = GetGpuDevice(ctx)->compute_stream();
    const T* cur = src;
    const int64_t elems = s.n * s.padded_h() * s.padded_w() * s.c;
    if (s.asymmetric()) {
      absl::Status st = Temp(ctx, elems, pad_holder);
      if (!st.ok()) return st;
      st = CudaStatus(LaunchPadBottomRight(stream, cur, s.n, s.h, s.w, s.c, s.eh, s.ew, pad_holder->data<T>()),
                      "LaunchPadBottomRight");
      if (!st.ok()) return st;
      cur = pad_holder->data<T>();
    }
    if (p.nchw && NeedsTranspose(s.c, s.padded_h() * s.padded_w())) {
      absl::Status st = Temp(ctx, elems, holder);
      if (!st.ok()) return st;
      st = CudaStatus(LaunchTranspose(stream, cur, s.n, s.padded_h() * s.padded_w(), s.c, holder->data<T>()),
                      "LaunchTranspose");
      if (!st.ok()) return st;
      cur = holder->data<T>();
    }
    *dst = cur;
    return absl::OkStatus();
  }

  // dy ([n, oh, ow, o], NHWC) in the plan's layout.
  absl::Status OutputGradForCudnn(OpKernelContext* ctx, const ConvPlan& p, const ConvShape& s, const T* dy,
                                  Tensor* holder, const T** dst) {
    *dst = dy;
    if (!p.nchw || !NeedsTranspose(s.o, s.oh * s.ow)) return absl::OkStatus();
    absl::Status st = Temp(ctx, s.n * s.oh * s.ow * s.o, holder);
    if (!st.ok()) return st;
    st = CudaStatus(LaunchTranspose(GetGpuDevice(ctx)->compute_stream(), dy, s.n, s.oh * s.ow, s.o, holder->data<T>()),
                    "LaunchTranspose");
    if (!st.ok()) return st;
    *dst = holder->data<T>();
    return absl::OkStatus();
  }

  // The HWIO filter in the plan's layout (OHWI or OIHW), in *holder; turned,
  // in and out swapped, for an input gradient planned as a forward
  // convolution.
  absl::Status FilterForCudnn(OpKernelContext* ctx, const ConvPlan& p, const ConvShape& s, const T* filter,
                              Tensor* holder) {
    absl::Status st = Temp(ctx, s.kh * s.kw * s.c * s.o, holder);
    if (!st.ok()) return st;
    cudaStream_t stream = GetGpuDevice(ctx)->compute_stream();
    if (p.input_gradient_as_forward) {
      return CudaStatus(LaunchFlipFilter(stream, filter, s.kh, s.kw, s.c, s.o, p.nchw, holder->data<T>()),
                        "LaunchFlipFilter");
    }
    if (p.nchw) {
      return CudaStatus(LaunchHwioToOihw(stream, filter, s.kh, s.kw, s.c, s.o, holder->data<T>()), "LaunchHwioToOihw");
    }
    return CudaStatus(LaunchTranspose(stream, filter, 1, s.kh * s.kw * s.c, s.o, holder->data<T>()),
                      "LaunchTranspose");
  }

  static absl::Status Temp(OpKernelContext* ctx, int64_t elems, Tensor* t) {
    return ctx->allocate_temp(DataTypeToEnum<T>::value, TensorShape({elems}), t);
  }

  absl::Status Workspace(OpKernelContext* ctx, const ConvPlan& p, Tensor* t, void** ptr) {
    *ptr = nullptr;
    if (p.workspace == 0) return absl::OkStatus();
    absl::Status st = AllocateBytes(ctx, static_cast<int64_t>(p.workspace), t);
    if (!st.ok()) return st;
    *ptr = t->raw_data();
    return absl::OkStatus();
  }

  std::vector<int64_t> strides_;
  std::string padding_;

 private:
  const ConvKind kind_;
  const bool allow_transforms_;
  absl::Mutex mu_;
  std::map<ConvShape, std::shared_ptr<const ConvPlan>> plans_ ABSL_GUARDED_BY(mu_);
};

// Conv2D, and _FusedConv2D (float32: the fusion pass's Conv2D + BiasAdd [+
// Relu]), whose bias and Relu take no pass of their own when the plan is
// NCHW (the transpose back to NHWC applies them on the way), else one pass
// over the output after cuDNN's convolution (LaunchBiasAdd in place), instead
// of BiasAdd's and Relu's two.
template <typename T, bool kTransforms = false>
class Conv2DOp : public CudnnConvOp<T> {
 public:
  explicit Conv2DOp(OpKernelConstruction* ctx)
      : CudnnConvOp<T>(ctx, ConvKind::kForward, kTransforms), fused_(ctx->def().op() == "_FusedConv2D") {
    if (fused_) OP_REQUIRES_OK(ctx, ReadBiasEpilogueAttrs(ctx, &relu_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    ConvGeometry g;
    OP_REQUIRES_OK(ctx, MakeConvGeometry(input.shape(), filter.shape(), this->strides_, this->padding_, &g));
    if (fused_) OP_REQUIRES_OK(ctx, CheckBias(ctx->input(2), g.out_depth));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.out_shape, &out));
    if (out->NumElements() == 0) return;
    bool epilogue_applied = false;
    Convolve(ctx, g, out, &epilogue_applied);
    // Its own pass: NHWC plans, NCHW ones with no output transpose, and no
    // input channels (act(bias) everywhere, as on the CPU).
    if (fused_ && !epilogue_applied && ctx->status().ok()) {
      OP_REQUIRES_CUDA(ctx, LaunchBiasAdd(GetGpuDevice(ctx)->compute_stream(), ElemTypeOf<T>(), out->raw_data(),
                                          ctx->input(2).raw_data(), out->raw_data(),
                                          out->NumElements() / g.out_depth, g.out_depth, 1, relu_));
    }
  }

 private:
  // The convolution into `out`; *epilogue_applied when the fused op's bias
  // and Relu were applied too (on the way back from an NCHW plan).
  void Convolve(OpKernelContext* ctx, const ConvGeometry& g, Tensor* out, bool* epilogue_applied) {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    cudaStream_t stream = GetGpuDevice(ctx)->compute_stream();
    if (g.in_depth == 0) {
      OP_REQUIRES_CUDA(ctx, cudaMemsetAsync(out->raw_data(), 0, out->TotalBytes(), stream));
      return;
    }
    const ConvShape s = ShapeOf(g);
    OP_REQUIRES_OK(ctx, CheckCudnnLimits(s));
    auto plan_or = this->Plan(ctx, s);
    OP_REQUIRES_OK(ctx, plan_or.status());
    const ConvPlan& p = **plan_or;
    Tensor pad_holder, x_holder, w_holder, y_holder, ws_holder;
    const T* x;
    OP_REQUIRES_OK(ctx, this->InputForCudnn(ctx, p, s, input.data<T>(), &pad_holder, &x_holder, &x));
    OP_REQUIRES_OK(ctx, this->FilterForCudnn(ctx, p, s, filter.data<T>(), &w_holder));
    const bool transpose_out = p.nchw && NeedsTranspose(s.o, s.oh * s.ow);
    T* y = out->data<T>();
    if (transpose_out) {
      OP_REQUIRES_OK(ctx, this->Temp(ctx, out->NumElements(), &y_holder));
      y = y_holder.data<T>();
    }
    void* ws;
    OP_REQUIRES_OK(ctx, this->Workspace(ctx, p, &ws_holder, &ws));
    {
      auto lock = GetGpuDevice(ctx)->LockCudnn();
      OP_REQUIRES_OK(ctx, lock.status());
      const T one = 1, zero = 0;
      OP_REQUIRES_CUDNN(ctx, cudnnConvolutionForward((*lock)->handle, &one, p.x, x, p.w, w_holder.data<T>(), p.conv,
                                                     static_cast<cudnnConvolutionFwdAlgo_t>(p.algo), ws, p.workspace,
                                                     &zero, p.y, y));
    }
    if (transpose_out && fused_) {
      OP_REQUIRES_CUDA(ctx, LaunchTransposeBiasAdd(stream, y, s.n, s.o, s.oh * s.ow, ctx->input(2).data<T>(), relu_,
                                                   out->data<T>()));
      *epilogue_applied = true;
    } else if (transpose_out) {
      OP_REQUIRES_CUDA(ctx, LaunchTranspose(stream, y, s.n, s.o, s.oh * s.ow, out->data<T>()));
    }
  }

  const bool fused_;
  bool relu_ = false;
};

template <typename T, bool kTransforms = false>
class Conv2DBackpropInputOp : public CudnnConvOp<T> {
 public:
  explicit Conv2DBackpropInputOp(OpKernelConstruction* ctx) : CudnnConvOp<T>(ctx, ConvKind::kBackpropInput, kTransforms) {}

  void Compute(OpKernelContext* ctx) override {
    TensorShape input_shape;
    ConvGeometry g;
    OP_REQUIRES_OK(ctx, ConvBackpropInputGeometry(ctx, this->strides_, this->padding_, &input_shape, &g));
    const Tensor& filter = ctx->input(1);
    const Tensor& dy = ctx->input(2);
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input_shape, &dx));
    if (dx->NumElements() == 0) return;
    cudaStream_t stream = GetGpuDevice(ctx)->compute_stream();
    if (dy.NumElements() == 0) {
      OP_REQUIRES_CUDA(ctx, cudaMemsetAsync(dx->raw_data(), 0, dx->TotalBytes(), stream));
      return;
    }
    const ConvShape s = ShapeOf(g);
    OP_REQUIRES_OK(ctx, CheckCudnnLimits(s));
    auto plan_or = this->Plan(ctx, s);
    OP_REQUIRES_OK(ctx, plan_or.status());
    const ConvPlan& p = **plan_or;
    Tensor dy_holder, w_holder, dx_holder, nhwc_holder, ws_holder;
    const T* dy_in;
    OP_REQUIRES_OK(ctx, this->OutputGradForCudnn(ctx, p, s, dy.data<T>(), &dy_holder, &dy_in));
    OP_REQUIRES_OK(ctx, this->FilterForCudnn(ctx, p, s, filter.data<T>(), &w_holder));
    // cuDNN writes the padded dx in the plan's layout; then back to NHWC and
    // cropped to the input's size.
    const int64_t pixels = s.padded_h() * s.padded_w();
    const bool transpose = p.nchw && NeedsTranspose(s.c, pixels);
    T* dx_cudnn = dx->data<T>();
    if (transpose || s.asymmetric()) {
      OP_REQUIRES_OK(ctx, this->Temp(ctx, s.n * pixels * s.c, &dx_holder));
      dx_cudnn = dx_holder.data<T>();
    }
    void* ws;
    OP_REQUIRES_OK(ctx, this->Workspace(ctx, p, &ws_holder, &ws));
    {
      auto lock = GetGpuDevice(ctx)->LockCudnn();
      OP_REQUIRES_OK(ctx, lock.status());
      const T one = 1, zero = 0;
      if (p.input_gradient_as_forward) {  // x describes dy, y the padded dx
        OP_REQUIRES_CUDNN(ctx, cudnnConvolutionForward((*lock)->handle, &one, p.x, dy_in, p.w, w_holder.data<T>(),
                                                       p.conv, static_cast<cudnnConvolutionFwdAlgo_t>(p.algo), ws,
                                                       p.workspace, &zero, p.y, dx_cudnn));
      } else {
        OP_REQUIRES_CUDNN(ctx, cudnnConvolutionBackwardData((*lock)->handle, &one, p.w, w_holder.data<T>(), p.y,
                                                            dy_in, p.conv,
                                                            static_cast<cudnnConvolutionBwdDataAlgo_t>(p.algo), ws,
                                                            p.workspace, &zero, p.x, dx_cudnn));
      }
    }
    const T* nhwc = dx_cudnn;
    if (transpose) {
      T* dst = dx->data<T>();
      if (s.asymmetric()) {
        OP_REQUIRES_OK(ctx, this->Temp(ctx, s.n * pixels * s.c, &nhwc_holder));
        dst = nhwc_holder.data<T>();
      }
      OP_REQUIRES_CUDA(ctx, LaunchTranspose(stream, dx_cudnn, s.n, s.c, pixels, dst));
      nhwc = dst;
    }
    if (s.asymmetric()) {
      OP_REQUIRES_CUDA(ctx, LaunchCropBottomRight(stream, nhwc, s.n, s.h, s.w, s.c, s.eh, s.ew, dx->data<T>()));
    }
  }
};

template <typename T, bool kTransforms = false>
class Conv2DBackpropFilterOp : public CudnnConvOp<T> {
 public:
  explicit Conv2DBackpropFilterOp(OpKernelConstruction* ctx) : CudnnConvOp<T>(ctx, ConvKind::kBackpropFilter, kTransforms) {}

  void Compute(OpKernelContext* ctx) override {
    TensorShape filter_shape;
    ConvGeometry g;
    OP_REQUIRES_OK(ctx, ConvBackpropFilterGeometry(ctx, this->strides_, this->padding_, &filter_shape, &g));
    const Tensor& input = ctx->input(0);
    const Tensor& dy = ctx->input(2);
    Tensor* dw;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, filter_shape, &dw));
    if (dw->NumElements() == 0) return;
    cudaStream_t stream = GetGpuDevice(ctx)->compute_stream();
    if (dy.NumElements() == 0) {
      OP_REQUIRES_CUDA(ctx, cudaMemsetAsync(dw->raw_data(), 0, dw->TotalBytes(), stream));
      return;
    }
    const ConvShape s = ShapeOf(g);
    OP_REQUIRES_OK(ctx, CheckCudnnLimits(s));
    auto plan_or = this->Plan(ctx, s);
    OP_REQUIRES_OK(ctx, plan_or.status());
    const ConvPlan& p = **plan_or;
    Tensor pad_holder, x_holder, dy_holder, dw_holder, ws_holder;
    const T* x;
    OP_REQUIRES_OK(ctx, this->InputForCudnn(ctx, p, s, input.data<T>(), &pad_holder, &x_holder, &x));
    const T* dy_in;
    OP_REQUIRES_OK(ctx, this->OutputGradForCudnn(ctx, p, s, dy.data<T>(), &dy_holder, &dy_in));
    OP_REQUIRES_OK(ctx, this->Temp(ctx, dw->NumElements(), &dw_holder));
    void* ws;
    OP_REQUIRES_OK(ctx, this->Workspace(ctx, p, &ws_holder, &ws));
    {
      auto lock = GetGpuDevice(ctx)->LockCudnn();
      OP_REQUIRES_OK(ctx, lock.status());
      const T one = 1, zero = 0;
      OP_REQUIRES_CUDNN(ctx, cudnnConvolutionBackwardFilter(
                                 (*lock)->handle, &one, p.x, x, p.y, dy_in, p.conv,
                                 static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.algo), ws, p.workspace, &zero, p.w,
                                 dw_holder.data<T>()));
    }
    if (p.nchw) {
      OP_REQUIRES_CUDA(ctx, LaunchOihwToHwio(stream, dw_holder.data<T>(), s.kh, s.kw, s.c, s.o, dw->data<T>()));
    } else {  // OHWI [o, kh*kw*c] -> HWIO [kh*kw*c, o]
      OP_REQUIRES_CUDA(ctx, LaunchTranspose(stream, dw_holder.data<T>(), 1, s.o, s.kh * s.kw * s.c, dw->data<T>()));
    }
  }
};

#define SLUICE_REGISTER_GPU_CONV_(T)                                                                        \
  REGISTER_KERNEL_BUILDER(Name("Conv2D").Device(kDeviceGpu).TypeConstraint<T>("T"), Conv2DOp<T>);           \
  REGISTER_KERNEL_BUILDER(Name("Conv2DBackpropInput").Device(kDeviceGpu).TypeConstraint<T>("T"),            \
                          Conv2DBackpropInputOp<T>);                                                        \
  REGISTER_KERNEL_BUILDER(Name("Conv2DBackpropFilter").Device(kDeviceGpu).TypeConstraint<T>("T"),           \
                          Conv2DBackpropFilterOp<T>)
SLUICE_REGISTER_GPU_CONV_(float);
SLUICE_REGISTER_GPU_CONV_(double);
#undef SLUICE_REGISTER_GPU_CONV_

// float32 with cuDNN's FFT and Winograd transforms among the candidates, each
// checked against an exact algorithm before it is kept (see the file comment).
using Conv2DWithTransforms = Conv2DOp<float, true>;
using Conv2DBackpropInputWithTransforms = Conv2DBackpropInputOp<float, true>;
using Conv2DBackpropFilterWithTransforms = Conv2DBackpropFilterOp<float, true>;
REGISTER_KERNEL_BUILDER(Name("Conv2D").Device(kDeviceGpu).TypeConstraint<float>("T").Label("winograd"),
                        Conv2DWithTransforms);
REGISTER_KERNEL_BUILDER(Name("Conv2DBackpropInput").Device(kDeviceGpu).TypeConstraint<float>("T").Label("winograd"),
                        Conv2DBackpropInputWithTransforms);
REGISTER_KERNEL_BUILDER(Name("Conv2DBackpropFilter").Device(kDeviceGpu).TypeConstraint<float>("T").Label("winograd"),
                        Conv2DBackpropFilterWithTransforms);
REGISTER_KERNEL_BUILDER(Name("_FusedConv2D").Device(kDeviceGpu).TypeConstraint<float>("T"), Conv2DOp<float>);
REGISTER_KERNEL_BUILDER(Name("_FusedConv2D").Device(kDeviceGpu).TypeConstraint<float>("T").Label("winograd"),
                        Conv2DWithTransforms);

}  // namespace
}  // namespace gpu
}  // namespace sluice
