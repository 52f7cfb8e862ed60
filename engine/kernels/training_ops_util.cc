// See training_ops_util.h.
#include "engine/kernels/training_ops_util.h"

#include "absl/strings/str_cat.h"

namespace sluice {

absl::Status CheckTrainingInputs(OpKernelContext* ctx, int num_refs, std::initializer_list<int> dense,
                                 std::initializer_list<int> scalars) {
  for (int i = 0; i < num_refs; ++i) {
    if (!ctx->input_is_ref(i)) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " must be a variable reference"));
    }
    if (!ctx->mutable_input(i)->IsInitialized()) {
      return absl::FailedPreconditionError(absl::StrCat("Attempting to use uninitialized value in input ", i));
    }
    if (ctx->mutable_input(i)->shape() != ctx->mutable_input(0)->shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, " has shape ", ctx->mutable_input(i)->shape().DebugString(),
                       " but the variable has shape ", ctx->mutable_input(0)->shape().DebugString()));
    }
  }
  for (int i : dense) {
    if (ctx->input(i).shape() != ctx->mutable_input(0)->shape()) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " has shape ", ctx->input(i).shape().DebugString(),
                                                     " but the variable has shape ",
                                                     ctx->mutable_input(0)->shape().DebugString()));
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

}  // namespace sluice
