// CPU kernels for variables: Variable/VariableV2 look their state up in the
// device's ResourceMgr (container attr, or the default container; name from
// shared_name or the node name) and output a reference; Assign replaces the
// value; AssignAdd adds in place. Writers always hold the variable's mutex,
// so concurrent steps never lose an update.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"

namespace sluice {
namespace {

class VariableOp : public OpKernel {
 public:
  explicit VariableOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("container", &container_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("shared_name", &shared_name_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dtype", &dtype_));
    if (container_.empty()) container_ = ResourceMgr::kDefaultContainer;
    if (shared_name_.empty()) shared_name_ = name();
  }

  void Compute(OpKernelContext* ctx) override {
    const DataType dtype = dtype_;
    auto var = ctx->resource_manager()->LookupOrCreate<VariableResource>(
        container_, shared_name_,
        [dtype]() -> absl::StatusOr<std::shared_ptr<VariableResource>> {
          return std::make_shared<VariableResource>(dtype);
        });
    OP_REQUIRES_OK(ctx, var.status());
    VariableResource* v = var->get();
    // Another node (another graph, a session before this one) may have made
    // it: sharing a variable means agreeing on its type.
    OP_REQUIRES(ctx, v->dtype() == dtype_,
                absl::InvalidArgumentError(absl::StrCat(
                    "attr 'dtype' is ", DataTypeString(dtype_), " but variable '", shared_name_, "' in container '",
                    container_, "' already exists as ", DataTypeString(v->dtype()),
                    " (nodes sharing a variable through shared_name must declare the same dtype)")));
    ctx->set_output_ref(0, v->mu(), v->tensor(), std::move(var).value());
  }
  bool IsExpensive() const override { return false; }

 private:
  std::string container_;
  std::string shared_name_;
  DataType dtype_ = DT_INVALID;
};

class AssignOp : public OpKernel {
 public:
  explicit AssignOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("validate_shape", &validate_shape_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    {
      absl::MutexLock lock(ctx->input_ref_mutex(0));
      Tensor* var = ctx->mutable_input(0);
      if (validate_shape_ && var->IsInitialized()) {
        OP_REQUIRES(ctx, var->shape() == value.shape(),
                    absl::InvalidArgumentError(absl::StrCat("cannot assign a value of shape ", value.shape().DebugString(),
                                                            " to a variable of shape ", var->shape().DebugString())));
      }
      // A fresh buffer: readers holding the old value keep it unchanged.
      *var = value.Clone();
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool validate_shape_ = true;
};

template <typename T>
class AssignAddOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    {
      absl::MutexLock lock(ctx->input_ref_mutex(0));
      Tensor* var = ctx->mutable_input(0);
      OP_REQUIRES(ctx, var->shape() == value.shape(),
                  absl::InvalidArgumentError(absl::StrCat("update of shape ", value.shape().DebugString(),
                                                          " does not match the variable's shape ",
                                                          var->shape().DebugString())));
      T* v = var->data<T>();
      const T* d = value.data<T>();
      for (int64_t i = 0; i < var->NumElements(); ++i) v[i] = static_cast<T>(v[i] + d[i]);
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

REGISTER_KERNEL_BUILDER(Name("VariableV2").Device(kDeviceCpu), VariableOp);
REGISTER_KERNEL_BUILDER(Name("Variable").Device(kDeviceCpu), VariableOp);
REGISTER_KERNEL_BUILDER(Name("Assign").Device(kDeviceCpu), AssignOp);
#define SLUICE_REGISTER_ASSIGN_ADD_(T) \
  REGISTER_KERNEL_BUILDER(Name("AssignAdd").Device(kDeviceCpu).TypeConstraint<T>("T"), AssignAddOp<T>)
SLUICE_REGISTER_ASSIGN_ADD_(float);
SLUICE_REGISTER_ASSIGN_ADD_(double);
SLUICE_REGISTER_ASSIGN_ADD_(half);
SLUICE_REGISTER_ASSIGN_ADD_(bfloat16);
SLUICE_REGISTER_ASSIGN_ADD_(int8_t);
SLUICE_REGISTER_ASSIGN_ADD_(int16_t);
SLUICE_REGISTER_ASSIGN_ADD_(int32_t);
SLUICE_REGISTER_ASSIGN_ADD_(int64_t);
SLUICE_REGISTER_ASSIGN_ADD_(uint8_t);
SLUICE_REGISTER_ASSIGN_ADD_(uint16_t);
SLUICE_REGISTER_ASSIGN_ADD_(complex64);
#undef SLUICE_REGISTER_ASSIGN_ADD_

}  // namespace
}  // namespace sluice
