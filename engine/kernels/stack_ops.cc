// CPU kernels for TensorFlow's StackV2/StackPushV2/StackPopV2/StackCloseV2
// (engine/ops/stack_ops.cc): the stacks TensorFlow's v1 while_loop gradients
// keep forward values in (pushed each forward iteration, popped in reverse by
// the backward loop). StackV2 makes a Stack in the step's container under a
// process-unique name; Push keeps a shallow copy of its input (the buffer is
// shared, so nothing downstream reuses it in place) and outputs the input;
// Pop removes and outputs the top. Pushing the wrong dtype, pushing beyond
// max_size (max_size < 0: unbounded), popping an empty stack and using a
// closed stack are InvalidArgument naming the stack. swap_memory is accepted
// and ignored (values stay in host memory).
// Thread safety: Compute is safe to run concurrently; each stack has a mutex.
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/resource_mgr.h"
#include "engine/kernels/step_resource_util.h"

namespace sluice {
namespace {

class Stack : public ResourceBase {
 public:
  static constexpr char kTypeName[] = "Stack";
  Stack(std::string name, DataType elem_type, int64_t max_size)
      : name_(std::move(name)), elem_type_(elem_type), max_size_(max_size) {}

  std::string DebugString() const override { return absl::StrCat("Stack ", name_); }

  absl::Status Push(const Tensor& value) {
    absl::MutexLock lock(&mu_);
    if (closed_) return Closed();
    if (value.dtype() != elem_type_) {
      return absl::InvalidArgumentError(absl::StrCat("Stack[", name_, "]: pushing a ", DataTypeString(value.dtype()),
                                                     " tensor onto a stack of ", DataTypeString(elem_type_)));
    }
    if (max_size_ >= 0 && static_cast<int64_t>(elems_.size()) >= max_size_) {
      return absl::InvalidArgumentError(
          absl::StrCat("Stack[", name_, "] overflowed its max_size (", max_size_, ")"));
    }
    elems_.push_back(value);
    return absl::OkStatus();
  }

  absl::StatusOr<Tensor> Pop() {
    absl::MutexLock lock(&mu_);
    if (closed_) return Closed();
    if (elems_.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("Stack[", name_, "] is empty."));
    }
    Tensor top = std::move(elems_.back());
    elems_.pop_back();
    return top;
  }

  void Close() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    elems_.clear();
  }

  DataType elem_type() const { return elem_type_; }

 private:
  absl::Status Closed() const {
    return absl::InvalidArgumentError(absl::StrCat("Stack[", name_, "] has already been closed."));
  }

  const std::string name_;
  const DataType elem_type_;
  const int64_t max_size_;
  absl::Mutex mu_;
  std::vector<Tensor> elems_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

class StackOp : public OpKernel {
 public:
  explicit StackOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("elem_type", &elem_type_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("stack_name", &stack_name_));
    if (stack_name_.empty()) stack_name_ = ctx->def().name();
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& max_size = ctx->input(0);
    OP_REQUIRES(ctx, max_size.dims() == 0,
                absl::InvalidArgumentError(
                    absl::StrCat("max_size must be a scalar, got shape ", max_size.shape().DebugString())));
    auto container = StepContainerName(ctx);
    OP_REQUIRES_OK(ctx, container.status());
    static std::atomic<int64_t> counter{0};
    const std::string name = absl::StrCat(stack_name_, "_", counter.fetch_add(1, std::memory_order_relaxed));
    const DataType elem_type = elem_type_;
    const int64_t limit = max_size.data<int32_t>()[0];
    auto stack = ctx->resource_manager()->LookupOrCreate<Stack>(
        *container, name,
        [&]() -> absl::StatusOr<std::shared_ptr<Stack>> { return std::make_shared<Stack>(name, elem_type, limit); });
    OP_REQUIRES_OK(ctx, stack.status());
    OP_REQUIRES_OK(ctx, OutputStepHandle(ctx, 0, *container, name, Stack::kTypeName));
  }
  bool IsExpensive() const override { return false; }

 private:
  DataType elem_type_ = DT_INVALID;
  std::string stack_name_;
};

class StackPushOp : public OpKernel {
 public:
  explicit StackPushOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    bool swap_memory = false;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("swap_memory", &swap_memory));
  }
  void Compute(OpKernelContext* ctx) override {
    auto stack = LookupStepResource<Stack>(ctx, 0);
    OP_REQUIRES_OK(ctx, stack.status());
    OP_REQUIRES_OK(ctx, (*stack)->Push(ctx->input(1)));
    ctx->set_output(0, ctx->input(1));
  }
  bool IsExpensive() const override { return false; }
};

class StackPopOp : public OpKernel {
 public:
  explicit StackPopOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("elem_type", &elem_type_));
  }
  void Compute(OpKernelContext* ctx) override {
    auto stack = LookupStepResource<Stack>(ctx, 0);
    OP_REQUIRES_OK(ctx, stack.status());
    OP_REQUIRES(ctx, (*stack)->elem_type() == elem_type_,
                absl::InvalidArgumentError(absl::StrCat((*stack)->DebugString(), " holds ",
                                                        DataTypeString((*stack)->elem_type()), " but the node pops ",
                                                        DataTypeString(elem_type_))));
    auto top = (*stack)->Pop();
    OP_REQUIRES_OK(ctx, top.status());
    ctx->set_output(0, std::move(top).value());
  }
  bool IsExpensive() const override { return false; }

 private:
  DataType elem_type_ = DT_INVALID;
};

class StackCloseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto stack = LookupStepResource<Stack>(ctx, 0);
    OP_REQUIRES_OK(ctx, stack.status());
    (*stack)->Close();
  }
  bool IsExpensive() const override { return false; }
};

REGISTER_KERNEL_BUILDER(Name("StackV2").Device(kDeviceCpu), StackOp);
REGISTER_KERNEL_BUILDER(Name("StackPushV2").Device(kDeviceCpu), StackPushOp);
REGISTER_KERNEL_BUILDER(Name("StackPopV2").Device(kDeviceCpu), StackPopOp);
REGISTER_KERNEL_BUILDER(Name("StackCloseV2").Device(kDeviceCpu), StackCloseOp);

}  // namespace
}  // namespace sluice
