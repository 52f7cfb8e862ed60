// Executor: runs one device's graph, step after step (whitepaper §3.1, §4.4).
// Per-node pending counts decide when a node is ready; ready nodes go to the
// inter-op pool, except cheap ones, which run inline on the thread that made
// them ready (cheap: the kernel says so, or its last run took under 20 us, so
// chains of scalar shape arithmetic do not hop between threads); async kernels (Recv, Dequeue) return at once and continue in a
// `done` continuation, so a waiting kernel never holds a thread. Loops run in
// frames whose iterations are tagged, and up to `parallel_iterations`
// iterations of a loop run at once. The first error aborts the step: the
// rendezvous and the cancellation manager are aborted so pending async work
// finishes, and `done` gets that error naming the node.
//
// Ownership: the Executor owns the kernels of its graph. Thread safety:
// RunAsync may be called concurrently (concurrent steps); each step has its
// own state.
#ifndef SLUICE_ENGINE_RUNTIME_EXECUTOR_H_
#define SLUICE_ENGINE_RUNTIME_EXECUTOR_H_

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "engine/framework/cancellation.h"
#include "engine/framework/device.h"
#include "engine/framework/rendezvous.h"
#include "engine/graph/graph.h"
#include "engine/runtime/step_stats.h"

namespace sluice {

struct ExecutorParams {
  Device* device = nullptr;
  // Runs a closure on the inter-op pool.
  std::function<void(std::function<void()>)> runner;
};

class Executor {
 public:
  struct Args {
    int64_t step_id = 0;
    Rendezvous* rendezvous = nullptr;
    // Optional; the executor makes one per step when null.
    CancellationManager* cancellation_manager = nullptr;
    // Optional: records every executed node.
    StepStatsCollector* stats_collector = nullptr;
    // With stats_collector: each synchronous kernel's record ends after its
    // device's Synchronize() (RunOptions::step_stats_device_time).
    bool stats_include_device_time = false;
  };
  using DoneCallback = std::function<void(const absl::Status&)>;

  virtual ~Executor() = default;
  // `done` runs exactly once, on some thread, when the step is over.
  virtual void RunAsync(const Args& args, DoneCallback done) const = 0;
  // Blocking form of RunAsync.
  absl::Status Run(const Args& args) const;
  // Number of nodes in the executor's graph.
  virtual int num_nodes() const = 0;
};

// Builds kernels for every node of `graph` (which must be valid: see
// ConvertGraphDefToGraph) and the frame layout. Errors name the node: a missing
// kernel, a kernel constructor's error, a bad frame.
absl::StatusOr<std::unique_ptr<Executor>> NewLocalExecutor(const ExecutorParams& params,
                                                           std::unique_ptr<const Graph> graph);

}  // namespace sluice

#endif  // SLUICE_ENGINE_RUNTIME_EXECUTOR_H_
