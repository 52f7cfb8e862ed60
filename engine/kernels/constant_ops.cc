// CPU kernels: Const (its value decoded once, at kernel construction),
// Placeholder (fails: a placeholder must be fed), PlaceholderWithDefault,
// Identity and NoOp.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"

namespace sluice {
namespace {

class ConstOp : public OpKernel {
 public:
  explicit ConstOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    TensorProto proto;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("value", &proto));
    auto t = Tensor::FromProto(proto, ctx->device()->allocator());
    OP_REQUIRES_OK(ctx, t.status());
    OP_REQUIRES(ctx, t->dtype() == ctx->output_types()[0],
                absl::InvalidArgumentError(absl::StrCat("attr 'value' holds ", DataTypeString(t->dtype()),
                                                        " but attr 'dtype' is ", DataTypeString(ctx->output_types()[0]))));
    value_ = std::move(t).value();
  }
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, value_); }
  bool IsExpensive() const override { return false; }

 private:
  Tensor value_;
};

class PlaceholderOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->CtxFailure(absl::InvalidArgumentError(absl::StrCat("placeholder '", name(), "' of type ",
                                                            DataTypeString(output_type(0)),
                                                            " must be fed a value (pass it in the feeds)")));
  }
  bool IsExpensive() const override { return false; }
};

class IdentityOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
  bool IsExpensive() const override { return false; }
};

// Forwards the default value (reached only when the tensor is not fed), after
// checking it against attr 'shape' (shape inference cannot when the default's
// shape is known only at run time).
class PlaceholderWithDefaultOp : public OpKernel {
 public:
  explicit PlaceholderWithDefaultOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    TensorShapeProto proto;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("shape", &proto));
    auto shape = PartialShape::FromProto(proto);
    OP_REQUIRES_OK(ctx, shape.status());
    shape_ = *shape;
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES(ctx, shape_.IsCompatibleWith(in.shape()),
                absl::InvalidArgumentError(absl::StrCat("the default value has shape ", in.shape().DebugString(),
                                                        ", incompatible with attr 'shape' ", shape_.DebugString())));
    ctx->set_output(0, in);
  }
  bool IsExpensive() const override { return false; }

 private:
  PartialShape shape_;
};

class NoOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
  bool IsExpensive() const override { return false; }
};

REGISTER_KERNEL_BUILDER(Name("Const").Device(kDeviceCpu), ConstOp);
REGISTER_KERNEL_BUILDER(Name("Placeholder").Device(kDeviceCpu), PlaceholderOp);
REGISTER_KERNEL_BUILDER(Name("Identity").Device(kDeviceCpu), IdentityOp);
REGISTER_KERNEL_BUILDER(Name("PlaceholderWithDefault").Device(kDeviceCpu), PlaceholderWithDefaultOp);
REGISTER_KERNEL_BUILDER(Name("NoOp").Device(kDeviceCpu), NoOp);

}  // namespace
}  // namespace sluice
