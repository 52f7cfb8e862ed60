// StepStatsCollector: optional per-node records of one step (start and end
// time, thread), for tests, tracing and the cost model. Collection costs a
// clock read and a short lock per node; executors skip it when no collector is
// given. Thread safety: Record may be called concurrently.
#ifndef SLUICE_ENGINE_RUNTIME_STEP_STATS_H_
#define SLUICE_ENGINE_RUNTIME_STEP_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace sluice {

struct NodeExecStats {
  std::string node_name;
  std::string op;
  int64_t frame_id = 0;
  int64_t iter_id = 0;
  int64_t start_ns = 0;  // steady clock
  int64_t end_ns = 0;
  uint64_t thread_id = 0;
};

// One device's records of a step (a step placed on several devices has one each).
struct DeviceStepStats {
  std::string device;
  std::vector<NodeExecStats> nodes;
};

class StepStatsCollector {
 public:
  void Record(NodeExecStats stats);
  // In the order they were recorded (completion order).
  std::vector<NodeExecStats> Take();

 private:
  absl::Mutex mu_;
  std::vector<NodeExecStats> stats_ ABSL_GUARDED_BY(mu_);
};

// Monotonic nanoseconds for stats.
int64_t NowNanos();
// A small stable id for the calling thread.
uint64_t CurrentThreadId();

}  // namespace sluice

#endif  // SLUICE_ENGINE_RUNTIME_STEP_STATS_H_
