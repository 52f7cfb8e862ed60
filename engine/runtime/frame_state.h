// Per-step loop state (whitepaper §4.4): a FrameState is one execution of a
// loop frame (one per parent iteration that enters it); it holds a window of
// IterationStates, each with its own pending counts and input slots, so
// iterations of one loop run concurrently up to `parallel_iterations`.
// Entries are the values on edges: a tensor, or a reference to a variable.
// Thread safety: a FrameState's mutable fields are guarded by its `mu`, with
// two exceptions: a ready node reads and clears its own input slots without it
// (InputSlots), and the root frame of a graph without loops or Merges counts
// pending inputs in atomics (IterationState::atomic_pending), without it.
#ifndef SLUICE_ENGINE_RUNTIME_FRAME_STATE_H_
#define SLUICE_ENGINE_RUNTIME_FRAME_STATE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/tensor.h"
#include "engine/platform/logging.h"
#include "engine/runtime/executor_graph.h"

namespace sluice {

struct Entry {
  Tensor val;
  Tensor* ref = nullptr;
  absl::Mutex* ref_mu = nullptr;
  std::shared_ptr<ResourceBase> ref_owner;
  bool has_value = false;

  void Clear() {
    val = Tensor();
    ref = nullptr;
    ref_mu = nullptr;
    ref_owner.reset();
    has_value = false;
  }
};
using EntryVector = absl::InlinedVector<Entry, 2>;

struct PendingState {
  int pending = 0;
  int dead = 0;
  bool has_live = false;  // merges: a live data input arrived
};

// Pending counts of the root frame of a graph without loops or Merges
// (ExecutorGraph::lock_free_root), one word per node: inputs still to come
// in the low 32 bits, dead inputs that came in the high 32. An arriving edge
// is one atomic add: -1, or kDeadArrival for a dead one.
constexpr uint64_t kPendingMask = 0xffffffffu;
constexpr uint64_t kDeadArrival = (uint64_t{1} << 32) - 1;

struct IterationState {
  // `lock_free`: count in `atomic_pending` instead of `pending`.
  explicit IterationState(const FrameInfo& info, bool lock_free = false)
      : inputs(info.total_inputs), pending(info.pending_init.size()) {
    for (size_t i = 0; i < pending.size(); ++i) pending[i].pending = info.pending_init[i].pending;
    if (lock_free) {
      atomic_pending = std::make_unique<std::atomic<uint64_t>[]>(pending.size());
      for (size_t i = 0; i < pending.size(); ++i) atomic_pending[i].store(info.pending_init[i].pending);
    }
  }
  std::vector<Entry> inputs;
  std::vector<PendingState> pending;
  // Set only for the root frame of a lock_free_root graph; then `pending`
  // is unused. Slots are written before the add that counts their edge, and
  // read after the add that found the node ready (acquire-release).
  std::unique_ptr<std::atomic<uint64_t>[]> atomic_pending;
  int outstanding_ops = 0;
  int outstanding_frame_count = 0;
};

// Makes a used IterationState of `info` as new: values left in its input
// slots (a dead Merge input, an aborted step) dropped, pending counts back
// at their initial values. Cheaper than a new one: only slots holding a
// value are written. `slots_clear`: the step that used it ended without an
// error, so every node that had a value stored for it ran and cleared its own
// slots (Process does, dead or alive), and the scan of the slots (120 bytes
// each: ~2% of a step of 10,000 trivial nodes) is skipped.
inline void ResetIterationState(const FrameInfo& info, IterationState* state, bool slots_clear = false) {
  if (!slots_clear) {
    for (Entry& e : state->inputs) {
      if (e.has_value) e.Clear();
    }
  }
#ifndef NDEBUG
  for (const Entry& e : state->inputs) CHECK(!e.has_value) << "an input slot kept its value after a clean step";
#endif
  if (state->atomic_pending != nullptr) {
    // `pending` is unused then (see atomic_pending).
    for (size_t i = 0; i < state->pending.size(); ++i) {
      state->atomic_pending[i].store(info.pending_init[i].pending, std::memory_order_relaxed);
    }
  } else {
    for (size_t i = 0; i < state->pending.size(); ++i) state->pending[i] = PendingState{info.pending_init[i].pending};
  }
  state->outstanding_ops = 0;
  state->outstanding_frame_count = 0;
}

struct FrameState;

// A node ready to run in (frame, iter); dead nodes skip their kernel.
struct TaggedNode {
  const NodeItem* item = nullptr;
  FrameState* frame = nullptr;
  int64_t iter = 0;
  bool is_dead = false;
};
using TaggedNodeVector = absl::InlinedVector<TaggedNode, 8>;

struct FrameState {
  // `first`: iteration 0's state, fresh or reset (see ResetIterationState);
  // null makes one.
  FrameState(const FrameInfo* info, std::string instance_name, int64_t frame_id, FrameState* parent,
             int64_t parent_iter, int max_parallel_iterations, std::unique_ptr<IterationState> first = nullptr)
      : info(info),
        instance_name(std::move(instance_name)),
        frame_id(frame_id),
        parent_frame(parent),
        parent_iter(parent_iter),
        max_parallel_iterations(max_parallel_iterations),
        num_pending_inputs(info->num_enters),
        iterations(max_parallel_iterations + 1),
        exit_fired(info->num_exits, false) {
    iterations[0] = first != nullptr ? std::move(first) : std::make_unique<IterationState>(*info);
  }

  const FrameInfo* info;
  const std::string instance_name;
  const int64_t frame_id;
  FrameState* const parent_frame;
  const int64_t parent_iter;
  const int max_parallel_iterations;

  absl::Mutex mu;
  int num_pending_inputs ABSL_GUARDED_BY(mu);
  int64_t iteration_count ABSL_GUARDED_BY(mu) = 0;
  int num_outstanding_iterations ABSL_GUARDED_BY(mu) = 1;
  std::vector<std::unique_ptr<IterationState>> iterations ABSL_GUARDED_BY(mu);
  // Loop invariants (constant Enters): activated in every new iteration.
  std::vector<std::pair<const NodeItem*, Entry>> loop_invariants ABSL_GUARDED_BY(mu);
  // NextIteration outputs waiting for a free iteration slot.
  std::vector<std::pair<const NodeItem*, Entry>> deferred_next ABSL_GUARDED_BY(mu);
  std::vector<bool> exit_fired ABSL_GUARDED_BY(mu);
  // Done iterations' states, reset (ResetIterationState), for the next
  // iterations to reuse: a loop's iteration state is an input slot per input
  // of its body (120 bytes each), allocated, zeroed and freed per iteration
  // otherwise, and reused it stays in cache. Seeded from, and handed back
  // to, the executor's cache when the frame is made and deleted.
  std::vector<std::unique_ptr<IterationState>> free_iterations ABSL_GUARDED_BY(mu);

  // A state for a new iteration: a reused one, else a new one.
  std::unique_ptr<IterationState> NewIteration() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (free_iterations.empty()) return std::make_unique<IterationState>(*info);
    std::unique_ptr<IterationState> state = std::move(free_iterations.back());
    free_iterations.pop_back();
    return state;
  }
  // Takes back the state of done iteration `iter`, reset for reuse.
  void ReleaseIteration(int64_t iter) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_ptr<IterationState>& slot = iterations[SlotOf(iter)];
    // A done iteration's slots are clear unless the step was aborted; the
    // scan (one byte of each slot) keeps that from being assumed.
    ResetIterationState(*info, slot.get());
    free_iterations.push_back(std::move(slot));
  }

  IterationState* GetIteration(int64_t iter) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return iterations[SlotOf(iter)].get();
  }
  // The input slots of a node that is ready in `iter`, from its
  // `input_start`. Read without `mu`, by that node only: iteration `iter`
  // was created, and its slots written, under `mu` before the node was made
  // ready (under `mu` too), and it is not freed (nor its element of
  // `iterations` replaced) before the node is done; `iterations` never
  // changes size.
  Entry* InputSlots(int64_t iter, int input_start) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return iterations[SlotOf(iter)]->inputs.data() + input_start;
  }
  void SetIteration(int64_t iter, std::unique_ptr<IterationState> state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    iterations[SlotOf(iter)] = std::move(state);
  }
  // The element of `iterations` that holds `iter`. Every node of the root
  // frame, and of a loop's first iteration, is at iteration 0: no division.
  // `iterations` never changes size, so its size needs no lock.
  size_t SlotOf(int64_t iter) const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    const size_t i = static_cast<size_t>(iter);
    return i < iterations.size() ? i : i % iterations.size();
  }
  bool IsIterationDone(int64_t iter) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    IterationState* state = GetIteration(iter);
    if (state->outstanding_ops != 0 || state->outstanding_frame_count != 0) return false;
    if (iter == 0) return num_pending_inputs == 0;
    return GetIteration(iter - 1) == nullptr;
  }
  bool IsFrameDone() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return num_pending_inputs == 0 && num_outstanding_iterations == 0;
  }
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_RUNTIME_FRAME_STATE_H_
