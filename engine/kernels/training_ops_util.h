// Host-side checks shared by the CPU (engine/kernels/training_ops.cc) and GPU
// (engine/kernels/gpu/training_ops.cc) kernels of the training ops: locking
// the variables' mutexes and validating the ref, dense and scalar inputs with
// one set of error messages. Device-neutral: no CUDA, no Eigen.
// Thread safety: RefInputLocks holds the ref inputs' mutexes for its lifetime;
// CheckTrainingInputs REQUIRES those locks held.
#ifndef SLUICE_ENGINE_KERNELS_TRAINING_OPS_UTIL_H_
#define SLUICE_ENGINE_KERNELS_TRAINING_OPS_UTIL_H_

#include <algorithm>
#include <initializer_list>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/op_kernel.h"

namespace sluice {

// Locks the distinct mutexes of ref inputs [0, count) in address order (so
// two kernels sharing variables cannot deadlock); unlocks them on destruction.
class RefInputLocks {
 public:
  RefInputLocks(OpKernelContext* ctx, int count) {
    for (int i = 0; i < count; ++i) {
      absl::Mutex* mu = ctx->input_ref_mutex(i);
      if (mu != nullptr && std::find(mus_.begin(), mus_.end(), mu) == mus_.end()) mus_.push_back(mu);
    }
    std::sort(mus_.begin(), mus_.end());
    for (absl::Mutex* mu : mus_) mu->Lock();
  }
  ~RefInputLocks() {
    for (auto it = mus_.rbegin(); it != mus_.rend(); ++it) (*it)->Unlock();
  }
  RefInputLocks(const RefInputLocks&) = delete;
  RefInputLocks& operator=(const RefInputLocks&) = delete;

 private:
  absl::InlinedVector<absl::Mutex*, 3> mus_;
};

// Checks the ref inputs [0, num_refs) are initialized and all of the same
// shape, that `dense` inputs have the variable's shape and `scalars` are
// scalars. REQUIRES: the ref inputs' locks held (RefInputLocks).
absl::Status CheckTrainingInputs(OpKernelContext* ctx, int num_refs, std::initializer_list<int> dense,
                                 std::initializer_list<int> scalars);

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_TRAINING_OPS_UTIL_H_
