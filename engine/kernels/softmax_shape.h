// Host-side shape checks, output allocation and label checks of Softmax,
// LogSoftmax, SoftmaxCrossEntropyWithLogits and
// SparseSoftmaxCrossEntropyWithLogits, shared by the CPU kernels
// (softmax_op.cc, xent_op.cc) and the GPU kernels (gpu/softmax_ops.cc): one
// set of error messages. Device-neutral (no CUDA, no Eigen).
// Thread safety: functions of their arguments and the kernel's context.
#ifndef SLUICE_ENGINE_KERNELS_SOFTMAX_SHAPE_H_
#define SLUICE_ENGINE_KERNELS_SOFTMAX_SHAPE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"

namespace sluice {

// Softmax/LogSoftmax over the last dimension of input 0 (rank >= 1):
// allocates output 0 of the input's shape; *rows is 0 when the input is empty
// (then *depth may be 0 too), else rows * depth == NumElements.
absl::Status PrepareSoftmax(OpKernelContext* ctx, Tensor** out, int64_t* rows, int64_t* depth);

// The cross-entropies: logits (input 0) [batch, classes], labels (input 1)
// of the logits' shape (dense) or [batch] (sparse), at least one class when
// batch > 0. Allocates loss (output 0, [batch]) and backprop (output 1, the
// logits' shape).
absl::Status PrepareXent(OpKernelContext* ctx, bool sparse, Tensor** loss, Tensor** backprop);

// InvalidArgument unless every sparse label is in [0, depth).
template <typename Index>
absl::Status CheckXentLabels(const Index* labels, int64_t batch, int64_t depth) {
  for (int64_t r = 0; r < batch; ++r) {
    if (labels[r] < 0 || static_cast<int64_t>(labels[r]) >= depth) {
      return absl::InvalidArgumentError(absl::StrCat("Received a label value of ", labels[r],
                                                     " which is outside the valid range of [0, ", depth, ") (row ", r,
                                                     ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_SOFTMAX_SHAPE_H_
