// ConditionalAccumulator: the gradient store of synchronous replication
// (TensorFlow's ConditionalAccumulator; OSDI §4.4, Figure 8). Workers apply
// gradients tagged with the global step they were computed at; a gradient
// older than the accumulator's step is stale: it is dropped and counted. The
// chief takes the average (or sum) once at least `num_required` gradients are
// in; taking resets the sum and advances the accumulator's step by one, so
// gradients still arriving for the step just taken become stale (the backup
// workers' gradients of Figure 8).
//
// The sum adds gradients in arrival order, starting from a copy of the first
// (so two gradients sum to exactly a + b in either order).
//
// A sparse accumulator (CreateSparse; TensorFlow's
// SparseConditionalAccumulator) takes gradients as rows: `indices` (int64
// [n]) and `values` [n, row...] of a [rows, row...] variable, as an embedding
// lookup's IndexedSlices. It keeps one summed row per index; a take returns
// the indices in increasing order and their rows, divided for the mean by the
// number of gradients taken, as the dense sum would be (a row that a
// gradient lacks counts as zeros there; TensorFlow's divides each row by how
// many gradients held it instead). Nothing is proportional to the variable's
// rows.
//
// Ownership: lives in a device's ResourceMgr, shared by every graph that names
// it. Thread safety: all methods may be called concurrently.
#ifndef SLUICE_MODELS_REPLICATION_CONDITIONAL_ACCUMULATOR_H_
#define SLUICE_MODELS_REPLICATION_CONDITIONAL_ACCUMULATOR_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/cancellation.h"
#include "engine/framework/resource_mgr.h"
#include "engine/framework/shape_inference.h"
#include "engine/framework/tensor.h"

namespace sluice {

class ConditionalAccumulator : public ResourceBase, public std::enable_shared_from_this<ConditionalAccumulator> {
 public:
  enum class Reduction { kMean, kSum };
  using TakeCallback = std::function<void(const absl::Status&, Tensor)>;
  using SparseTakeCallback = std::function<void(const absl::Status&, Tensor indices, Tensor values)>;

  // `dtype` is DT_FLOAT or DT_DOUBLE (Create checks); `shape` may be partial.
  static absl::StatusOr<std::shared_ptr<ConditionalAccumulator>> Create(std::string name, DataType dtype,
                                                                        PartialShape shape, Reduction reduction);
  // The sparse form (see above); `shape` is the variable's (rank >= 1).
  static absl::StatusOr<std::shared_ptr<ConditionalAccumulator>> CreateSparse(std::string name, DataType dtype,
                                                                              PartialShape shape, Reduction reduction);
  ~ConditionalAccumulator() override;
  bool sparse() const { return sparse_; }
  // The variable's rows (the shape's first dim), -1 when unknown.
  int64_t rows() const { return shape_.rank_known() && shape_.rank() > 0 ? shape_.dim(0) : -1; }

  // Adds `gradient` computed at `local_step`, or drops it when local_step is
  // below the accumulator's step. InvalidArgument for a dtype or shape that
  // does not match (the declared shape, and the first gradient's).
  absl::Status ApplyGradient(int64_t local_step, const Tensor& gradient);
  // Calls `done` with the reduced gradient once at least `num_required` (>= 1)
  // are accumulated, then resets and advances the step. Cancelled (through
  // `cm`, may be null) when the step that waits aborts; Cancelled when the
  // accumulator is destroyed first.
  void TryTakeGradient(int32_t num_required, CancellationManager* cm, TakeCallback done);
  // The sparse forms: rows `indices` of the gradient are `values`. Repeated
  // indices add up. InvalidArgument on a dense accumulator (and the dense
  // forms on a sparse one), for indices that are not an int64 vector or out
  // of the variable's rows, and values whose rows do not match the shape.
  absl::Status ApplySparseGradient(int64_t local_step, const Tensor& indices, const Tensor& values);
  void TryTakeSparseGradient(int32_t num_required, CancellationManager* cm, SparseTakeCallback done);
  // Sets the step (the chief, after initializing or restoring the global
  // step). Gradients accumulated so far are kept when they were computed at
  // exactly `step` (a worker that started first), else dropped as stale (a
  // restore went back to an older step).
  void SetGlobalStep(int64_t step);

  int32_t num_accumulated() const;
  int64_t global_step() const;
  // Gradients dropped as stale since creation.
  int64_t num_stale() const;
  // How many gradients the last take averaged (0 before the first).
  int32_t last_taken() const;
  const std::string& name() const { return name_; }
  DataType dtype() const { return dtype_; }
  std::string DebugString() const override;

 private:
  struct Taker {
    int64_t id = 0;
    int32_t num_required = 0;
    TakeCallback done;  // or, for a sparse accumulator:
    SparseTakeCallback sparse_done;
    CancellationManager* cm = nullptr;
    CancellationManager::Token token = 0;
    bool registered = false;
  };
  ConditionalAccumulator(std::string name, DataType dtype, PartialShape shape, Reduction reduction, bool sparse);
  // Queues a taker (and serves it when it can be).
  void AddTaker(std::shared_ptr<Taker> taker);
  // Tells a taker that it gets nothing.
  static void Fail(Taker& taker, const absl::Status& status);
  // The gradient the sum (or the sparse rows) makes, reduced; resets the sum.
  void TakeSparseLocked(Tensor* indices, Tensor* values) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands the sum to the first taker when enough gradients are in; appends
  // the callbacks to run after the lock is released.
  void ServeTakersLocked(std::vector<std::function<void()>>* ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Cancel(int64_t id);

  const std::string name_;
  const DataType dtype_;
  const PartialShape shape_;
  const Reduction reduction_;
  const bool sparse_;
  mutable absl::Mutex mu_;
  Tensor sum_ ABSL_GUARDED_BY(mu_);
  // Sparse: the summed row of each index (each element rounded to dtype
  // after every addition, so the sum is dtype's), and the rows' shape.
  std::map<int64_t, std::vector<double>> rows_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> row_dims_ ABSL_GUARDED_BY(mu_);
  int32_t count_ ABSL_GUARDED_BY(mu_) = 0;
  // The lowest and highest local step among the gradients in sum_.
  int64_t sum_min_step_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t sum_max_step_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t step_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t stale_ ABSL_GUARDED_BY(mu_) = 0;
  int32_t last_taken_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_taker_ ABSL_GUARDED_BY(mu_) = 1;
  std::deque<std::shared_ptr<Taker>> takers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice

#endif  // SLUICE_MODELS_REPLICATION_CONDITIONAL_ACCUMULATOR_H_
