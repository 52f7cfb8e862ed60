// CPU kernels for TensorFlow's TensorArray*V3 ops (engine/ops/tensor_array_ops.cc).
// TensorArrayV3 makes a TensorArray (tensor_array.h) in the step's container
// under a process-unique name and outputs its handle and a flow scalar; the
// other kernels find the array behind their handle input. Flow outputs pass
// the flow input through: they carry ordering, not data. TensorArrayGradV3
// finds or makes the gradient array "<name>@<source>" beside the forward one,
// so every gradient op of one tf.gradients call shares it.
// Thread safety: Compute is safe to run concurrently; each array has a mutex.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"
#include "engine/kernels/step_resource_util.h"
#include "engine/kernels/tensor_array.h"

namespace sluice {
namespace {

absl::StatusOr<PartialShape> ShapeAttr(OpKernelConstruction* ctx, const char* name) {
  TensorShapeProto proto;
  absl::Status s = ctx->GetAttr(name, &proto);
  if (!s.ok()) return s;
  return PartialShape::FromProto(proto);
}

absl::StatusOr<int32_t> ScalarInt32(OpKernelContext* ctx, int i, const char* what) {
  const Tensor& t = ctx->input(i);
  if (t.dims() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be a scalar, got shape ", t.shape().DebugString()));
  }
  return t.data<int32_t>()[0];
}

absl::Status CheckVector(const Tensor& t, const char* what) {
  if (t.dims() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be a vector, got shape ", t.shape().DebugString()));
  }
  return absl::OkStatus();
}

absl::Status CheckDtype(const TensorArray& ta, DataType dtype) {
  if (ta.dtype() != dtype) {
    return absl::InvalidArgumentError(absl::StrCat("TensorArray ", ta.name(), " holds ", DataTypeString(ta.dtype()),
                                                   " but the node expects ", DataTypeString(dtype)));
  }
  return absl::OkStatus();
}

// Outputs `values` stacked along a new dim 0 ([n] + element shape); for no
// values the element shape comes from `element_shape`, which must then be
// fully defined.
absl::Status StackValues(OpKernelContext* ctx, const TensorArray& ta, const std::vector<Tensor>& values,
                         const PartialShape& element_shape) {
  TensorShape shape;
  if (values.empty()) {
    if (!element_shape.IsFullyDefined()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TensorArray ", ta.name(), " has size zero, but element shape ", element_shape.DebugString(),
          " is not fully defined. Currently only static shapes are supported when packing zero-size TensorArrays."));
    }
    shape = TensorShape(element_shape.dims());
  } else {
    shape = values[0].shape();
  }
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i].shape() != shape) {
      return absl::InvalidArgumentError(absl::StrCat("TensorArray ", ta.name(),
                                                     " has inconsistent shapes: the first element read has shape ",
                                                     shape.DebugString(), " but element ", i, " read has shape ",
                                                     values[i].shape().DebugString()));
    }
  }
  TensorShape out_shape({static_cast<int64_t>(values.size())});
  for (int64_t d : shape.dim_sizes()) out_shape.AddDim(d);
  Tensor* out = nullptr;
  absl::Status s = ctx->allocate_output(0, out_shape, &out);
  if (!s.ok()) return s;
  const int64_t n = shape.num_elements();
  for (size_t i = 0; i < values.size(); ++i) CopyElements(values[i], 0, n, out, static_cast<int64_t>(i) * n);
  return absl::OkStatus();
}

// Row `begin` of `value` (shape [n, ...]) as a tensor of shape [...] when
// `len` < 0; rows [begin, begin + len) as shape [len, ...] otherwise.
Tensor Rows(const Tensor& value, int64_t begin, int64_t len) {
  TensorShape shape;
  if (len >= 0) shape.AddDim(len);
  for (int d = 1; d < value.dims(); ++d) shape.AddDim(value.dim_size(d));
  Tensor t(value.dtype(), shape);
  const int64_t row = value.dim_size(0) == 0 ? 0 : value.NumElements() / value.dim_size(0);
  CopyElements(value, begin * row, (len >= 0 ? len : 1) * row, &t, 0);
  return t;
}

class TensorArrayOp : public OpKernel {
 public:
  explicit TensorArrayOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dtype", &options_.dtype));
    auto shape = ShapeAttr(ctx, "element_shape");
    OP_REQUIRES_OK(ctx, shape.status());
    options_.element_shape = *shape;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dynamic_size", &options_.dynamic_size));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("clear_after_read", &options_.clear_after_read));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("identical_element_shapes", &options_.identical_element_shapes));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("tensor_array_name", &name_));
    if (name_.empty()) name_ = ctx->def().name();
  }
  void Compute(OpKernelContext* ctx) override {
    auto size = ScalarInt32(ctx, 0, "size");
    OP_REQUIRES_OK(ctx, size.status());
    OP_REQUIRES(ctx, *size >= 0, absl::InvalidArgumentError(absl::StrCat("Size should be >= 0, got ", *size)));
    OP_REQUIRES(ctx, *size <= kMaxTensorArraySize,
                absl::InvalidArgumentError(absl::StrCat("Size ", *size, " exceeds the largest TensorArray, ",
                                                        kMaxTensorArraySize)));
    auto container = StepContainerName(ctx);
    OP_REQUIRES_OK(ctx, container.status());
    static std::atomic<int64_t> counter{0};
    const std::string name = absl::StrCat(name_, "_", counter.fetch_add(1, std::memory_order_relaxed));
    const Options options = options_;
    const int64_t n = *size;
    auto ta = ctx->resource_manager()->LookupOrCreate<TensorArray>(
        *container, name, [&]() -> absl::StatusOr<std::shared_ptr<TensorArray>> {
          return std::make_shared<TensorArray>(name, options, n);
        });
    OP_REQUIRES_OK(ctx, ta.status());
    OP_REQUIRES_OK(ctx, OutputStepHandle(ctx, 0, *container, name, TensorArray::kTypeName));
    ctx->set_output(1, Tensor::Scalar<float>(0));
  }
  bool IsExpensive() const override { return false; }

 private:
  using Options = TensorArray::Options;
  Options options_;
  std::string name_;
};

class TensorArrayGradOp : public OpKernel {
 public:
  explicit TensorArrayGradOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("source", &source_));
  }
  void Compute(OpKernelContext* ctx) override {
    auto ta = LookupStepResource<TensorArray>(ctx, 0);
    OP_REQUIRES_OK(ctx, ta.status());
    const ResourceHandle& h = ctx->input(0).data<ResourceHandle>()[0];
    const std::string name = absl::StrCat((*ta)->name(), "@", source_);
    std::shared_ptr<TensorArray> forward = *ta;
    auto grad = ctx->resource_manager()->LookupOrCreate<TensorArray>(
        h.container, name, [&]() { return forward->MakeGradient(name); });
    OP_REQUIRES_OK(ctx, grad.status());
    OP_REQUIRES_OK(ctx, OutputStepHandle(ctx, 0, h.container, name, TensorArray::kTypeName));
    ctx->set_output(1, ctx->input(1));
  }
  bool IsExpensive() const override { return false; }

 private:
  std::string source_;
};

class TensorArrayWriteOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto ta = LookupStepResource<TensorArray>(ctx, 0);
    OP_REQUIRES_OK(ctx, ta.status());
    auto index = ScalarInt32(ctx, 1, "index");
    OP_REQUIRES_OK(ctx, index.status());
    OP_REQUIRES_OK(ctx, (*ta)->Write(*index, ctx->input(2)));
    ctx->set_output(0, ctx->input(3));
  }
  bool IsExpensive() const override { return false; }
};

class TensorArrayReadOp : public OpKernel {
 public:
  explicit TensorArrayReadOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dtype", &dtype_));
  }
  void Compute(OpKernelContext* ctx) override {
    auto ta = LookupStepResource<TensorArray>(ctx, 0);
    OP_REQUIRES_OK(ctx, ta.status());
    OP_REQUIRES_OK(ctx, CheckDtype(**ta, dtype_));
    auto index = ScalarInt32(ctx, 1, "index");
    OP_REQUIRES_OK(ctx, index.status());
    auto value = (*ta)->Read(*index);
    OP_REQUIRES_OK(ctx, value.status());
    ctx->set_output(0, std::move(value).value());
  }
  bool IsExpensive() const override { return false; }

 private:
  DataType dtype_ = DT_INVALID;
};

class TensorArrayGatherOp : public OpKernel {
 public:
  explicit TensorArrayGatherOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dtype", &dtype_));
    auto shape = ShapeAttr(ctx, "element_shape");
    OP_REQUIRES_OK(ctx, shape.status());
    element_shape_ = *shape;
  }
  void Compute(OpKernelContext* ctx) override {
    auto ta = LookupStepResource<TensorArray>(ctx, 0);
    OP_REQUIRES_OK(ctx, ta.status());
    OP_REQUIRES_OK(ctx, CheckDtype(**ta, dtype_));
    const Tensor& indices = ctx->input(1);
    OP_REQUIRES_OK(ctx, CheckVector(indices, "indices"));
    auto values = (*ta)->ReadMany(absl::MakeConstSpan(indices.data<int32_t>(), indices.NumElements()));
    OP_REQUIRES_OK(ctx, values.status());
    PartialShape shape = element_shape_;
    if (values->empty()) {
      auto merged = shape.Merge((*ta)->element_shape());
      OP_REQUIRES_OK(ctx, merged.status());
      shape = *merged;
    } else if (!element_shape_.IsCompatibleWith((*values)[0].shape())) {
      // The shape function trusts the attr (StackValues holds the rest to the first).
      ctx->SetStatus(absl::InvalidArgumentError(
          absl::StrCat("TensorArray ", (*ta)->name(), ": gathered elements have shape ",
                       (*values)[0].shape().DebugString(), ", not the element_shape ", element_shape_.DebugString(),
                       " this node declares")));
      return;
    }
    OP_REQUIRES_OK(ctx, StackValues(ctx, **ta, *values, shape));
  }

 private:
  DataType dtype_ = DT_INVALID;
  PartialShape element_shape_;
};

class TensorArrayScatterOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto ta = LookupStepResource<TensorArray>(ctx, 0);
    OP_REQUIRES_OK(ctx, ta.status());
    const Tensor& indices = ctx->input(1);
    const Tensor& value = ctx->input(2);
    OP_REQUIRES_OK(ctx, CheckVector(indices, "indices"));
    OP_REQUIRES(ctx, value.dims() >= 1 && value.dim_size(0) == indices.NumElements(),
                absl::InvalidArgumentError(absl::StrCat("Expected len(indices) == values.shape[0], but saw: ",
                                                        indices.NumElements(), " vs. ", value.shape().DebugString())));
    for (int64_t i = 0; i < indices.NumElements(); ++i) {
      OP_REQUIRES_OK(ctx, (*ta)->Write(indices.data<int32_t>()[i], Rows(value, i, -1)));
    }
    ctx->set_output(0, ctx->input(3));
  }
};

class TensorArrayConcatOp : public OpKernel {
 public:
  explicit TensorArrayConcatOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dtype", &dtype_));
    auto shape = ShapeAttr(ctx, "element_shape_except0");
    OP_REQUIRES_OK(ctx, shape.status());
    except0_ = *shape;
  }
  void Compute(OpKernelContext* ctx) override {
    auto ta = LookupStepResource<TensorArray>(ctx, 0);
    OP_REQUIRES_OK(ctx, ta.status());
    OP_REQUIRES_OK(ctx, CheckDtype(**ta, dtype_));
    auto values = (*ta)->ReadAll();
    OP_REQUIRES_OK(ctx, values.status());
    Tensor* lengths = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({static_cast<int64_t>(values->size())}), &lengths));
    TensorShape rest;
    int64_t total = 0;
    for (size_t i = 0; i < values->size(); ++i) {
      const Tensor& v = (*values)[i];
      OP_REQUIRES(ctx, v.dims() >= 1,
                  absl::InvalidArgumentError(absl::StrCat("Concat saw a scalar shape at index ", i,
                                                          " but requires at least vectors.")));
      TensorShape r;
      for (int d = 1; d < v.dims(); ++d) r.AddDim(v.dim_size(d));
      if (i == 0) rest = r;
      OP_REQUIRES(ctx, r == rest,
                  absl::InvalidArgumentError(absl::StrCat(
                      "TensorArray ", (*ta)->name(), " has inconsistent shapes: element 0 has shape ",
                      (*values)[0].shape().DebugString(), " but element ", i, " has shape ", v.shape().DebugString(),
                      " (they may differ only in dim 0)")));
      lengths->data<int64_t>()[i] = v.dim_size(0);
      total += v.dim_size(0);
    }
    if (values->empty()) {
      OP_REQUIRES(ctx, except0_.IsFullyDefined(),
                  absl::InvalidArgumentError(absl::StrCat(
                      "TensorArray ", (*ta)->name(), " has size zero, but element_shape_except0 ",
                      except0_.DebugString(), " is not fully defined. Currently only static shapes are supported "
                      "when concatenating zero-size TensorArrays.")));
      rest = TensorShape(except0_.dims());
    }
    TensorShape out_shape({total});
    for (int64_t d : rest.dim_sizes()) out_shape.AddDim(d);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    int64_t offset = 0;
    for (const Tensor& v : *values) {
      CopyElements(v, 0, v.NumElements(), out, offset);
      offset += v.NumElements();
    }
  }

 private:
  DataType dtype_ = DT_INVALID;
  PartialShape except0_;
};

class TensorArraySplitOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto ta = LookupStepResource<TensorArray>(ctx, 0);
    OP_REQUIRES_OK(ctx, ta.status());
    const Tensor& value = ctx->input(1);
    const Tensor& lengths = ctx->input(2);
    OP_REQUIRES_OK(ctx, CheckVector(lengths, "lengths"));
    OP_REQUIRES(ctx, value.dims() >= 1,
                absl::InvalidArgumentError(absl::StrCat("Expected value to be at least a vector, but received shape: ",
                                                        value.shape().DebugString())));
    int64_t total = 0;
    for (int64_t i = 0; i < lengths.NumElements(); ++i) {
      const int64_t len = lengths.data<int64_t>()[i];
      OP_REQUIRES(ctx, len >= 0, absl::InvalidArgumentError(absl::StrCat("lengths[", i, "] is negative: ", len)));
      OP_REQUIRES(ctx, len <= value.dim_size(0) - total,
                  absl::InvalidArgumentError(absl::StrCat("Expected sum of lengths to be equal to values.shape[0], "
                                                          "but the lengths up to lengths[", i, "] already exceed ",
                                                          value.dim_size(0))));
      total += len;
    }
    OP_REQUIRES(ctx, total == value.dim_size(0),
                absl::InvalidArgumentError(absl::StrCat("Expected sum of lengths to be equal to values.shape[0], "
                                                        "but sum of lengths is ", total, " and value's shape is: ",
                                                        value.shape().DebugString())));
    auto size = (*ta)->Size();
    OP_REQUIRES_OK(ctx, size.status());
    OP_REQUIRES(ctx, *size == lengths.NumElements() || (*ta)->dynamic_size(),
                absl::InvalidArgumentError(absl::StrCat(
                    "TensorArray's size is not equal to the size of lengths (", *size, " vs. ", lengths.NumElements(),
                    "), and the TensorArray is not marked as dynamically resizeable")));
    int64_t begin = 0;
    for (int64_t i = 0; i < lengths.NumElements(); ++i) {
      const int64_t len = lengths.data<int64_t>()[i];
      OP_REQUIRES_OK(ctx, (*ta)->Write(i, Rows(value, begin, len)));
      begin += len;
    }
    ctx->set_output(0, ctx->input(3));
  }
};

class TensorArraySizeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto ta = LookupStepResource<TensorArray>(ctx, 0);
    OP_REQUIRES_OK(ctx, ta.status());
    auto size = (*ta)->Size();
    OP_REQUIRES_OK(ctx, size.status());
    ctx->set_output(0, Tensor::Scalar<int32_t>(static_cast<int32_t>(*size)));
  }
  bool IsExpensive() const override { return false; }
};

class TensorArrayCloseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto ta = LookupStepResource<TensorArray>(ctx, 0);
    OP_REQUIRES_OK(ctx, ta.status());
    (*ta)->Close();
  }
  bool IsExpensive() const override { return false; }
};

REGISTER_KERNEL_BUILDER(Name("TensorArrayV3").Device(kDeviceCpu), TensorArrayOp);
REGISTER_KERNEL_BUILDER(Name("TensorArrayGradV3").Device(kDeviceCpu), TensorArrayGradOp);
REGISTER_KERNEL_BUILDER(Name("TensorArrayWriteV3").Device(kDeviceCpu), TensorArrayWriteOp);
REGISTER_KERNEL_BUILDER(Name("TensorArrayReadV3").Device(kDeviceCpu), TensorArrayReadOp);
REGISTER_KERNEL_BUILDER(Name("TensorArrayGatherV3").Device(kDeviceCpu), TensorArrayGatherOp);
REGISTER_KERNEL_BUILDER(Name("TensorArrayScatterV3").Device(kDeviceCpu), TensorArrayScatterOp);
REGISTER_KERNEL_BUILDER(Name("TensorArrayConcatV3").Device(kDeviceCpu), TensorArrayConcatOp);
REGISTER_KERNEL_BUILDER(Name("TensorArraySplitV3").Device(kDeviceCpu), TensorArraySplitOp);
REGISTER_KERNEL_BUILDER(Name("TensorArraySizeV3").Device(kDeviceCpu), TensorArraySizeOp);
REGISTER_KERNEL_BUILDER(Name("TensorArrayCloseV3").Device(kDeviceCpu), TensorArrayCloseOp);

}  // namespace
}  // namespace sluice
