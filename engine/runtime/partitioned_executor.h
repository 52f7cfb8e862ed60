// PartitionedExecutor: one step of a graph placed on several devices, run as
// one executor per device (whitepaper §3.2.2). The executors share the step's
// rendezvous (their Send/Recv pairs meet there) and one cancellation manager:
// the first error on any device aborts the rendezvous with that error, so the
// other devices' pending Recvs fail with it and their ready nodes stop; the
// step ends when every device's executor has finished, never earlier (the
// caller's rendezvous must outlive all of them).
//
// Ownership: owns the executors; borrows the devices. Thread safety: Run may
// be called concurrently (concurrent steps).
#ifndef SLUICE_ENGINE_RUNTIME_PARTITIONED_EXECUTOR_H_
#define SLUICE_ENGINE_RUNTIME_PARTITIONED_EXECUTOR_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "engine/framework/device.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/step_stats.h"

namespace sluice {

struct DevicePartition {
  Device* device = nullptr;
  std::unique_ptr<Executor> executor;
};

class PartitionedExecutor {
 public:
  explicit PartitionedExecutor(std::vector<DevicePartition> partitions) : partitions_(std::move(partitions)) {}

  // Runs one step on every partition with args.step_id and args.rendezvous
  // (REQUIRED). The step makes its own cancellation manager; when
  // args.cancellation_manager is set, cancelling it cancels the step (its
  // waiting async kernels end Cancelled). args.stats_collector is ignored.
  // Returns the error that caused an abort
  // (the first error that is not a Cancelled one derived from it).
  // `stats`: when not null, one entry per device.
  absl::Status Run(const Executor::Args& args, std::vector<DeviceStepStats>* stats) const;
  // The same without blocking: `done` runs once, on some thread, after every
  // partition finished (then `stats`, when not null, is filled in). `args`'s
  // rendezvous and `stats` must outlive `done`.
  void RunAsync(const Executor::Args& args, std::vector<DeviceStepStats>* stats,
                std::function<void(const absl::Status&)> done) const;

  int num_partitions() const { return static_cast<int>(partitions_.size()); }
  // Nodes over all partitions.
  int num_nodes() const;

 private:
  std::vector<DevicePartition> partitions_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_RUNTIME_PARTITIONED_EXECUTOR_H_
