// QueueBase: a bounded queue of tuples of tensors shared between steps
// (whitepaper §4.6), the state behind FIFOQueue, RandomShuffleQueue and
// PaddingFIFOQueue. Enqueue and dequeue never block a thread: a request that
// cannot finish yet becomes a pending "attempt" and its callback runs later,
// on whichever thread makes progress possible (an enqueue, a dequeue, a close
// or a cancellation). Attempts are served in arrival order per side.
//
// Semantics (TensorFlow's):
//  - Enqueue waits while the queue is at capacity; EnqueueMany inserts the
//    elements as room appears and finishes when all are in.
//  - Dequeue waits until an element can be taken (for a shuffle queue: more
//    than min_after_dequeue are present, or the queue is closed); DequeueMany
//    collects n elements; DequeueUpTo returns fewer once the queue is closed.
//  - Close(cancel_pending_enqueues=false): pending enqueues still complete
//    first, then the queue is closed; later enqueues fail with Cancelled.
//    Close(true): pending enqueues fail with Cancelled at once.
//  - A dequeue that cannot be satisfied by a closed queue fails with
//    OutOfRange (the end of input); elements it had collected go back.
//  - A pending attempt registered with a CancellationManager fails with
//    Cancelled when that manager cancels (its step aborted).
//
// Ownership: created with std::make_shared (the resource manager shares it).
// Thread safety: all methods may be called concurrently. Callbacks run
// without the queue's lock held and may call back into the queue.
#ifndef SLUICE_INPUTS_QUEUE_BASE_H_
#define SLUICE_INPUTS_QUEUE_BASE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/cancellation.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/resource_mgr.h"
#include "engine/framework/shape_inference.h"
#include "engine/framework/tensor.h"

namespace sluice {

class QueueBase : public ResourceBase, public std::enable_shared_from_this<QueueBase> {
 public:
  using Tuple = std::vector<Tensor>;
  using DoneCallback = std::function<void(const absl::Status&)>;
  using DequeueCallback = std::function<void(const absl::Status&, Tuple)>;
  static constexpr int32_t kUnbounded = INT32_MAX;

  // `shapes` is empty (any shapes) or one partial shape per component.
  QueueBase(std::string name, int32_t capacity, DataTypeVector component_types, std::vector<PartialShape> shapes);
  ~QueueBase() override;

  // One element (component i has component_types()[i] and shapes()[i]).
  void TryEnqueue(Tuple tuple, CancellationManager* cm, DoneCallback done);
  // A batch: every component has the same dim 0 (the number of elements).
  void TryEnqueueMany(const Tuple& batch, CancellationManager* cm, DoneCallback done);
  void TryDequeue(CancellationManager* cm, DequeueCallback done);
  // `num` elements stacked along a new dim 0 (fewer, once closed, when
  // allow_small_batch).
  void TryDequeueMany(int32_t num, bool allow_small_batch, CancellationManager* cm, DequeueCallback done);
  void Close(bool cancel_pending_enqueues, DoneCallback done);

  // The number of elements after the latest change, without taking the
  // queue's lock: QueueSize runs every step beside a DequeueMany, which holds
  // the lock while it gathers its batch (with the lock, fashion_mlp's
  // QueueSize node waited 127-146 us in a trace; now 2-3 us).
  int32_t Size() const { return size_.load(std::memory_order_acquire); }
  bool IsClosed() const;
  const std::string& name() const { return name_; }
  int32_t capacity() const { return capacity_; }
  const DataTypeVector& component_types() const { return component_types_; }
  const std::vector<PartialShape>& shapes() const { return shapes_; }

  // The [container, name] string tensor that queue ops output by reference,
  // and the mutex guarding it.
  Tensor* handle() { return &handle_; }
  absl::Mutex* handle_mu() { return &handle_mu_; }

  std::string DebugString() const override;

  // For a queue found under a shared name: InvalidArgument unless a node asking
  // for it declares the same kind, component types and capacity.
  absl::Status MatchesConfig(absl::string_view kind, const DataTypeVector& types, int32_t capacity) const;
  virtual absl::string_view kind() const = 0;

 protected:
  // A queued element's place in the queue's storage. The queue owns the
  // element data; subclasses keep the order of slots, called with mu_ held.
  using Slot = int64_t;
  virtual size_t SizeLocked() const = 0;
  virtual void PushLocked(Slot element) = 0;
  // REQUIRES: CanPopLocked().
  virtual Slot PopLocked() = 0;
  // Can a dequeue take an element now? (FIFO: non-empty.)
  virtual bool CanPopLocked() const { return SizeLocked() > 0; }
  // Puts back elements a failed or cancelled dequeue had taken, oldest first.
  virtual void RestoreLocked(std::vector<Slot> elements) = 0;
  // Stacks component `c` of `elements` into one tensor with a new dim 0.
  // Used when elements are stored as tuples (some shape not fully defined, or
  // a string component); fixed-shape elements are gathered from their rows.
  virtual absl::StatusOr<Tensor> BatchComponent(const std::vector<Tuple>& elements, int c) const;

  bool closed_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_; }
  mutable absl::Mutex mu_;

 private:
  struct Attempt;
  absl::Status ValidateElement(const Tuple& tuple, bool batched) const;
  // Adds a pending attempt (or fails it at once when cm already cancelled).
  void Add(std::shared_ptr<Attempt> attempt);
  // Moves elements between attempts and storage until nothing changes;
  // finished attempts' callbacks go to *ready.
  void FlushLocked(std::vector<std::function<void()>>* ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finish(const std::shared_ptr<Attempt>& a, absl::Status s, std::vector<std::function<void()>>* ready)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Cancel(int64_t attempt_id);

  // Element storage. With every component of a fully defined shape and not a
  // string ("rows"), element data lives in preallocated segments, a row per
  // slot per component: enqueueing copies rows in and DequeueMany gathers
  // them into one batch tensor, with no allocation per element. Otherwise a
  // slot holds the element's tuple. Freed slots are reused (last freed
  // first); segments are kept until the queue is destroyed, so memory stays
  // at the most elements held at once (queued, and in pending attempts).
  // Copies element data into new slots (outside mu_ for rows); `batched`: the
  // components hold elements along dim 0.
  absl::Status StoreElements(Tuple tuple, bool batched, std::vector<Slot>* slots);
  absl::Status AllocateSlotsLocked(int64_t n, std::vector<Slot>* slots) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FreeSlotsLocked(const Slot* slots, size_t n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  char* RowLocked(Slot slot, int c) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The result of a finished dequeue (rows: gathered here, under mu_).
  absl::StatusOr<Tuple> GatherRowsLocked(const std::vector<Slot>& slots, bool many) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  bool rows_ = false;
  std::vector<TensorShape> element_shapes_;  // rows only
  std::vector<size_t> row_bytes_;            // rows only, per component
  int64_t slots_per_segment_ = 1;
  std::vector<Tuple> segments_ ABSL_GUARDED_BY(mu_);  // rows: one buffer per component
  std::vector<Tuple> tuples_ ABSL_GUARDED_BY(mu_);    // tuples: slot -> element
  std::vector<Slot> free_slots_ ABSL_GUARDED_BY(mu_);
  int64_t num_slots_ ABSL_GUARDED_BY(mu_) = 0;

  const std::string name_;
  const int32_t capacity_;
  const DataTypeVector component_types_;
  const std::vector<PartialShape> shapes_;
  absl::Mutex handle_mu_;
  Tensor handle_;

  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_attempt_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<std::shared_ptr<Attempt>> enqueue_attempts_ ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<Attempt>> dequeue_attempts_ ABSL_GUARDED_BY(mu_);
  // SizeLocked() as of the end of the latest FlushLocked, through which every
  // push, pop and restore goes; written under mu_, read without it.
  std::atomic<int32_t> size_{0};
};

// Tensor helpers shared by queues and batching kernels.
// Element i of `batch` along dim 0 (a deep copy).
absl::StatusOr<Tensor> SliceElement(const Tensor& batch, int64_t i);
// Copies `element` into row i of `batch` (shapes must agree).
void CopyElementInto(const Tensor& element, Tensor* batch, int64_t i);

}  // namespace sluice

#endif  // SLUICE_INPUTS_QUEUE_BASE_H_
