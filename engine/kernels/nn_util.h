// Helpers shared by the NN kernels: the accumulation type per element type,
// a numerically stable softmax of one row, NHWC window geometry (TensorFlow's
// SAME/VALID rules) and the checks of conv/pool attrs.
// Thread safety: pure functions.
#ifndef SLUICE_ENGINE_KERNELS_NN_UTIL_H_
#define SLUICE_ENGINE_KERNELS_NN_UTIL_H_

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"

namespace sluice {

// float for half/bfloat16/float, double for double (integers: int64).
template <typename T>
struct AccumulatorType {
  using type = float;
};
template <>
struct AccumulatorType<double> {
  using type = double;
};

// out = softmax(in) (or log_softmax when `log`), over `depth` values.
// float and double use Eigen's vectorized exp (a scalar std::exp per value
// was most of the time of a wide softmax); half and bfloat16 go value by value
// through float. `out` may alias `in`.
template <typename T>
inline void SoftmaxRow(const T* in, int64_t depth, bool log, T* out) {
  using Acc = typename AccumulatorType<T>::type;
  if (depth <= 0) return;
  if constexpr (std::is_same_v<T, Acc>) {
    using Row = Eigen::Array<T, Eigen::Dynamic, 1>;
    Eigen::Map<const Row> x(in, depth);
    Eigen::Map<Row> y(out, depth);
    const T mx = x.maxCoeff();
    if (log) {
      const T lse = std::log((x - mx).exp().sum());
      y = (x - mx) - lse;  // shift first: mx + lse would lose lse's bits for large logits
    } else {
      y = (x - mx).exp();  // elementwise: safe when out aliases in
      y *= T(1) / y.sum();
    }
    return;
  }
  Acc mx = static_cast<Acc>(in[0]);
  for (int64_t j = 1; j < depth; ++j) mx = std::max(mx, static_cast<Acc>(in[j]));
  Acc sum = 0;
  for (int64_t j = 0; j < depth; ++j) sum += std::exp(static_cast<Acc>(in[j]) - mx);
  if (log) {
    const Acc lse = std::log(sum);
    for (int64_t j = 0; j < depth; ++j) out[j] = static_cast<T>(static_cast<Acc>(in[j]) - mx - lse);
  } else {
    const Acc inv = Acc(1) / sum;
    for (int64_t j = 0; j < depth; ++j) out[j] = static_cast<T>(std::exp(static_cast<Acc>(in[j]) - mx) * inv);
  }
}

// One spatial dimension of a window op: output size and the padding before.
struct WindowDim {
  int64_t in = 0, k = 0, stride = 1, out = 0, pad = 0;
};

// TensorFlow's GetWindowedOutputSize (dilation 1). InvalidArgument for a
// VALID window larger than the input.
inline absl::Status ComputeWindow(int64_t in, int64_t k, int64_t stride, const std::string& padding, WindowDim* d) {
  d->in = in;
  d->k = k;
  d->stride = stride;
  if (k <= 0) return absl::InvalidArgumentError(absl::StrCat("window size must be positive, got ", k));
  if (stride <= 0) return absl::InvalidArgumentError(absl::StrCat("stride must be positive, got ", stride));
  // Written so that no intermediate overflows for any attr values.
  if (padding == "VALID") {
    if (k > in) {
      return absl::InvalidArgumentError(
          absl::StrCat("window size ", k, " is larger than the input size ", in, " (VALID padding)"));
    }
    d->out = (in - k) / stride + 1;
    d->pad = 0;
  } else {
    d->out = in == 0 ? 0 : (in - 1) / stride + 1;
    // (out - 1) * stride <= in - 1, so this cannot overflow.
    const int64_t needed = d->out == 0 ? 0 : std::max<int64_t>(0, ((d->out - 1) * stride - in) + k);
    d->pad = needed / 2;
  }
  return absl::OkStatus();
}

// Reads and checks strides (and ksize when `ksize` is non-null), padding,
// data_format and dilations of a conv/pool node: NHWC only (NCHW nodes reach
// the kernels converted by the layout pass), 4 positive
// entries with 1 in the batch and depth positions, SAME or VALID.
inline absl::Status ReadWindowAttrs(OpKernelConstruction* ctx, std::vector<int64_t>* strides,
                                    std::vector<int64_t>* ksize, std::string* padding) {
  absl::Status s = ctx->GetAttr("strides", strides);
  if (!s.ok()) return s;
  s = ctx->GetAttr("padding", padding);
  if (!s.ok()) return s;
  std::string format = "NHWC";
  if (ctx->def().attr().count("data_format")) {
    s = ctx->GetAttr("data_format", &format);
    if (!s.ok()) return s;
  }
  if (format == "NCHW") {
    // Sessions convert NCHW nodes first (engine/graph/optimizer_layout.h)
    // where the device can transpose.
    return absl::InvalidArgumentError(
        "this kernel takes data_format NHWC only, got NCHW (the layout pass left the node as it was: its device "
        "has no Transpose kernel for its type)");
  }
  if (format != "NHWC") {
    return absl::InvalidArgumentError(absl::StrCat("data_format must be NHWC or NCHW, got ", format));
  }
  if (*padding != "SAME" && *padding != "VALID") {
    return absl::InvalidArgumentError(absl::StrCat("padding ", *padding, " is not supported (SAME or VALID)"));
  }
  auto check = [](const std::vector<int64_t>& v, const char* what) -> absl::Status {
    if (v.size() != 4) return absl::InvalidArgumentError(absl::StrCat(what, " must have 4 elements"));
    for (int64_t x : v) {
      if (x <= 0) return absl::InvalidArgumentError(absl::StrCat(what, " must be positive, got ", x));
    }
    if (v[0] != 1 || v[3] != 1) {
      return absl::InvalidArgumentError(absl::StrCat(what, " in the batch and depth dimensions must be 1"));
    }
    return absl::OkStatus();
  };
  s = check(*strides, "strides");
  if (!s.ok()) return s;
  if (ksize != nullptr) {
    s = ctx->GetAttr("ksize", ksize);
    if (!s.ok()) return s;
    s = check(*ksize, "ksize");
    if (!s.ok()) return s;
  }
  if (ctx->def().attr().count("dilations")) {
    std::vector<int64_t> dilations;
    s = ctx->GetAttr("dilations", &dilations);
    if (!s.ok()) return s;
    for (int64_t d : dilations) {
      if (d != 1) return absl::InvalidArgumentError("dilations other than 1 are not supported");
    }
  }
  return absl::OkStatus();
}

// Reads a rank-1 int32 shape tensor of `rank` non-negative entries.
inline absl::Status ShapeFromTensor(const Tensor& t, int rank, TensorShape* shape) {
  if (t.dtype() != DT_INT32 || t.dims() != 1 || t.NumElements() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape input must be a vector of ", rank, " int32 values, got ", t.shape().DebugString()));
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) dims.push_back(t.data<int32_t>()[i]);
  for (int64_t d : dims) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat("shape input has a negative dimension ", d));
  }
  auto built = TensorShape::Build(dims);
  if (!built.ok()) return built.status();
  *shape = *built;
  return absl::OkStatus();
}

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_NN_UTIL_H_
