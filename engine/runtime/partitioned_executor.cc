// PartitionedExecutor (see partitioned_executor.h).
#include "engine/runtime/partitioned_executor.h"

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/cancellation.h"

namespace sluice {

int PartitionedExecutor::num_nodes() const {
  int n = 0;
  for (const DevicePartition& p : partitions_) n += p.executor->num_nodes();
  return n;
}

absl::Status PartitionedExecutor::Run(const Executor::Args& args, std::vector<DeviceStepStats>* stats) const {
  const size_t n = partitions_.size();
  CancellationManager cancellation;
  std::vector<StepStatsCollector> collectors(stats != nullptr ? n : 0);
  std::vector<absl::Status> statuses(n);
  absl::BlockingCounter pending(static_cast<int>(n));
  for (size_t i = 0; i < n; ++i) {
    Executor::Args device_args = args;
    device_args.cancellation_manager = &cancellation;
    device_args.stats_collector = stats != nullptr ? &collectors[i] : nullptr;
    partitions_[i].executor->RunAsync(device_args, [&statuses, &pending, i](const absl::Status& s) {
      statuses[i] = s;
      pending.DecrementCount();
    });
  }
  pending.Wait();
  if (stats != nullptr) {
    stats->clear();
    for (size_t i = 0; i < n; ++i) stats->push_back({partitions_[i].device->name(), collectors[i].Take()});
  }
  // The root cause: other devices report it too (through the rendezvous) or
  // report a Cancelled of their own.
  absl::Status first_error;
  for (const absl::Status& s : statuses) {
    if (s.ok()) continue;
    if (!absl::IsCancelled(s)) return s;
    if (first_error.ok()) first_error = s;
  }
  return first_error;
}

}  // namespace sluice
