// CPU kernels for the shape-manipulating array ops: Fill, ZerosLike, OnesLike,
// Shape, Rank, Size, Reshape, Squeeze, ExpandDims, StopGradient, Range,
// InvertPermutation and DataFormatVecPermute.
// Reshape/Squeeze/ExpandDims/StopGradient share the input buffer (no copy).
// Kernels are dtype-generic where the op only moves bytes. Shape, Rank, Size,
// Reshape, Squeeze, ExpandDims and StopGradient never touch the data, so they are
// registered for the GPU as well (their int32 arguments and outputs live in
// host memory there), keeping a GPU step from bouncing through the CPU; so is
// DataFormatVecPermute for int32, which only reads and writes such vectors.
// Stateless; Compute is safe to run concurrently.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/range_count.h"
#include "engine/kernels/array_kernel_util.h"
#include "engine/kernels/reshape_util.h"

namespace sluice {
namespace {

using array_util::IndexScalar;
using array_util::IndexVector;

class FillOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dims_t = ctx->input(0);
    const Tensor& value = ctx->input(1);
    OP_REQUIRES(ctx, array_util::IsIndexType(dims_t.dtype()),
                absl::InvalidArgumentError("dims must be int32 or int64"));
    auto dims = IndexVector(dims_t, "dims");
    OP_REQUIRES_OK(ctx, dims.status());
    OP_REQUIRES(ctx, value.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("value must be a scalar, got shape ", value.shape().DebugString())));
    auto shape = TensorShape::Build(*dims);
    OP_REQUIRES(ctx, shape.ok(), absl::InvalidArgumentError(absl::StrCat("dims: ", shape.status().message())));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    array_util::FillWithElement(value, 0, *out, 0, out->NumElements());
  }
};
REGISTER_KERNEL_BUILDER(Name("Fill").Device(kDeviceCpu), FillOp);

class ZerosLikeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(0).shape(), &out));
    array_util::SetZero(*out);
  }
  bool IsExpensive() const override { return false; }
};
REGISTER_KERNEL_BUILDER(Name("ZerosLike").Device(kDeviceCpu), ZerosLikeOp);

template <typename T>
void FillOnes(Tensor* out, int64_t n) {
  std::fill_n(out->data<T>(), n, T(1));
}

class OnesLikeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    const int64_t n = out->NumElements();
    bool ok = true;
    switch (in.dtype()) {
      case DT_FLOAT: FillOnes<float>(out, n); break;
      case DT_DOUBLE: FillOnes<double>(out, n); break;
      case DT_HALF: FillOnes<half>(out, n); break;
      case DT_BFLOAT16: FillOnes<bfloat16>(out, n); break;
      case DT_INT8: FillOnes<int8_t>(out, n); break;
      case DT_INT16: FillOnes<int16_t>(out, n); break;
      case DT_INT32: FillOnes<int32_t>(out, n); break;
      case DT_INT64: FillOnes<int64_t>(out, n); break;
      case DT_UINT8: FillOnes<uint8_t>(out, n); break;
      case DT_UINT16: FillOnes<uint16_t>(out, n); break;
      case DT_BOOL: FillOnes<bool>(out, n); break;
      case DT_COMPLEX64: FillOnes<complex64>(out, n); break;
      default: ok = false;
    }
    OP_REQUIRES(ctx, ok, absl::InvalidArgumentError(absl::StrCat("OnesLike does not support ", DataTypeString(in.dtype()))));
  }
  bool IsExpensive() const override { return false; }
};
REGISTER_KERNEL_BUILDER(Name("OnesLike").Device(kDeviceCpu), OnesLikeOp);

class ShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const TensorShape& s = ctx->input(0).shape();
    std::vector<int64_t> dims(s.dim_sizes().begin(), s.dim_sizes().end());
    auto t = array_util::MakeIndexTensor(output_type(0), dims, TensorShape({s.dims()}));
    OP_REQUIRES(ctx, t.ok(), absl::InvalidArgumentError(absl::StrCat("shape ", s.DebugString(), ": ",
                                                                     t.status().message(), "; use out_type int64")));
    ctx->set_output(0, *t);
  }
  bool IsExpensive() const override { return false; }
};
REGISTER_KERNEL_BUILDER(Name("Shape").Device(kDeviceCpu), ShapeOp);
REGISTER_KERNEL_BUILDER(Name("Shape").Device(kDeviceGpu).TypeConstraint<int32_t>("out_type"), ShapeOp);

class ShapeNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const TensorShape& s = ctx->input(i).shape();
      std::vector<int64_t> dims(s.dim_sizes().begin(), s.dim_sizes().end());
      auto t = array_util::MakeIndexTensor(output_type(i), dims, TensorShape({s.dims()}));
      OP_REQUIRES(ctx, t.ok(), absl::InvalidArgumentError(absl::StrCat("shape of input ", i, " ", s.DebugString(), ": ",
                                                                       t.status().message(), "; use out_type int64")));
      ctx->set_output(i, *t);
    }
  }
  bool IsExpensive() const override { return false; }
};
REGISTER_KERNEL_BUILDER(Name("ShapeN").Device(kDeviceCpu), ShapeNOp);

class RankOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, Tensor::Scalar<int32_t>(ctx->input(0).dims())); }
  bool IsExpensive() const override { return false; }
};
REGISTER_KERNEL_BUILDER(Name("Rank").Device(kDeviceCpu), RankOp);
// On a GPU too: the int32 output lives in host memory there.
REGISTER_KERNEL_BUILDER(Name("Rank").Device(kDeviceGpu), RankOp);

class SizeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto t = array_util::MakeIndexTensor(output_type(0), {ctx->input(0).NumElements()}, TensorShape());
    OP_REQUIRES(ctx, t.ok(), absl::InvalidArgumentError(absl::StrCat("size: ", t.status().message(), "; use out_type int64")));
    ctx->set_output(0, *t);
  }
  bool IsExpensive() const override { return false; }
};
REGISTER_KERNEL_BUILDER(Name("Size").Device(kDeviceCpu), SizeOp);
REGISTER_KERNEL_BUILDER(Name("Size").Device(kDeviceGpu).TypeConstraint<int32_t>("out_type"), SizeOp);

// Sets output 0 to the input sharing its buffer, with `shape`.
void ForwardReshaped(OpKernelContext* ctx, const TensorShape& shape) {
  auto t = ctx->input(0).Reshaped(shape);
  OP_REQUIRES_OK(ctx, t.status());
  ctx->set_output(0, *t);
}

// The same with dims computed from the input: InvalidArgument when they break
// TensorShape's rule (ExpandDims of a rank-254 input has 255 dims).
void ForwardReshaped(OpKernelContext* ctx, absl::Span<const int64_t> dims) {
  auto shape = TensorShape::Build(dims);
  OP_REQUIRES_OK(ctx, shape.status());
  ForwardReshaped(ctx, *shape);
}

class ReshapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto shape = ReshapeOutputShape(ctx->input(1), ctx->input(0).NumElements());
    OP_REQUIRES_OK(ctx, shape.status());
    ForwardReshaped(ctx, *shape);
  }
  bool IsExpensive() const override { return false; }
};
REGISTER_KERNEL_BUILDER(Name("Reshape").Device(kDeviceCpu), ReshapeOp);
// On a GPU the shape must be int32 (host memory there); the data is not touched.
REGISTER_KERNEL_BUILDER(Name("Reshape").Device(kDeviceGpu).TypeConstraint<int32_t>("Tshape"), ReshapeOp);

class SqueezeOp : public OpKernel {
 public:
  explicit SqueezeOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("squeeze_dims", &squeeze_dims_));
  }
  void Compute(OpKernelContext* ctx) override {
    const TensorShape& in = ctx->input(0).shape();
    const int rank = in.dims();
    std::vector<bool> squeeze(rank, false);
    for (int64_t d : squeeze_dims_) {
      auto axis = array_util::CanonicalAxis(d, rank, "squeeze dimension");
      OP_REQUIRES_OK(ctx, axis.status());
      OP_REQUIRES(ctx, in.dim_size(*axis) == 1,
                  absl::InvalidArgumentError(absl::StrCat("can not squeeze dim[", *axis, "], expected a dimension of 1, got ",
                                                          in.dim_size(*axis))));
      squeeze[*axis] = true;
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) {
      const bool drop = squeeze_dims_.empty() ? in.dim_size(i) == 1 : squeeze[i];
      if (!drop) dims.push_back(in.dim_size(i));
    }
    ForwardReshaped(ctx, absl::MakeConstSpan(dims));
  }
  bool IsExpensive() const override { return false; }

 private:
  std::vector<int64_t> squeeze_dims_;
};
REGISTER_KERNEL_BUILDER(Name("Squeeze").Device(kDeviceCpu), SqueezeOp);
REGISTER_KERNEL_BUILDER(Name("Squeeze").Device(kDeviceGpu), SqueezeOp);

class ExpandDimsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const TensorShape& in = ctx->input(0).shape();
    auto dim = IndexScalar(ctx->input(1), "dim");
    OP_REQUIRES_OK(ctx, dim.status());
    auto axis = array_util::CanonicalAxis(*dim, in.dims() + 1, "dim");
    OP_REQUIRES_OK(ctx, axis.status());
    std::vector<int64_t> dims(in.dim_sizes().begin(), in.dim_sizes().end());
    dims.insert(dims.begin() + *axis, 1);
    ForwardReshaped(ctx, absl::MakeConstSpan(dims));
  }
  bool IsExpensive() const override { return false; }
};
REGISTER_KERNEL_BUILDER(Name("ExpandDims").Device(kDeviceCpu), ExpandDimsOp);
// On a GPU the dim must be int32 (host memory there); the data is not touched.
REGISTER_KERNEL_BUILDER(Name("ExpandDims").Device(kDeviceGpu).TypeConstraint<int32_t>("Tdim"), ExpandDimsOp);

class StopGradientOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
  bool IsExpensive() const override { return false; }
};
REGISTER_KERNEL_BUILDER(Name("StopGradient").Device(kDeviceCpu), StopGradientOp);
REGISTER_KERNEL_BUILDER(Name("StopGradient").Device(kDeviceGpu), StopGradientOp);

template <typename T>
class RangeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < 3; ++i) {
      OP_REQUIRES(ctx, ctx->input(i).dims() == 0,
                  absl::InvalidArgumentError(absl::StrCat(i == 0 ? "start" : i == 1 ? "limit" : "delta",
                                                          " must be a scalar, got shape ",
                                                          ctx->input(i).shape().DebugString())));
    }
    const T start = ctx->input(0).scalar<T>(), limit = ctx->input(1).scalar<T>(), delta = ctx->input(2).scalar<T>();
    OP_REQUIRES(ctx, delta != T(0), absl::InvalidArgumentError("requires delta != 0"));
    if (delta > T(0)) {
      OP_REQUIRES(ctx, start <= limit,
                  absl::InvalidArgumentError(absl::StrCat("requires start <= limit when delta > 0: ", start, "/", limit)));
    } else {
      OP_REQUIRES(ctx, start >= limit,
                  absl::InvalidArgumentError(absl::StrCat("requires start >= limit when delta < 0: ", start, "/", limit)));
    }
    int64_t n = 0;
    if constexpr (std::is_integral_v<T>) {
      const uint64_t exact = *IntegerRangeCount(start, limit, delta);  // start, limit and delta checked above
      OP_REQUIRES(ctx, exact <= static_cast<uint64_t>(kMaxTensorElements),
                  absl::InvalidArgumentError("requires the range size to fit in a tensor"));
      n = static_cast<int64_t>(exact);
    } else {
      const double count =
          std::ceil(std::abs((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta)));
      OP_REQUIRES(ctx, std::isfinite(count) && count <= static_cast<double>(kMaxTensorElements),
                  absl::InvalidArgumentError("requires the range size to fit in a tensor"));
      n = static_cast<int64_t>(count);
    }
    Tensor* out = nullptr;
    auto shape = TensorShape::Build({n});
    OP_REQUIRES_OK(ctx, shape.status());
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    T* o = out->data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_integral_v<T>) {
        o[i] = static_cast<T>(IntegerRangeElement(start, delta, static_cast<uint64_t>(i)));  // no overflow on the way
      } else {
        o[i] = static_cast<T>(start + static_cast<T>(i) * delta);
      }
    }
  }
  bool IsExpensive() const override { return false; }
};
REGISTER_KERNEL_BUILDER(Name("Range").Device(kDeviceCpu).TypeConstraint<float>("Tidx"), RangeOp<float>);
REGISTER_KERNEL_BUILDER(Name("Range").Device(kDeviceCpu).TypeConstraint<double>("Tidx"), RangeOp<double>);
REGISTER_KERNEL_BUILDER(Name("Range").Device(kDeviceCpu).TypeConstraint<int32_t>("Tidx"), RangeOp<int32_t>);
REGISTER_KERNEL_BUILDER(Name("Range").Device(kDeviceCpu).TypeConstraint<int64_t>("Tidx"), RangeOp<int64_t>);

// y[x[i]] = i; x must be a permutation of 0..n-1.
template <typename T>
class InvertPermutationOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    OP_REQUIRES(ctx, x.dims() == 1,
                absl::InvalidArgumentError(absl::StrCat("x must be a vector, got shape ", x.shape().DebugString())));
    const int64_t n = x.NumElements();
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    const T* in = x.data<T>();
    T* y = out->data<T>();
    std::vector<bool> seen(n, false);
    for (int64_t i = 0; i < n; ++i) {
      const T d = in[i];
      OP_REQUIRES(ctx, d >= 0 && d < n,
                  absl::InvalidArgumentError(absl::StrCat("x[", i, "] = ", d, " is not in [0, ", n, ")")));
      OP_REQUIRES(ctx, !seen[d], absl::InvalidArgumentError(absl::StrCat(d, " is duplicated in x")));
      seen[d] = true;
      y[d] = static_cast<T>(i);
    }
  }
  bool IsExpensive() const override { return false; }
};
REGISTER_KERNEL_BUILDER(Name("InvertPermutation").Device(kDeviceCpu).TypeConstraint<int32_t>("T"),
                        InvertPermutationOp<int32_t>);
REGISTER_KERNEL_BUILDER(Name("InvertPermutation").Device(kDeviceCpu).TypeConstraint<int64_t>("T"),
                        InvertPermutationOp<int64_t>);

// y[i] = x[src_format.find(dst_format[i])], by rows for a [4, 2] matrix; a
// vector of 2 (the spatial dims) is copied, as NHWC and NCHW order them alike.
template <typename T>
class DataFormatVecPermuteOp : public OpKernel {
 public:
  explicit DataFormatVecPermuteOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    std::string src, dst;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("src_format", &src));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dst_format", &dst));
    for (const std::string* f : {&src, &dst}) {
      OP_REQUIRES(ctx, *f == "NHWC" || *f == "NCHW",
                  absl::InvalidArgumentError(absl::StrCat("src_format and dst_format must be NHWC or NCHW, got '", *f,
                                                          "'")));
    }
    for (int i = 0; i < 4; ++i) from_[i] = static_cast<int>(src.find(dst[i]));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const bool vector = x.dims() == 1 && (x.dim_size(0) == 4 || x.dim_size(0) == 2);
    const bool matrix = x.dims() == 2 && x.dim_size(0) == 4 && x.dim_size(1) == 2;
    OP_REQUIRES(ctx, vector || matrix,
                absl::InvalidArgumentError(absl::StrCat(
                    "x must be a vector of 4 or 2 entries or a [4, 2] matrix, got shape ", x.shape().DebugString())));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    const T* in = x.data<T>();
    T* y = out->data<T>();
    if (x.NumElements() == 2) {
      y[0] = in[0];
      y[1] = in[1];
      return;
    }
    const int row = matrix ? 2 : 1;
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < row; ++j) y[i * row + j] = in[from_[i] * row + j];
    }
  }
  bool IsExpensive() const override { return false; }

 private:
  int from_[4] = {0, 1, 2, 3};
};
REGISTER_KERNEL_BUILDER(Name("DataFormatVecPermute").Device(kDeviceCpu).TypeConstraint<int32_t>("T"),
                        DataFormatVecPermuteOp<int32_t>);
REGISTER_KERNEL_BUILDER(Name("DataFormatVecPermute").Device(kDeviceCpu).TypeConstraint<int64_t>("T"),
                        DataFormatVecPermuteOp<int64_t>);
REGISTER_KERNEL_BUILDER(Name("DataFormatVecPermute").Device(kDeviceGpu).TypeConstraint<int32_t>("T"),
                        DataFormatVecPermuteOp<int32_t>);

}  // namespace
}  // namespace sluice
