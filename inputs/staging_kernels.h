// The kernels of Stage and Unstage (staging_ops.cc) and the StagingArea they
// share, for every device type: they only hold references to tensors, never
// touch their bytes, so the same code serves the CPU (staging_kernels.cc
// registers it) and a GPU (gpu/staging_ops_gpu.cc), where the staged tensors
// are device buffers filled by the _Recv copies of the Run that staged them.
// A staged tuple may carry a fence: what its Unstage does before handing the
// values on. On a GPU the Stage marks the staged batches' copy stream, so the
// Unstage makes the compute stream wait for the tuple's copies there, and the
// staging Run's _Recv kernels need not put their copies into the compute
// stream's order in the middle of the step beside them (the partitioner tells
// them so: kOrdersItsInputCopiesAttr, engine/framework/op_kernel.h).
// Thread safety: a StagingArea may be used by concurrent Runs (its mutex).
#ifndef SLUICE_INPUTS_STAGING_KERNELS_H_
#define SLUICE_INPUTS_STAGING_KERNELS_H_

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/resource_mgr.h"
#include "inputs/resource_handle.h"

namespace sluice {

// What the consumer of a staged tuple does before using it (see above);
// empty: nothing.
using StagedTupleFence = std::function<absl::Status(OpKernelContext*)>;

struct StagedTuple {
  std::vector<Tensor> values;
  StagedTupleFence before_use;
};

// A FIFO of tensor tuples of fixed dtypes, at most `capacity` of them.
class StagingArea : public ResourceBase {
 public:
  StagingArea(std::string name, DataTypeVector dtypes, int64_t capacity)
      : name_(std::move(name)), dtypes_(std::move(dtypes)), capacity_(capacity) {}

  // Errors: a tuple of other dtypes or length (InvalidArgument), a full area
  // (FailedPrecondition: nothing unstaged since the last `capacity` Stages).
  absl::Status Put(std::vector<Tensor> values, StagedTupleFence before_use = nullptr);
  // The oldest tuple. Errors: an empty area (FailedPrecondition: a step that
  // unstages ran before the Run that stages its batch).
  absl::StatusOr<StagedTuple> Take();
  // Errors: a Stage or Unstage node (named in the message unless `node` is
  // empty) that declares other dtypes than the node that created the area.
  absl::Status CheckDtypes(const DataTypeVector& dtypes, const std::string& node) const;
  int64_t size() const;
  std::string DebugString() const override;

 private:
  const std::string name_;
  const DataTypeVector dtypes_;
  const int64_t capacity_;
  mutable absl::Mutex mu_;
  std::deque<StagedTuple> tuples_ ABSL_GUARDED_BY(mu_);
};

// Shared by both ops: the area named by the node's container and shared_name
// (required: the Stage and the Unstage of one area are different nodes). The
// Stage creates it, with its `capacity`; an Unstage only looks it up.
class StagingOpBase : public OpKernel {
 public:
  explicit StagingOpBase(OpKernelConstruction* ctx);

 protected:
  // The area, created when `create` (a Stage), else looked up: an Unstage
  // before any Stage finds it missing (FailedPrecondition, as if empty).
  absl::StatusOr<std::shared_ptr<StagingArea>> Area(OpKernelContext* ctx, bool create) const;
  ResourceName rn_;
  DataTypeVector dtypes_;
  int64_t capacity_ = 2;
  std::vector<PartialShape> shapes_;  // Unstage's `shapes` attr; empty: unchecked
};

class StageOp : public StagingOpBase {
 public:
  using StagingOpBase::StagingOpBase;
  void Compute(OpKernelContext* ctx) override;
  bool IsExpensive() const override { return false; }

 protected:
  // The fence of the tuple this Compute stages (a GPU's Stage overrides it);
  // empty by default.
  virtual absl::StatusOr<StagedTupleFence> Fence(OpKernelContext* ctx) { return StagedTupleFence(); }
};

class UnstageOp : public StagingOpBase {
 public:
  using StagingOpBase::StagingOpBase;
  void Compute(OpKernelContext* ctx) override;
  bool IsExpensive() const override { return false; }
};

}  // namespace sluice

#endif  // SLUICE_INPUTS_STAGING_KERNELS_H_
