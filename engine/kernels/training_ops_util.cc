// See training_ops_util.h.
#include "engine/kernels/training_ops_util.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"

namespace sluice {

namespace {

// Shapes of the variables (all initialized, all alike), the dense inputs (the
// variable's shape) and the scalar inputs.
absl::Status CheckShapes(OpKernelContext* ctx, absl::Span<Tensor* const> vars, std::initializer_list<int> dense,
                         std::initializer_list<int> scalars) {
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!vars[i]->IsInitialized()) {
      return absl::FailedPreconditionError(absl::StrCat("Attempting to use uninitialized value in input ", i));
    }
    if (vars[i]->shape() != vars[0]->shape()) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " has shape ", vars[i]->shape().DebugString(),
                                                     " but the variable has shape ",
                                                     vars[0]->shape().DebugString()));
    }
  }
  for (int i : dense) {
    if (ctx->input(i).shape() != vars[0]->shape()) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " has shape ", ctx->input(i).shape().DebugString(),
                                                     " but the variable has shape ", vars[0]->shape().DebugString()));
    }
  }
  for (int i : scalars) {
    if (ctx->input(i).dims() != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, " must be a scalar, got shape ", ctx->input(i).shape().DebugString()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckTrainingInputs(OpKernelContext* ctx, int num_refs, std::initializer_list<int> dense,
                                 std::initializer_list<int> scalars) {
  absl::InlinedVector<Tensor*, 3> vars;
  for (int i = 0; i < num_refs; ++i) {
    if (!ctx->input_is_ref(i)) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " must be a variable reference"));
    }
    vars.push_back(ctx->mutable_input(i));
  }
  return CheckShapes(ctx, vars, dense, scalars);
}

absl::Status CheckTrainingInputs(OpKernelContext* ctx, const TrainingVars& vars, std::initializer_list<int> dense,
                                 std::initializer_list<int> scalars) {
  absl::InlinedVector<Tensor*, 3> tensors;
  for (int i = 0; i < vars.count(); ++i) tensors.push_back(vars.var(i));
  return CheckShapes(ctx, tensors, dense, scalars);
}

TrainingVars::TrainingVars(OpKernelContext* ctx, int count, bool resource, DataType dtype) {
  for (int i = 0; i < count; ++i) {
    absl::Mutex* mu = nullptr;
    if (resource) {
      auto var = LookupResourceVariable(ctx, i, dtype);
      if (!var.ok()) {
        status_ = var.status();
        tensors_.clear();
        return;
      }
      mu = (*var)->mu();
      tensors_.push_back((*var)->tensor());
      held_.push_back(*std::move(var));
    } else {
      if (!ctx->input_is_ref(i)) {
        status_ = absl::InvalidArgumentError(absl::StrCat("input ", i, " must be a variable reference"));
        tensors_.clear();
        return;
      }
      mu = ctx->input_ref_mutex(i);
      tensors_.push_back(ctx->mutable_input(i));
    }
    if (mu != nullptr && std::find(mus_.begin(), mus_.end(), mu) == mus_.end()) mus_.push_back(mu);
  }
  std::sort(mus_.begin(), mus_.end());
  for (absl::Mutex* mu : mus_) mu->Lock();
  if (!resource) return;
  for (int i = 0; i < count; ++i) {
    status_ = CheckInitialized(held_[i].get(), ctx->input(i).data<ResourceHandle>()[0]);
    if (!status_.ok()) return;
  }
  for (Tensor* t : tensors_) PrepareToUpdate(t);
}

TrainingVars::~TrainingVars() {
  for (auto it = mus_.rbegin(); it != mus_.rend(); ++it) (*it)->Unlock();
}

}  // namespace sluice
