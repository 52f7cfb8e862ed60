// Host-side checks shared by the CPU (engine/kernels/training_ops.cc) and GPU
// (engine/kernels/gpu/training_ops.cc) kernels of the training ops: locking
// the variables' mutexes and validating the ref, dense and scalar inputs with
// one set of error messages. Device-neutral: no CUDA, no Eigen.
// TrainingVars lets one kernel serve both Apply* (variables as ref inputs)
// and ResourceApply* (variables behind resource handles).
// Thread safety: RefInputLocks and TrainingVars hold the variables' mutexes
// for their lifetime; CheckTrainingInputs REQUIRES those locks held.
#ifndef SLUICE_ENGINE_KERNELS_TRAINING_OPS_UTIL_H_
#define SLUICE_ENGINE_KERNELS_TRAINING_OPS_UTIL_H_

#include <algorithm>
#include <initializer_list>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/resource_variable_util.h"

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

// The variables of a training kernel, inputs [0, count): references
// (Apply*: the ref inputs' tensors and mutexes) or resource handles
// (ResourceApply*: the variables they name, which must hold `dtype`). Locks
// the distinct mutexes in address order for its lifetime; in resource mode it
// then checks every variable is initialized and gives it a buffer of its own
// if a reader shares it (copy-on-write), so var(i) may be updated in place.
class TrainingVars {
 public:
  TrainingVars(OpKernelContext* ctx, int count, bool resource, DataType dtype);
  ~TrainingVars();
  TrainingVars(const TrainingVars&) = delete;
  TrainingVars& operator=(const TrainingVars&) = delete;

  // Not OK when a handle names no variable, one of another dtype, or an
  // uninitialized one. Then var() must not be called.
  const absl::Status& status() const { return status_; }
  int count() const { return static_cast<int>(tensors_.size()); }
  Tensor* var(int i) const { return tensors_[i]; }
  template <typename T>
  T* data(int i) const {
    return tensors_[i]->data<T>();
  }

 private:
  absl::Status status_;
  absl::InlinedVector<Tensor*, 3> tensors_;
  absl::InlinedVector<std::shared_ptr<ResourceVariable>, 3> held_;
  absl::InlinedVector<absl::Mutex*, 3> mus_;
};

// As CheckTrainingInputs above, for the variables `vars` holds (ref or
// resource alike). REQUIRES: vars.status() OK.
absl::Status CheckTrainingInputs(OpKernelContext* ctx, const TrainingVars& vars, std::initializer_list<int> dense,
                                 std::initializer_list<int> scalars);

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_TRAINING_OPS_UTIL_H_
