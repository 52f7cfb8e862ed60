// The step loop: ExecutorState runs one step of an ExecutorGraph.
#include "engine/runtime/executor.h"

#include <atomic>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "engine/runtime/executor_graph.h"
#include "engine/runtime/frame_state.h"

namespace sluice {

absl::Status Executor::Run(const Args& args) const {
  absl::Notification done;
  absl::Status result;
  RunAsync(args, [&](const absl::Status& s) {
    result = s;
    done.Notify();
  });
  done.WaitForNotification();
  return result;
}

namespace {

class ExecutorImpl;

// The nodes one Process loop runs on its own thread, in order: a vector and
// the index of its front. A std::deque allocates and frees a 512-byte block
// every 16 nodes that pass through it; this reuses its storage, and starts
// without any for the common queue of a few nodes.
class ReadyQueue {
 public:
  ReadyQueue() = default;
  explicit ReadyQueue(const TaggedNode& node) { nodes_.push_back(node); }
  bool empty() const { return front_ == nodes_.size(); }
  void push_back(const TaggedNode& node) {
    // Drop the taken prefix once it is most of the storage, so a queue that
    // never drains (two interleaved chains) does not grow with the step.
    if (front_ >= 64 && front_ * 2 >= nodes_.size()) {
      nodes_.erase(nodes_.begin(), nodes_.begin() + front_);
      front_ = 0;
    }
    nodes_.push_back(node);
  }
  // REQUIRES: !empty().
  TaggedNode pop_front() {
    TaggedNode node = nodes_[front_++];
    if (front_ == nodes_.size()) {
      nodes_.clear();
      front_ = 0;
    }
    return node;
  }

 private:
  absl::InlinedVector<TaggedNode, 8> nodes_;
  size_t front_ = 0;
};

// A node's output i: an Entry, or (a sync kernel's, before it is moved into
// one) the KernelOutput it set.
inline bool HasValue(const Entry& e) { return e.has_value; }
inline bool HasValue(const KernelOutput& o) { return o.is_set; }

// Stores output `src`, which has a value, in the input slot `slot`: moved on
// its last use, else copied.
inline void StoreInSlot(Entry* slot, Entry* src, bool last_use) {
  if (last_use) *slot = std::move(*src);
  else *slot = *src;
}
inline void StoreInSlot(Entry* slot, KernelOutput* src, bool last_use) {
  slot->has_value = true;
  if (src->ref != nullptr) {  // a reference: its value stays in the variable
    slot->ref = src->ref;
    slot->ref_mu = src->ref_mu;
    if (last_use) slot->ref_owner = std::move(src->ref_owner);
    else slot->ref_owner = src->ref_owner;
  } else if (last_use) {
    slot->val = std::move(src->value);
  } else {
    slot->val = src->value;
  }
}

// A sync kernel's outputs, checked (ExecutorState::CheckOutputs), moved into
// `outputs`; unset ones (dead) have no value. REQUIRES: `outputs` empty.
void MoveOutputs(const NodeItem& item, OpKernelContext* ctx, EntryVector* outputs) {
  outputs->resize(item.num_outputs);
  for (int i = 0; i < item.num_outputs; ++i) {
    KernelOutput* o = ctx->mutable_output(i);
    if (o->is_set) StoreInSlot(&(*outputs)[i], o, /*last_use=*/true);
  }
}

class ExecutorState {
 public:
  ExecutorState(const ExecutorImpl* impl, const Executor::Args& args, Executor::DoneCallback done);
  ~ExecutorState();
  void RunAsync();

 private:
  // Runs `inline_ready` (and what it makes ready) on this thread.
  void Process(ReadyQueue inline_ready);
  // Runs a synchronous kernel on the node's input slots `inputs` (read in
  // place, then cleared) with `params` (the step's, filled per node here),
  // records its stats, and when it succeeded propagates its outputs into
  // `ready`: in a lock-free root straight from the kernel's context, else
  // through `outputs`.
  absl::Status RunSync(const TaggedNode& tagged, Entry* inputs, OpKernelContext::Params* params,
                       int64_t start_ns, EntryVector* outputs, TaggedNodeVector* ready);
  // Starts an async kernel. Nodes its `done` makes ready go to `inline_ready`
  // when `done` runs on this thread before ComputeAsync returns (a value that
  // was already there), else to the inter-op pool. Returns true when the step
  // finished (the state may be gone).
  bool StartAsync(const TaggedNode& tagged, EntryVector inputs, ReadyQueue* inline_ready);
  absl::Status PrepareInputs(const TaggedNode& tagged, Entry* inputs,
                             absl::InlinedVector<TensorValue, 4>* values,
                             absl::InlinedVector<std::shared_ptr<ResourceBase>, 4>* owners);
  // The kernel's status (naming the node) and its outputs checked against
  // the op: each set unless it may be dead, each of the declared type.
  absl::Status CheckOutputs(const NodeItem& item, OpKernelContext* ctx);
  // CheckOutputs, then the outputs moved into `outputs`.
  absl::Status ProcessOutputs(const NodeItem& item, OpKernelContext* ctx, EntryVector* outputs);
  void PropagateOutputs(const TaggedNode& tagged, EntryVector* outputs, TaggedNodeVector* ready);
  // Returns true when the step finished (the state may be gone).
  bool NodeDone(const absl::Status& s, const TaggedNode& tagged, const TaggedNodeVector& ready,
                ReadyQueue* inline_ready);
  void ScheduleReady(const TaggedNodeVector& ready, ReadyQueue* inline_ready);
  void Finish();

  void ActivateNodes(const NodeItem& item, bool is_dead, FrameState* frame, int64_t iter, EntryVector* outputs,
                     TaggedNodeVector* ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(frame->mu);
  // ActivateNodes for the root frame of a graph_.lock_free_root graph,
  // without its lock: atomic pending counts (no Merge, no loop).
  // `output_at(i)` is output i: an Entry, or a sync kernel's KernelOutput.
  template <typename OutputAt>
  void ActivateRootNodesLockFree(const NodeItem& item, bool is_dead, const OutputAt& output_at,
                                 TaggedNodeVector* ready);
  void IncrementIteration(FrameState* frame, TaggedNodeVector* ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(frame->mu);
  bool CleanupIterations(FrameState* frame, int64_t iter, TaggedNodeVector* ready)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(frame->mu);
  // Returns true when the frame is done.
  bool DecrementOutstandingOps(FrameState* frame, int64_t iter, TaggedNodeVector* ready)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(frame->mu);
  FrameState* FindOrCreateChildFrame(FrameState* parent, int64_t parent_iter, const NodeItem& enter);
  // Deletes `frame` (done) and then each ancestor that it leaves done.
  void DeleteFrames(FrameState* frame, TaggedNodeVector* ready);
  // Deletes `frame`; returns true when its parent is done with it (the caller
  // deletes the parent next).
  bool DeleteFrame(FrameState* frame, TaggedNodeVector* ready);

  std::string ErrorContext(const NodeItem& item) const;
  void RecordStats(const TaggedNode& tagged, int64_t start_ns);

  const ExecutorImpl* impl_;
  const ExecutorGraph& graph_;
  Executor::Args args_;
  Executor::DoneCallback done_;
  std::unique_ptr<CancellationManager> owned_cancellation_;
  CancellationManager* cancellation_;
  OpKernelContext::Params base_params_;
  // Per-step resources (TensorArrays, stacks) on this executor's device,
  // dropped when the step's state is deleted, before `done` runs.
  StepContainer step_container_;

  std::atomic<int64_t> num_outstanding_ops_{0};
  std::atomic<bool> aborted_{false};

  absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, FrameState*> outstanding_frames_ ABSL_GUARDED_BY(mu_);
  FrameState* root_frame_;
  // Its iteration 0 (the only one), fixed for the step.
  IterationState* root_iteration_;
  // graph_.lock_free_root.
  const bool lock_free_root_;
};

// A kernel that took less than this the last time it ran is run inline by the
// thread that makes it ready, even if it calls itself expensive: handing it to
// another inter-op thread (a wake-up, ~50 us on this VM) costs more than
// running it. Chains of scalar shape arithmetic (a Mean's gradient: ~25 ops)
// then stay on one thread.
constexpr int64_t kInlineBelowNs = 20 * 1000;
// A loop's expensive kernels are timed (for the rule above) in one iteration
// of this many: 0, 8, 16, ...; the root frame's every step.
constexpr int64_t kTimedIterationEvery = 8;

class ExecutorImpl : public Executor {
 public:
  ExecutorImpl(const ExecutorParams& params, ExecutorGraph graph)
      : params_(params),
        graph_(std::move(graph)),
        last_compute_ns_(new std::atomic<int64_t>[graph_.items.size()]),
        frame_cache_(graph_.frames.size()) {
    for (size_t i = 0; i < graph_.items.size(); ++i) last_compute_ns_[i].store(-1, std::memory_order_relaxed);
  }

  void RunAsync(const Args& args, DoneCallback done) const override {
    (new ExecutorState(this, args, std::move(done)))->RunAsync();
  }
  int num_nodes() const override { return graph_.graph->num_nodes(); }

  const ExecutorParams& params() const { return params_; }
  const ExecutorGraph& graph() const { return graph_; }
  // How long node `id`'s synchronous kernel took when it last ran (-1: never
  // timed); written by every step's threads, hence relaxed atomics.
  std::atomic<int64_t>& last_compute_ns(int id) const { return last_compute_ns_[id]; }

  // The root frame's iteration state for a new step: one a finished step
  // gave back, else a new one. A 10,000-node graph's is 10,000 input slots
  // (1.2 MB); making and destroying it took ~6% of a step of trivial nodes.
  std::unique_ptr<IterationState> TakeRootIteration() const {
    {
      absl::MutexLock lock(&root_cache_mu_);
      if (!root_cache_.empty()) {
        std::unique_ptr<IterationState> state = std::move(root_cache_.back());
        root_cache_.pop_back();
        return state;
      }
    }
    return std::make_unique<IterationState>(graph_.frames[0], graph_.lock_free_root);
  }
  // Takes back a finished step's root iteration state (no thread uses it any
  // more), reset; keeps at most one per concurrent step, up to 4.
  // `step_ok`: the step ended without an error (see ResetIterationState).
  void ReturnRootIteration(std::unique_ptr<IterationState> state, bool step_ok) const {
    if (state == nullptr) return;
    ResetIterationState(graph_.frames[0], state.get(), /*slots_clear=*/step_ok);
    absl::MutexLock lock(&root_cache_mu_);
    if (root_cache_.size() < kMaxCachedRootIterations) root_cache_.push_back(std::move(state));
  }

  // Reset iteration states of loop frame `frame_index` (of graph_.frames)
  // that earlier frames gave back, for a new frame of it: up to its
  // parallel_iterations + 1, the most it has at once.
  std::vector<std::unique_ptr<IterationState>> TakeFrameIterations(size_t frame_index) const {
    std::vector<std::unique_ptr<IterationState>> states;
    absl::MutexLock lock(&frame_cache_mu_);
    std::vector<std::unique_ptr<IterationState>>& cached = frame_cache_[frame_index];
    const size_t n = std::min(cached.size(), static_cast<size_t>(graph_.frames[frame_index].parallel_iterations) + 1);
    states.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      states.push_back(std::move(cached.back()));
      cached.pop_back();
    }
    return states;
  }
  // Takes back a deleted frame's reset iteration states, keeping at most
  // kMaxCachedFrameIterations per frame (a loop nested in a loop has a frame
  // per running outer iteration) and kMaxCachedFrameBytes of input slots.
  void ReturnFrameIterations(size_t frame_index, std::vector<std::unique_ptr<IterationState>> states) const {
    const size_t slot_bytes = sizeof(Entry) * static_cast<size_t>(graph_.frames[frame_index].total_inputs) + 1;
    const size_t most = std::max<size_t>(1, std::min(kMaxCachedFrameIterations, kMaxCachedFrameBytes / slot_bytes));
    absl::MutexLock lock(&frame_cache_mu_);
    std::vector<std::unique_ptr<IterationState>>& cached = frame_cache_[frame_index];
    for (auto& state : states) {
      if (cached.size() >= most) break;
      cached.push_back(std::move(state));
    }
  }

 private:
  static constexpr size_t kMaxCachedRootIterations = 4;
  static constexpr size_t kMaxCachedFrameIterations = 64;
  static constexpr size_t kMaxCachedFrameBytes = size_t{16} << 20;

  ExecutorParams params_;
  ExecutorGraph graph_;
  std::unique_ptr<std::atomic<int64_t>[]> last_compute_ns_;
  mutable absl::Mutex root_cache_mu_;
  mutable std::vector<std::unique_ptr<IterationState>> root_cache_ ABSL_GUARDED_BY(root_cache_mu_);
  mutable absl::Mutex frame_cache_mu_;
  // By frame index; [0] (the root's) unused.
  mutable std::vector<std::vector<std::unique_ptr<IterationState>>> frame_cache_ ABSL_GUARDED_BY(frame_cache_mu_);
};

ExecutorState::ExecutorState(const ExecutorImpl* impl, const Executor::Args& args, Executor::DoneCallback done)
    : impl_(impl),
      graph_(impl->graph()),
      args_(args),
      done_(std::move(done)),
      step_container_(impl->params().device->resource_manager()),
      lock_free_root_(impl->graph().lock_free_root) {
  if (args.cancellation_manager == nullptr) {
    owned_cancellation_ = std::make_unique<CancellationManager>();
    cancellation_ = owned_cancellation_.get();
  } else {
    cancellation_ = args.cancellation_manager;
  }
  base_params_.step_id = args.step_id;
  base_params_.device = impl->params().device;
  base_params_.rendezvous = args.rendezvous;
  base_params_.cancellation_manager = cancellation_;
  base_params_.runner = &impl->params().runner;
  base_params_.step_container = &step_container_;
  std::unique_ptr<IterationState> root_iteration = impl->TakeRootIteration();
  root_iteration_ = root_iteration.get();
  root_frame_ = new FrameState(&graph_.frames[0], "", 0, nullptr, 0, 1, std::move(root_iteration));
}

ExecutorState::~ExecutorState() {
  for (auto& [name, frame] : outstanding_frames_) delete frame;
  {
    // The step is over: no other thread holds the root frame.
    absl::MutexLock lock(&root_frame_->mu);
    // aborted_ is set by the step's first error, whatever its source.
    impl_->ReturnRootIteration(std::move(root_frame_->iterations[0]), !aborted_.load(std::memory_order_relaxed));
  }
  delete root_frame_;
}

void ExecutorState::RunAsync() {
  const std::vector<int>& roots = graph_.root_nodes;
  if (roots.empty()) {
    Finish();
    return;
  }
  TaggedNodeVector ready;
  {
    absl::MutexLock lock(&root_frame_->mu);
    IterationState* iter0 = root_frame_->GetIteration(0);
    for (int id : roots) {
      ready.push_back(TaggedNode{&graph_.items[id], root_frame_, 0, false});
      ++iter0->outstanding_ops;
    }
  }
  num_outstanding_ops_.store(static_cast<int64_t>(ready.size()));
  ReadyQueue inline_ready;
  ScheduleReady(ready, &inline_ready);
  if (!inline_ready.empty()) {
    impl_->params().runner([this, q = std::move(inline_ready)]() mutable { Process(std::move(q)); });
  }
}

std::string ExecutorState::ErrorContext(const NodeItem& item) const { return NodeContext(item.node->def()); }

void ExecutorState::RecordStats(const TaggedNode& tagged, int64_t start_ns) {
  NodeExecStats stats;
  stats.node_name = tagged.item->node->name();
  stats.op = tagged.item->node->type_string();
  stats.frame_id = tagged.frame->frame_id;
  stats.iter_id = tagged.iter;
  stats.start_ns = start_ns;
  stats.end_ns = NowNanos();
  stats.thread_id = CurrentThreadId();
  args_.stats_collector->Record(std::move(stats));
}

void ExecutorState::Process(ReadyQueue inline_ready) {
  EntryVector outputs;
  TaggedNodeVector ready;
  // The step's kernel parameters; RunSync sets the per-node fields.
  OpKernelContext::Params params = base_params_;
  while (!inline_ready.empty()) {
    const TaggedNode tagged = inline_ready.pop_front();
    const NodeItem& item = *tagged.item;
    int64_t start_ns = args_.stats_collector ? NowNanos() : 0;

    // The node's input slots in its iteration, used in place: every producer
    // wrote its slot before the pending-count update that made the node
    // ready (under the frame's lock, or an acquire-release add in a
    // lock-free root, either of which orders it before us), and no one else
    // touches them until they are cleared below, before PropagateOutputs may
    // free the iteration.
    Entry* const inputs = tagged.frame->InputSlots(tagged.iter, item.input_start);

    absl::Status s;
    outputs.clear();
    // A shared cancellation manager is cancelled when another executor of the
    // step (another device) failed: stop here too.
    if (aborted_.load(std::memory_order_relaxed) || cancellation_->IsCancelled()) {
      s = absl::CancelledError("step aborted");
    } else if (tagged.is_dead && !item.runs_when_dead) {
      outputs.resize(item.num_outputs);
    } else if (item.async_kernel != nullptr) {
      // The kernel may finish after this loop moved on: it owns its inputs.
      EntryVector async_inputs(item.num_inputs);
      for (int i = 0; i < item.num_inputs; ++i) {
        async_inputs[i] = std::move(inputs[i]);
        inputs[i].Clear();
      }
      if (StartAsync(tagged, std::move(async_inputs), &inline_ready)) return;
      continue;
    } else {
      ready.clear();
      s = RunSync(tagged, inputs, &params, start_ns, &outputs, &ready);
      outputs.clear();
      if (NodeDone(s, tagged, ready, &inline_ready)) return;
      continue;
    }
    // A cancelled or dead node: no kernel ran.
    for (int i = 0; i < item.num_inputs; ++i) inputs[i].Clear();
    if (args_.stats_collector != nullptr && !tagged.is_dead) RecordStats(tagged, start_ns);
    ready.clear();
    if (s.ok()) PropagateOutputs(tagged, &outputs, &ready);
    outputs.clear();
    if (NodeDone(s, tagged, ready, &inline_ready)) return;
  }
}

// A reference input's tensor has the type its edge promises unless something
// outside the graph's type checks wrote it (a variable shared through
// shared_name with another dtype, say); kernels CHECK dtypes, so say it here.
absl::Status CheckRefDtype(const NodeItem& item, int i, const Tensor& t) {
  const DataType want = BaseType(item.kernel->input_type(i));
  if (t.dtype() == want) return absl::OkStatus();
  const Edge* edge = item.node->input_edge(i);
  return absl::InvalidArgumentError(absl::StrCat(NodeContext(item.node->def()), "input ", i, " (a reference to ",
                                                 edge ? absl::StrCat("'", edge->src->name(), "'") : "a variable",
                                                 ") holds ", DataTypeString(t.dtype()), " but ",
                                                 DataTypeString(want), " is expected"));
}

absl::Status ExecutorState::PrepareInputs(const TaggedNode& tagged, Entry* inputs,
                                          absl::InlinedVector<TensorValue, 4>* values,
                                          absl::InlinedVector<std::shared_ptr<ResourceBase>, 4>* owners) {
  const NodeItem& item = *tagged.item;
  values->resize(item.num_inputs);
  bool any_ref = false;
  for (int i = 0; i < item.num_inputs; ++i) {
    Entry& e = inputs[i];
    TensorValue& v = (*values)[i];
    if (!e.has_value) continue;  // a dead input of a Merge
    if (item.input_is_ref[i]) {
      if (e.ref == nullptr) {
        return absl::InternalError(absl::StrCat(ErrorContext(item), "input ", i, " expects a reference"));
      }
      if (!item.allows_uninitialized_input && !e.ref->IsInitialized()) {
        const Edge* edge = item.node->input_edge(i);
        return absl::FailedPreconditionError(absl::StrCat(ErrorContext(item), "attempting to use uninitialized value ",
                                                          edge ? edge->src->name() : "?"));
      }
      if (e.ref->IsInitialized()) {
        absl::ReaderMutexLock lock(e.ref_mu);
        absl::Status s = CheckRefDtype(item, i, *e.ref);
        if (!s.ok()) return s;
      }
      v.tensor = e.ref;
      v.mutex_if_ref = e.ref_mu;
      any_ref = true;
      continue;
    }
    if (e.ref != nullptr) {
      {
        absl::ReaderMutexLock lock(e.ref_mu);
        e.val = *e.ref;
      }
      e.ref = nullptr;
      e.ref_mu = nullptr;
      e.ref_owner.reset();
      if (!e.val.IsInitialized()) {
        const Edge* edge = item.node->input_edge(i);
        return absl::FailedPreconditionError(absl::StrCat(ErrorContext(item), "attempting to use uninitialized value ",
                                                          edge ? edge->src->name() : "?"));
      }
      absl::Status s = CheckRefDtype(item, i, e.val);
      if (!s.ok()) return s;
    }
    v.tensor = &e.val;
  }
  if (any_ref) {
    owners->resize(item.num_inputs);
    for (int i = 0; i < item.num_inputs; ++i) (*owners)[i] = inputs[i].ref_owner;
  }
  return absl::OkStatus();
}

absl::Status ExecutorState::RunSync(const TaggedNode& tagged, Entry* inputs, OpKernelContext::Params* params,
                                    int64_t start_ns, EntryVector* outputs, TaggedNodeVector* ready) {
  const NodeItem& item = *tagged.item;
  absl::InlinedVector<TensorValue, 4> values;
  absl::InlinedVector<std::shared_ptr<ResourceBase>, 4> owners;
  absl::Status s = PrepareInputs(tagged, inputs, &values, &owners);
  if (!s.ok()) {
    for (int i = 0; i < item.num_inputs; ++i) inputs[i].Clear();
    if (args_.stats_collector != nullptr && !tagged.is_dead) RecordStats(tagged, start_ns);
    return s;
  }
  params->op_kernel = item.kernel.get();
  params->inputs = values;
  params->input_ref_owners = owners;
  params->frame_id = tagged.frame->frame_id;
  params->iter_id = tagged.iter;
  params->is_input_dead = tagged.is_dead;
  // The outputs stay in `ctx` until they are propagated.
  OpKernelContext ctx(params);
  // Timed for ScheduleReady's inline rule; in a loop, one iteration in
  // kTimedIterationEvery is enough (two clock reads were ~3% of a step of
  // small loop-body kernels).
  // A node not timed yet is timed in any iteration (one dead in iterations
  // 0, 8, ... would otherwise never be, and always go to the pool).
  if (item.is_expensive &&
      (tagged.iter % kTimedIterationEvery == 0 ||
       impl_->last_compute_ns(item.node->id()).load(std::memory_order_relaxed) < 0)) {
    const int64_t compute_start = NowNanos();
    item.kernel->Compute(&ctx);
    impl_->last_compute_ns(item.node->id()).store(NowNanos() - compute_start, std::memory_order_relaxed);
  } else {
    item.kernel->Compute(&ctx);
  }
  s = CheckOutputs(item, &ctx);
  if (s.ok() && args_.stats_include_device_time && args_.stats_collector != nullptr) {
    s = params->device->Synchronize();
  }
  for (int i = 0; i < item.num_inputs; ++i) inputs[i].Clear();
  if (args_.stats_collector != nullptr && !tagged.is_dead) RecordStats(tagged, start_ns);
  if (!s.ok()) return s;
  if (lock_free_root_) {
    // No frames to enter or leave: straight from the kernel's outputs, with
    // no copy into `outputs` (a chain of Identity nodes: 0.76 of the time per
    // node; docs/PERFORMANCE.md, "Session 27").
    ActivateRootNodesLockFree(
        item, tagged.is_dead, [&ctx](int i) -> KernelOutput& { return *ctx.mutable_output(i); }, ready);
    return s;
  }
  MoveOutputs(item, &ctx, outputs);
  PropagateOutputs(tagged, outputs, ready);
  return s;
}

// Set on a thread for as long as it is inside an async kernel's ComputeAsync
// called by StartAsync. A `done` that finds its own node execution here runs
// nested in that call, on the executor's thread, and hands what it made ready
// to the caller's queue instead of waking another thread (~50 us on this VM).
// `execution` (the AsyncState) is unique while its `done` has not run, so a
// `done` on another thread, or on this one after the call returned (say,
// inside another async kernel's call that completes it), never matches.
struct SyncDoneMarker {
  const void* execution;
  ReadyQueue* inline_ready;
  bool step_finished;  // NodeDone said so: the ExecutorState is gone
};
thread_local SyncDoneMarker* current_sync_done = nullptr;

bool ExecutorState::StartAsync(const TaggedNode& tagged, EntryVector inputs, ReadyQueue* inline_ready) {
  struct AsyncState {
    TaggedNode tagged;
    EntryVector inputs;
    absl::InlinedVector<TensorValue, 4> values;
    absl::InlinedVector<std::shared_ptr<ResourceBase>, 4> owners;
    OpKernelContext::Params params;
    std::unique_ptr<OpKernelContext> ctx;
    int64_t start_ns = 0;
  };
  auto* state = new AsyncState;
  state->tagged = tagged;
  state->inputs = std::move(inputs);
  state->start_ns = args_.stats_collector ? NowNanos() : 0;
  const NodeItem& item = *tagged.item;
  absl::Status s = PrepareInputs(tagged, state->inputs.data(), &state->values, &state->owners);
  if (!s.ok()) {
    delete state;
    return NodeDone(s, tagged, TaggedNodeVector(), inline_ready);
  }
  state->params = base_params_;
  state->params.op_kernel = item.kernel.get();
  state->params.inputs = state->values;
  state->params.input_ref_owners = state->owners;
  state->params.frame_id = tagged.frame->frame_id;
  state->params.iter_id = tagged.iter;
  // A dead _Send runs (it forwards the deadness): an async one must see it too.
  state->params.is_input_dead = tagged.is_dead;
  state->ctx = std::make_unique<OpKernelContext>(&state->params);
  SyncDoneMarker marker{state, inline_ready, false};
  SyncDoneMarker* const outer = current_sync_done;
  current_sync_done = &marker;
  item.async_kernel->ComputeAsync(state->ctx.get(), [this, state]() {
    // Read before `state` is deleted: nested means this runs inside the
    // ComputeAsync call above, whose `marker` is then alive.
    SyncDoneMarker* const nested =
        current_sync_done != nullptr && current_sync_done->execution == state ? current_sync_done : nullptr;
    // `state`'s address may be reused once it is deleted below; a `done` that
    // NodeDone's abort runs on this thread must not take the marker for its own.
    if (nested != nullptr) nested->execution = nullptr;
    EntryVector outputs;
    absl::Status s = ProcessOutputs(*state->tagged.item, state->ctx.get(), &outputs);
    if (args_.stats_collector != nullptr) RecordStats(state->tagged, state->start_ns);
    TaggedNodeVector ready;
    if (s.ok()) PropagateOutputs(state->tagged, &outputs, &ready);
    TaggedNode tagged = state->tagged;
    delete state;
    if (nested != nullptr) {
      // The caller's Process loop runs what became ready, on this thread.
      nested->step_finished = NodeDone(s, tagged, ready, nested->inline_ready);
      return;
    }
    ReadyQueue inline_ready;
    if (NodeDone(s, tagged, ready, &inline_ready)) return;
    // `done` runs on a foreign thread (the one that sent a value) or after
    // ComputeAsync returned: go back to the inter-op pool rather than
    // running the graph there.
    if (!inline_ready.empty()) {
      impl_->params().runner([this, q = std::move(inline_ready)]() mutable { Process(std::move(q)); });
    }
  });
  current_sync_done = outer;
  return marker.step_finished;
}

absl::Status ExecutorState::CheckOutputs(const NodeItem& item, OpKernelContext* ctx) {
  const absl::Status& s = ctx->status();
  if (!s.ok()) {
    if (absl::StartsWith(s.message(), "node '")) return s;
    return absl::Status(s.code(), absl::StrCat(ErrorContext(item), s.message()));
  }
  for (int i = 0; i < item.num_outputs; ++i) {
    const KernelOutput& o = *ctx->mutable_output(i);
    if (!o.is_set) {
      if (item.outputs_may_be_dead) continue;  // e.g. the untaken branch of a Switch
      return absl::InternalError(absl::StrCat(ErrorContext(item), "kernel did not produce output ", i));
    }
    if (o.ref == nullptr && o.value.dtype() != item.output_base_types[i]) {
      return absl::InternalError(absl::StrCat(ErrorContext(item), "output ", i, " has type ",
                                              DataTypeString(o.value.dtype()), " but the op declares ",
                                              DataTypeString(item.node->output_type(i))));
    }
  }
  return absl::OkStatus();
}

absl::Status ExecutorState::ProcessOutputs(const NodeItem& item, OpKernelContext* ctx, EntryVector* outputs) {
  absl::Status s = CheckOutputs(item, ctx);
  if (s.ok()) MoveOutputs(item, ctx, outputs);
  return s;
}

void ExecutorState::ActivateNodes(const NodeItem& item, bool is_dead, FrameState* frame, int64_t iter,
                                  EntryVector* outputs, TaggedNodeVector* ready) {
  IterationState* state = frame->GetIteration(iter);
  for (const OutEdge& e : item.out_edges) {
    const NodeItem& dst = graph_.items[e.dst_id];
    PendingState& p = state->pending[dst.frame_local_id];
    const bool edge_dead = is_dead || (!e.is_control && !(*outputs)[e.src_output].has_value);
    bool dst_ready = false;
    bool dst_dead = false;
    bool store = false;
    if (dst.is_merge) {
      if (e.is_control) {
        if (--p.pending == 0) {
          if (p.has_live) {
            dst_ready = true;
          } else if (p.dead == dst.num_data_inputs) {
            dst_ready = true;
            dst_dead = true;
          }
        }
      } else if (!edge_dead) {
        if (!p.has_live) {
          p.has_live = true;
          store = true;
          dst_ready = p.pending == 0;
        }
      } else {
        ++p.dead;
        if (p.pending == 0 && !p.has_live && p.dead == dst.num_data_inputs) {
          dst_ready = true;
          dst_dead = true;
        }
      }
    } else {
      if (edge_dead) ++p.dead;
      else store = !e.is_control;
      if (--p.pending == 0) {
        dst_ready = true;
        dst_dead = p.dead > 0;
      }
    }
    if (store) {
      Entry& slot = state->inputs[dst.input_start + e.dst_input];
      Entry& src = (*outputs)[e.src_output];
      if (e.last_use) slot = std::move(src);
      else slot = src;
    }
    if (dst_ready) {
      if (dst.is_control_trigger) dst_dead = false;
      // Reset for reuse: pending counts are per iteration and each node runs
      // once per iteration.
      ++state->outstanding_ops;
      // Filled in place: a TaggedNode built on the stack and copied is
      // written in pieces and read back whole, a store-forwarding stall.
      TaggedNode& t = ready->emplace_back();
      t.item = &dst;
      t.frame = frame;
      t.iter = iter;
      t.is_dead = dst_dead;
    }
  }
}

template <typename OutputAt>
void ExecutorState::ActivateRootNodesLockFree(const NodeItem& item, bool is_dead, const OutputAt& output_at,
                                              TaggedNodeVector* ready) {
  IterationState* state = root_iteration_;
  for (const OutEdge& e : item.out_edges) {
    const NodeItem& dst = graph_.items[e.dst_id];
    const bool edge_dead = is_dead || (!e.is_control && !HasValue(output_at(e.src_output)));
    if (!edge_dead && !e.is_control) {
      // Before the add below (release): the node's consumer reads it after
      // the add that finds it ready (acquire).
      StoreInSlot(&state->inputs[dst.input_start + e.dst_input], &output_at(e.src_output), e.last_use);
    }
    bool dst_dead = edge_dead;
    // A node with one in-edge is ready now, and its count is never read: no
    // atomic add (a chain, the leaves of a fan-out).
    if (!dst.has_one_in_edge) {
      const uint64_t delta = edge_dead ? kDeadArrival : ~uint64_t{0};
      const uint64_t now =
          state->atomic_pending[dst.frame_local_id].fetch_add(delta, std::memory_order_acq_rel) + delta;
      if ((now & kPendingMask) != 0) continue;
      dst_dead = (now >> 32) != 0;
    }
    TaggedNode& t = ready->emplace_back();
    t.item = &dst;
    t.frame = root_frame_;
    t.iter = 0;
    t.is_dead = dst_dead && !dst.is_control_trigger;
  }
}

void ExecutorState::IncrementIteration(FrameState* frame, TaggedNodeVector* ready) {
  ++frame->iteration_count;
  const int64_t next = frame->iteration_count;
  frame->SetIteration(next, frame->NewIteration());
  ++frame->num_outstanding_iterations;
  std::vector<std::pair<const NodeItem*, Entry>> deferred;
  deferred.swap(frame->deferred_next);
  for (auto& [item, entry] : deferred) {
    EntryVector outputs(1);
    outputs[0] = std::move(entry);
    ActivateNodes(*item, false, frame, next, &outputs, ready);
  }
  for (auto& [item, entry] : frame->loop_invariants) {
    EntryVector outputs(1);
    outputs[0] = entry;
    ActivateNodes(*item, !entry.has_value, frame, next, &outputs, ready);
  }
}

bool ExecutorState::CleanupIterations(FrameState* frame, int64_t iter, TaggedNodeVector* ready) {
  int64_t cur = iter;
  while (cur <= frame->iteration_count && frame->GetIteration(cur) != nullptr && frame->IsIterationDone(cur)) {
    frame->ReleaseIteration(cur);
    --frame->num_outstanding_iterations;
    ++cur;
    if (!frame->deferred_next.empty()) IncrementIteration(frame, ready);
  }
  return frame->IsFrameDone();
}

bool ExecutorState::DecrementOutstandingOps(FrameState* frame, int64_t iter, TaggedNodeVector* ready) {
  IterationState* state = frame->GetIteration(iter);
  if (--state->outstanding_ops != 0) return false;
  if (frame == root_frame_) return false;
  return CleanupIterations(frame, iter, ready);
}

FrameState* ExecutorState::FindOrCreateChildFrame(FrameState* parent, int64_t parent_iter, const NodeItem& enter) {
  const FrameInfo& info = graph_.frames[enter.enter_frame];
  std::string name = absl::StrCat(parent->instance_name, ";", parent_iter, ";", info.name);
  {
    absl::MutexLock lock(&mu_);
    auto it = outstanding_frames_.find(name);
    if (it != outstanding_frames_.end()) return it->second;
  }
  std::vector<std::unique_ptr<IterationState>> states = impl_->TakeFrameIterations(enter.enter_frame);
  std::unique_ptr<IterationState> first;
  if (!states.empty()) {
    first = std::move(states.back());
    states.pop_back();
  }
  auto* frame = new FrameState(&info, name, static_cast<int64_t>(absl::Hash<std::string>()(name) & 0x7fffffffffffffff),
                               parent, parent_iter, info.parallel_iterations, std::move(first));
  {
    absl::MutexLock lock(&frame->mu);
    frame->free_iterations = std::move(states);
  }
  {
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = outstanding_frames_.emplace(name, frame);
    if (!inserted) {
      delete frame;
      return it->second;
    }
  }
  {
    absl::MutexLock lock(&parent->mu);
    ++parent->GetIteration(parent_iter)->outstanding_frame_count;
  }
  return frame;
}

bool ExecutorState::DeleteFrame(FrameState* frame, TaggedNodeVector* ready) {
  FrameState* parent = frame->parent_frame;
  const int64_t parent_iter = frame->parent_iter;
  std::vector<const NodeItem*> dead_exits;
  std::vector<std::unique_ptr<IterationState>> free_iterations;
  {
    absl::MutexLock lock(&frame->mu);
    free_iterations = std::move(frame->free_iterations);
    // Exits that never produced a value send a dead value to the parent, so
    // what waits on them (a Merge of a cond around the loop) can proceed.
    for (int id : frame->info->exit_nodes) {
      const NodeItem& item = graph_.items[id];
      if (!frame->exit_fired[item.exit_index]) dead_exits.push_back(&item);
    }
  }
  bool parent_done = false;
  {
    absl::MutexLock lock(&parent->mu);
    for (const NodeItem* exit : dead_exits) {
      EntryVector outputs(1);
      ActivateNodes(*exit, true, parent, parent_iter, &outputs, ready);
    }
    --parent->GetIteration(parent_iter)->outstanding_frame_count;
    // The parent's iteration is cleaned up under the same lock: once it is
    // released, the thread that finishes the iteration's last op may find
    // the parent done and delete it.
    if (parent != root_frame_) parent_done = CleanupIterations(parent, parent_iter, ready);
  }
  {
    absl::MutexLock lock(&mu_);
    outstanding_frames_.erase(frame->instance_name);
  }
  impl_->ReturnFrameIterations(static_cast<size_t>(frame->info - graph_.frames.data()), std::move(free_iterations));
  delete frame;
  return parent_done;
}

void ExecutorState::DeleteFrames(FrameState* frame, TaggedNodeVector* ready) {
  while (frame != nullptr && frame != root_frame_) {
    FrameState* parent = frame->parent_frame;
    frame = DeleteFrame(frame, ready) ? parent : nullptr;
  }
}

void ExecutorState::PropagateOutputs(const TaggedNode& tagged, EntryVector* outputs, TaggedNodeVector* ready) {
  const NodeItem& item = *tagged.item;
  FrameState* input_frame = tagged.frame;
  const int64_t input_iter = tagged.iter;
  const bool is_dead = tagged.is_dead;
  bool frame_done = false;

  if (item.is_enter) {
    FrameState* child = FindOrCreateChildFrame(input_frame, input_iter, item);
    bool child_done = false;
    {
      absl::MutexLock lock(&child->mu);
      if (item.is_constant_enter) {
        Entry value = is_dead ? Entry() : (*outputs)[0];
        child->loop_invariants.emplace_back(&item, value);
        for (int64_t i = 0; i <= child->iteration_count; ++i) {
          if (child->GetIteration(i) == nullptr) continue;
          EntryVector copy(1);
          copy[0] = value;
          ActivateNodes(item, is_dead, child, i, &copy, ready);
        }
      } else {
        ActivateNodes(item, is_dead, child, 0, outputs, ready);
      }
      // With its last input in, the child may already be done (a loop that
      // runs no iteration): decided under its lock, as above.
      if (--child->num_pending_inputs == 0) child_done = CleanupIterations(child, 0, ready);
    }
    if (child_done) DeleteFrames(child, ready);
    absl::MutexLock lock(&input_frame->mu);
    frame_done = DecrementOutstandingOps(input_frame, input_iter, ready);
  } else if (item.is_exit) {
    if (!is_dead) {
      FrameState* parent = input_frame->parent_frame;
      {
        absl::MutexLock lock(&input_frame->mu);
        input_frame->exit_fired[item.exit_index] = true;
      }
      absl::MutexLock lock(&parent->mu);
      ActivateNodes(item, false, parent, input_frame->parent_iter, outputs, ready);
    }
    absl::MutexLock lock(&input_frame->mu);
    frame_done = DecrementOutstandingOps(input_frame, input_iter, ready);
  } else if (item.is_next_iteration) {
    absl::MutexLock lock(&input_frame->mu);
    if (!is_dead && (*outputs)[0].has_value) {
      if (input_iter == input_frame->iteration_count &&
          input_frame->num_outstanding_iterations == input_frame->max_parallel_iterations) {
        input_frame->deferred_next.emplace_back(&item, std::move((*outputs)[0]));
      } else {
        if (input_iter == input_frame->iteration_count) IncrementIteration(input_frame, ready);
        ActivateNodes(item, false, input_frame, input_iter + 1, outputs, ready);
      }
    }
    frame_done = DecrementOutstandingOps(input_frame, input_iter, ready);
  } else if (lock_free_root_) {
    // The root frame (the only one); its outstanding_ops decide nothing.
    ActivateRootNodesLockFree(
        item, is_dead, [outputs](int i) -> Entry& { return (*outputs)[i]; }, ready);
  } else {
    absl::MutexLock lock(&input_frame->mu);
    ActivateNodes(item, is_dead, input_frame, input_iter, outputs, ready);
    frame_done = DecrementOutstandingOps(input_frame, input_iter, ready);
  }
  if (frame_done) DeleteFrames(input_frame, ready);
}

bool ExecutorState::NodeDone(const absl::Status& s, const TaggedNode& tagged, const TaggedNodeVector& ready,
                             ReadyQueue* inline_ready) {
  if (!s.ok()) {
    bool first = false;
    {
      absl::MutexLock lock(&mu_);
      if (status_.ok()) {
        status_ = s;
        first = true;
      }
    }
    if (first) {
      aborted_.store(true, std::memory_order_relaxed);
      // The rendezvous first: a step spread over several executors (devices)
      // shares it, and their pending Recvs must see this error, not the
      // "step cancelled" that cancelling our own Recvs would abort it with.
      if (args_.rendezvous != nullptr) args_.rendezvous->StartAbort(s);
      cancellation_->StartCancel();
    }
  }
  const int64_t ready_count = aborted_.load(std::memory_order_relaxed) ? 0 : static_cast<int64_t>(ready.size());
  if (ready_count == 0) {
    if (num_outstanding_ops_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      Finish();
      return true;
    }
    return false;
  }
  // This node's count passes to one of the nodes it made ready (a chain
  // touches no counter at all); it is added before they are scheduled, so
  // the count cannot reach 0 while any of them is outstanding.
  if (ready_count > 1) num_outstanding_ops_.fetch_add(ready_count - 1, std::memory_order_relaxed);
  ScheduleReady(ready, inline_ready);
  return false;
}

void ExecutorState::ScheduleReady(const TaggedNodeVector& ready, ReadyQueue* inline_ready) {
  const TaggedNode* expensive = nullptr;
  auto runs_inline = [this](const TaggedNode& t) {
    if (t.is_dead || !t.item->is_expensive) return true;
    const int64_t ns = impl_->last_compute_ns(t.item->node->id()).load(std::memory_order_relaxed);
    return ns >= 0 && ns < kInlineBelowNs;
  };
  for (const TaggedNode& t : ready) {
    if (runs_inline(t)) {
      inline_ready->push_back(t);
      continue;
    }
    if (expensive != nullptr) {
      TaggedNode run = *expensive;
      impl_->params().runner([this, run]() { Process(ReadyQueue(run)); });
    }
    expensive = &t;
  }
  if (expensive != nullptr) {
    if (inline_ready->empty()) {
      inline_ready->push_back(*expensive);
    } else {
      TaggedNode run = *expensive;
      impl_->params().runner([this, run]() { Process(ReadyQueue(run)); });
    }
  }
}

void ExecutorState::Finish() {
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    status = status_;
  }
  Executor::DoneCallback done = std::move(done_);
  delete this;
  done(status);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Executor>> NewLocalExecutor(const ExecutorParams& params,
                                                           std::unique_ptr<const Graph> graph) {
  ExecutorGraph executor_graph;
  absl::Status s = BuildExecutorGraph(params.device, std::move(graph), &executor_graph);
  if (!s.ok()) return s;
  return std::unique_ptr<Executor>(new ExecutorImpl(params, std::move(executor_graph)));
}

}  // namespace sluice
