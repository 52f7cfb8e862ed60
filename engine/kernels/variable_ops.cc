// CPU kernels for variables: Variable/VariableV2 look their state up in the
// device's ResourceMgr (container attr, or the default container; name from
// shared_name or the node name) and output a reference; Assign replaces the
// value; AssignAdd adds in place. Writers always hold the variable's mutex,
// so concurrent steps never lose an update. Attrs, lookup and shape checks:
// variable_util.h (shared with the GPU kernels).
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"
#include "engine/kernels/variable_util.h"

namespace sluice {
namespace {

class VariableOp : public OpKernel {
 public:
  explicit VariableOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadVariableAttrs(ctx, &attrs_));
  }

  void Compute(OpKernelContext* ctx) override { OP_REQUIRES_OK(ctx, OutputVariableRef(ctx, attrs_)); }
  bool IsExpensive() const override { return false; }

 private:
  VariableAttrs attrs_;
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
      OP_REQUIRES_OK(ctx, CheckAssignShape(*var, value, validate_shape_));
      // A fresh buffer: readers holding the old value keep it unchanged.
      *var = value.Clone();
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool validate_shape_ = true;
};

class IsVariableInitializedOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    bool initialized;
    {
      absl::MutexLock lock(ctx->input_ref_mutex(0));
      initialized = ctx->mutable_input(0)->IsInitialized();
    }
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->data<bool>()[0] = initialized;
  }
  bool IsExpensive() const override { return false; }
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
      OP_REQUIRES_OK(ctx, CheckAssignAddShape(*var, value));
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
REGISTER_KERNEL_BUILDER(Name("IsVariableInitialized").Device(kDeviceCpu), IsVariableInitializedOp);
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
