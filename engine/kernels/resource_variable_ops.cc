// CPU kernels for resource variables (engine/ops/resource_variable_ops.cc):
// VarHandleOp makes a handle (this device, the container attr or the default
// container, shared_name or the node's name); the others find the variable
// behind their handle input (resource_variable_util.h) and hold its mutex
// while they read or write it. Readers output a shallow copy of the value;
// writers replace it (Assign) or update it in place after copy-on-write
// (AssignAdd/AssignSub), so a value once read never changes. The
// ResourceApply* and ResourceScatter* kernels live with the Apply* and
// Scatter* ones in training_ops.cc. DisableCopyOnRead is a no-op.
// Thread safety: Compute is safe to run concurrently; the variables' mutexes
// order writers.
#include "absl/strings/str_cat.h"
#include "engine/framework/device.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"
#include "engine/kernels/array_kernel_util.h"
#include "engine/kernels/resource_variable_util.h"
#include "engine/kernels/variable_util.h"

namespace sluice {
namespace {

class VarHandleOp : public OpKernel {
 public:
  explicit VarHandleOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("container", &handle_.container));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("shared_name", &handle_.name));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dtype", &handle_.dtype));
    TensorShapeProto proto;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("shape", &proto));
    auto declared = PartialShape::FromProto(proto);
    OP_REQUIRES_OK(ctx, declared.status());
    if (declared->rank_known()) {
      handle_.declared_rank = declared->rank();
      handle_.declared_dims.assign(declared->dims().begin(), declared->dims().end());
    }
    if (handle_.container.empty()) handle_.container = ResourceMgr::kDefaultContainer;
    if (handle_.name.empty()) handle_.name = ctx->def().name();
    handle_.type_name = ResourceVariable::kTypeName;
    handle_.device = ctx->device()->name();
  }
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->data<ResourceHandle>()[0] = handle_;
  }
  bool IsExpensive() const override { return false; }

 private:
  ResourceHandle handle_;
};

class ReadVariableOp : public OpKernel {
 public:
  explicit ReadVariableOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dtype", &dtype_));
  }
  void Compute(OpKernelContext* ctx) override {
    auto var = LookupResourceVariable(ctx, 0, dtype_);
    OP_REQUIRES_OK(ctx, var.status());
    Tensor value;
    {
      absl::ReaderMutexLock lock((*var)->mu());
      OP_REQUIRES_OK(ctx, CheckReadable(var->get(), ctx->input(0).data<ResourceHandle>()[0]));
      value = *(*var)->tensor();
    }
    ctx->set_output(0, std::move(value));
  }
  bool IsExpensive() const override { return false; }

 private:
  DataType dtype_ = DT_INVALID;
};

class AssignVariableOp : public OpKernel {
 public:
  explicit AssignVariableOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dtype", &dtype_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("validate_shape", &validate_shape_));
  }
  void Compute(OpKernelContext* ctx) override {
    auto var = LookupOrCreateResourceVariable(ctx, 0, dtype_);
    OP_REQUIRES_OK(ctx, var.status());
    // A fresh buffer: readers holding the old value keep it unchanged, and
    // the value's producer (a Const) keeps its own.
    Tensor copy = ctx->input(1).Clone();
    OP_REQUIRES_OK(ctx, CheckDeclaredShape(ctx->input(0).data<ResourceHandle>()[0], copy.shape()));
    absl::MutexLock lock((*var)->mu());
    OP_REQUIRES_OK(ctx, CheckAssignShape(*(*var)->tensor(), copy, validate_shape_));
    *(*var)->tensor() = std::move(copy);
  }

 private:
  DataType dtype_ = DT_INVALID;
  bool validate_shape_ = false;
};

template <typename T, bool kAdd>
class AssignUpdateVariableOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto var = LookupResourceVariable(ctx, 0, DataTypeToEnum<T>::value);
    OP_REQUIRES_OK(ctx, var.status());
    const Tensor& value = ctx->input(1);
    absl::MutexLock lock((*var)->mu());
    Tensor* t = (*var)->tensor();
    OP_REQUIRES_OK(ctx, CheckInitialized(var->get(), ctx->input(0).data<ResourceHandle>()[0]));
    OP_REQUIRES_OK(ctx, CheckAssignAddShape(*t, value));
    PrepareToUpdate(t);
    T* v = t->data<T>();
    const T* d = value.data<T>();
    for (int64_t i = 0; i < t->NumElements(); ++i) v[i] = static_cast<T>(kAdd ? v[i] + d[i] : v[i] - d[i]);
  }
};

class VarIsInitializedOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto handle = HandleFromInput(ctx, 0);
    OP_REQUIRES_OK(ctx, handle.status());
    bool initialized = false;
    auto var = ctx->resource_manager()->Lookup<ResourceVariable>(handle->container, handle->name);
    if (var.ok()) {
      absl::ReaderMutexLock lock((*var)->mu());
      initialized = (*var)->tensor()->IsInitialized();
    }
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->data<bool>()[0] = initialized;
  }
  bool IsExpensive() const override { return false; }
};

class DestroyResourceOp : public OpKernel {
 public:
  explicit DestroyResourceOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("ignore_lookup_error", &ignore_lookup_error_));
  }
  void Compute(OpKernelContext* ctx) override {
    auto handle = HandleFromInput(ctx, 0);
    OP_REQUIRES_OK(ctx, handle.status());
    absl::Status s = ctx->resource_manager()->Delete<ResourceVariable>(handle->container, handle->name);
    if (!s.ok() && !(ignore_lookup_error_ && absl::IsNotFound(s))) ctx->SetStatus(s);
  }
  bool IsExpensive() const override { return false; }

 private:
  bool ignore_lookup_error_ = true;
};

class VariableShapeOp : public OpKernel {
 public:
  explicit VariableShapeOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("out_type", &out_type_));
  }
  void Compute(OpKernelContext* ctx) override {
    auto var = LookupResourceVariable(ctx, 0, DT_INVALID);
    OP_REQUIRES_OK(ctx, var.status());
    TensorShape shape;
    {
      absl::ReaderMutexLock lock((*var)->mu());
      OP_REQUIRES_OK(ctx, CheckReadable(var->get(), ctx->input(0).data<ResourceHandle>()[0]));
      shape = (*var)->tensor()->shape();
    }
    std::vector<int64_t> dims;
    for (int d = 0; d < shape.dims(); ++d) dims.push_back(shape.dim_size(d));
    auto t = array_util::MakeIndexTensor(out_type_, dims, TensorShape({static_cast<int64_t>(dims.size())}));
    OP_REQUIRES_OK(ctx, t.status());
    ctx->set_output(0, *std::move(t));
  }
  bool IsExpensive() const override { return false; }

 private:
  DataType out_type_ = DT_INT32;
};

// ResourceGather(resource, indices): rows of the variable (batch_dims 0; the
// indices are always validated, whatever validate_indices says).
class ResourceGatherOp : public OpKernel {
 public:
  explicit ResourceGatherOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dtype", &dtype_));
    int64_t batch_dims = 0;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("batch_dims", &batch_dims));
    OP_REQUIRES(ctx, batch_dims == 0,
                absl::UnimplementedError(absl::StrCat("ResourceGather supports only batch_dims = 0, got ", batch_dims)));
  }
  void Compute(OpKernelContext* ctx) override {
    auto var = LookupResourceVariable(ctx, 0, dtype_);
    OP_REQUIRES_OK(ctx, var.status());
    Tensor params;
    {
      absl::ReaderMutexLock lock((*var)->mu());
      OP_REQUIRES_OK(ctx, CheckReadable(var->get(), ctx->input(0).data<ResourceHandle>()[0]));
      params = *(*var)->tensor();
    }
    OP_REQUIRES_OK(ctx, array_util::GatherToOutput(ctx, params, ctx->input(1), 0));
  }

 private:
  DataType dtype_ = DT_INVALID;
};

// See DisableCopyOnRead in engine/ops/resource_variable_ops.cc: our variables
// always copy on write, so this only checks that the handle is one.
class DisableCopyOnReadOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { OP_REQUIRES_OK(ctx, HandleFromInput(ctx, 0).status()); }
  bool IsExpensive() const override { return false; }
};

REGISTER_KERNEL_BUILDER(Name("VarHandleOp").Device(kDeviceCpu), VarHandleOp);
REGISTER_KERNEL_BUILDER(Name("DisableCopyOnRead").Device(kDeviceCpu), DisableCopyOnReadOp);
REGISTER_KERNEL_BUILDER(Name("ReadVariableOp").Device(kDeviceCpu), ReadVariableOp);
REGISTER_KERNEL_BUILDER(Name("AssignVariableOp").Device(kDeviceCpu), AssignVariableOp);
REGISTER_KERNEL_BUILDER(Name("VarIsInitializedOp").Device(kDeviceCpu), VarIsInitializedOp);
REGISTER_KERNEL_BUILDER(Name("DestroyResourceOp").Device(kDeviceCpu), DestroyResourceOp);
REGISTER_KERNEL_BUILDER(Name("VariableShape").Device(kDeviceCpu), VariableShapeOp);
REGISTER_KERNEL_BUILDER(Name("ResourceGather").Device(kDeviceCpu), ResourceGatherOp);
#define SLUICE_REGISTER_ASSIGN_UPDATE_(T)                                                  \
  REGISTER_KERNEL_BUILDER(Name("AssignAddVariableOp").Device(kDeviceCpu).TypeConstraint<T>("dtype"), \
                          AssignUpdateVariableOp<T, true>);                                \
  REGISTER_KERNEL_BUILDER(Name("AssignSubVariableOp").Device(kDeviceCpu).TypeConstraint<T>("dtype"), \
                          AssignUpdateVariableOp<T, false>)
SLUICE_REGISTER_ASSIGN_UPDATE_(float);
SLUICE_REGISTER_ASSIGN_UPDATE_(double);
SLUICE_REGISTER_ASSIGN_UPDATE_(half);
SLUICE_REGISTER_ASSIGN_UPDATE_(bfloat16);
SLUICE_REGISTER_ASSIGN_UPDATE_(int8_t);
SLUICE_REGISTER_ASSIGN_UPDATE_(int16_t);
SLUICE_REGISTER_ASSIGN_UPDATE_(int32_t);
SLUICE_REGISTER_ASSIGN_UPDATE_(int64_t);
SLUICE_REGISTER_ASSIGN_UPDATE_(uint8_t);
SLUICE_REGISTER_ASSIGN_UPDATE_(uint16_t);
SLUICE_REGISTER_ASSIGN_UPDATE_(complex64);
#undef SLUICE_REGISTER_ASSIGN_UPDATE_

}  // namespace
}  // namespace sluice
