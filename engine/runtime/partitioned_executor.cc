// PartitionedExecutor (see partitioned_executor.h).
#include "engine/runtime/partitioned_executor.h"

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "engine/framework/cancellation.h"

namespace sluice {

int PartitionedExecutor::num_nodes() const {
  int n = 0;
  for (const DevicePartition& p : partitions_) n += p.executor->num_nodes();
  return n;
}

namespace {
// One step's shared state across the partitions' executors.
struct StepState {
  CancellationManager cancellation;
  std::unique_ptr<StepStatsCollector[]> collectors;  // one per partition, with stats only
  std::vector<absl::Status> statuses;
  absl::Mutex mu;
  size_t pending = 0;
  std::vector<DeviceStepStats>* stats = nullptr;
  std::function<void(const absl::Status&)> done;
};
}  // namespace

absl::Status PartitionedExecutor::Run(const Executor::Args& args, std::vector<DeviceStepStats>* stats) const {
  absl::Notification finished;
  absl::Status result;
  RunAsync(args, stats, [&](const absl::Status& s) {
    result = s;
    finished.Notify();
  });
  finished.WaitForNotification();
  return result;
}

void PartitionedExecutor::RunAsync(const Executor::Args& args, std::vector<DeviceStepStats>* stats,
                                   std::function<void(const absl::Status&)> done) const {
  const size_t n = partitions_.size();
  if (n == 0) {
    if (stats != nullptr) stats->clear();
    done(absl::OkStatus());
    return;
  }
  auto state = std::make_shared<StepState>();
  if (stats != nullptr) state->collectors = std::make_unique<StepStatsCollector[]>(n);
  state->statuses.resize(n);
  state->pending = n;
  state->stats = stats;
  state->done = std::move(done);
  // The caller's cancellation cancels this step's (unlinked when it ends).
  CancellationManager* parent = args.cancellation_manager;
  CancellationManager::Token parent_token = 0;
  if (parent != nullptr) {
    parent_token = parent->NewToken();
    if (!parent->RegisterCallback(parent_token, [state] { state->cancellation.StartCancel(); })) {
      state->cancellation.StartCancel();
      parent = nullptr;
    }
  }
  if (parent != nullptr) {
    state->done = [parent, parent_token, done = std::move(state->done)](const absl::Status& s) {
      parent->DeregisterCallback(parent_token);
      done(s);
    };
  }
  for (size_t i = 0; i < n; ++i) {
    Executor::Args device_args = args;
    device_args.cancellation_manager = &state->cancellation;
    device_args.stats_collector = stats != nullptr ? &state->collectors[i] : nullptr;
    partitions_[i].executor->RunAsync(device_args, [this, state, i](const absl::Status& s) {
      {
        absl::MutexLock lock(&state->mu);
        state->statuses[i] = s;
        if (--state->pending > 0) return;
      }
      if (state->stats != nullptr) {
        state->stats->clear();
        for (size_t j = 0; j < partitions_.size(); ++j) {
          state->stats->push_back({partitions_[j].device->name(), state->collectors[j].Take()});
        }
      }
      // The root cause: other devices report it too (through the rendezvous) or
      // report a Cancelled of their own.
      absl::Status first_error;
      for (const absl::Status& st : state->statuses) {
        if (st.ok()) continue;
        if (!absl::IsCancelled(st)) {
          first_error = st;
          break;
        }
        if (first_error.ok()) first_error = st;
      }
      state->done(first_error);
    });
  }
}

}  // namespace sluice
