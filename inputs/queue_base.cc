// QueueBase: pending attempts, flushing, close and cancellation.
#include "inputs/queue_base.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {

struct QueueBase::Attempt {
  enum Kind { kEnqueue, kDequeue, kClose };
  Kind kind = kEnqueue;
  int64_t id = 0;
  std::vector<Slot> slots;  // enqueue: stored, to insert; dequeue: taken so far
  size_t next = 0;          // enqueue: slots[0, next) are in
  int32_t want = 1;             // dequeue: elements requested
  bool many = false;            // dequeue: stack into a batch
  bool allow_small = false;
  CancellationManager* cm = nullptr;
  CancellationManager::Token token = 0;
  bool registered = false;
  DoneCallback done;
  DequeueCallback dequeue_done;
};

QueueBase::QueueBase(std::string name, int32_t capacity, DataTypeVector component_types,
                     std::vector<PartialShape> shapes)
    : name_(std::move(name)),
      capacity_(capacity < 0 ? kUnbounded : capacity),
      component_types_(std::move(component_types)),
      shapes_(std::move(shapes)),
      handle_(DT_STRING, TensorShape({2})) {
  handle_.data<tstring>()[0] = "";
  handle_.data<tstring>()[1] = name_;
  rows_ = !component_types_.empty() && shapes_.size() == component_types_.size();
  size_t total = 0;
  for (size_t c = 0; rows_ && c < component_types_.size(); ++c) {
    const int64_t size = DataTypeSize(component_types_[c]);
    if (component_types_[c] == DT_STRING || size <= 0 || !shapes_[c].IsFullyDefined()) {
      rows_ = false;
      break;
    }
    auto shape = TensorShape::Build(shapes_[c].dims());
    if (!shape.ok() || shape->num_elements() > (int64_t{1} << 40) / size) {  // a row of 1 TiB: not a row
      rows_ = false;
      break;
    }
    row_bytes_.push_back(static_cast<size_t>(shape->num_elements() * size));
    element_shapes_.push_back(*std::move(shape));
    total += row_bytes_.back();
  }
  if (!rows_) {
    row_bytes_.clear();
    element_shapes_.clear();
  }
  // Segments of about 1 MiB (at least one row; no more rows than the
  // capacity, so a small queue stays small).
  constexpr int64_t kSegmentBytes = int64_t{1} << 20;
  slots_per_segment_ = total == 0 ? 4096 : std::max<int64_t>(1, kSegmentBytes / static_cast<int64_t>(total));
  slots_per_segment_ = std::min<int64_t>(slots_per_segment_, std::max<int32_t>(capacity_, 1));
}

QueueBase::~QueueBase() {
  std::vector<std::function<void()>> ready;
  {
    absl::MutexLock lock(&mu_);
    for (auto* list : {&enqueue_attempts_, &dequeue_attempts_}) {
      for (auto& a : *list) Finish(a, absl::CancelledError(absl::StrCat("queue '", name_, "' was destroyed")), &ready);
      list->clear();
    }
  }
  for (auto& fn : ready) fn();
}

std::string QueueBase::DebugString() const {
  return absl::StrCat(kind(), " '", name_, "' (size ", Size(), ", capacity ", capacity_, ")");
}

bool QueueBase::IsClosed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

absl::Status QueueBase::MatchesConfig(absl::string_view kind_name, const DataTypeVector& types,
                                      int32_t capacity) const {
  if (kind_name != kind() || types != component_types_ || (capacity < 0 ? kUnbounded : capacity) != capacity_) {
    std::vector<std::string> mine, theirs;
    for (DataType t : component_types_) mine.push_back(DataTypeString(t));
    for (DataType t : types) theirs.push_back(DataTypeString(t));
    return absl::InvalidArgumentError(absl::StrCat(
        "shared queue '", name_, "' is a ", kind(), " of (", absl::StrJoin(mine, ","), ") with capacity ", capacity_,
        "; this node asks for a ", kind_name, " of (", absl::StrJoin(theirs, ","), ") with capacity ", capacity));
  }
  return absl::OkStatus();
}

absl::Status QueueBase::ValidateElement(const Tuple& tuple, bool batched) const {
  if (tuple.size() != component_types_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("queue '", name_, "' has ", component_types_.size(),
                                                   " components, got ", tuple.size()));
  }
  for (size_t i = 0; i < tuple.size(); ++i) {
    if (tuple[i].dtype() != component_types_[i]) {
      return absl::InvalidArgumentError(absl::StrCat("queue '", name_, "' component ", i, " has type ",
                                                     DataTypeString(component_types_[i]), ", got ",
                                                     DataTypeString(tuple[i].dtype())));
    }
    TensorShape shape = tuple[i].shape();
    if (batched) {
      if (shape.dims() == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("queue '", name_, "': EnqueueMany component ", i, " must have a batch dimension"));
      }
      if (shape.dim_size(0) != tuple[0].dim_size(0)) {
        return absl::InvalidArgumentError(absl::StrCat("queue '", name_, "': EnqueueMany components have batch sizes ",
                                                       tuple[0].dim_size(0), " and ", shape.dim_size(0)));
      }
      auto element = TensorShape::Build(shape.dim_sizes().subspan(1));
      if (!element.ok()) return element.status();
      shape = *std::move(element);
    }
    if (!shapes_.empty() && !shapes_[i].IsCompatibleWith(shape)) {
      return absl::InvalidArgumentError(absl::StrCat("queue '", name_, "' component ", i, " has shape ",
                                                     shapes_[i].DebugString(), ", got an element of shape ",
                                                     shape.DebugString()));
    }
  }
  return absl::OkStatus();
}

void QueueBase::TryEnqueue(Tuple tuple, CancellationManager* cm, DoneCallback done) {
  absl::Status s = ValidateElement(tuple, false);
  if (!s.ok()) return done(s);
  auto a = std::make_shared<Attempt>();
  a->kind = Attempt::kEnqueue;
  s = StoreElements(std::move(tuple), false, &a->slots);
  if (!s.ok()) return done(s);
  a->cm = cm;
  a->done = std::move(done);
  Add(std::move(a));
}

void QueueBase::TryEnqueueMany(const Tuple& batch, CancellationManager* cm, DoneCallback done) {
  absl::Status s = ValidateElement(batch, true);
  if (!s.ok()) return done(s);
  auto a = std::make_shared<Attempt>();
  a->kind = Attempt::kEnqueue;
  s = StoreElements(batch, true, &a->slots);
  if (!s.ok()) return done(s);
  a->cm = cm;
  a->done = std::move(done);
  Add(std::move(a));
}

void QueueBase::TryDequeue(CancellationManager* cm, DequeueCallback done) {
  auto a = std::make_shared<Attempt>();
  a->kind = Attempt::kDequeue;
  a->cm = cm;
  a->dequeue_done = std::move(done);
  Add(std::move(a));
}

void QueueBase::TryDequeueMany(int32_t num, bool allow_small_batch, CancellationManager* cm, DequeueCallback done) {
  if (num < 0) return done(absl::InvalidArgumentError(absl::StrCat("DequeueMany of ", num, " elements")), {});
  if (component_types_.empty()) return done(absl::InvalidArgumentError("queue has no components"), {});
  auto a = std::make_shared<Attempt>();
  a->kind = Attempt::kDequeue;
  a->want = num;
  a->many = true;
  a->allow_small = allow_small_batch;
  a->cm = cm;
  a->dequeue_done = std::move(done);
  Add(std::move(a));
}

void QueueBase::Close(bool cancel_pending_enqueues, DoneCallback done) {
  std::vector<std::function<void()>> ready;
  {
    absl::MutexLock lock(&mu_);
    if (cancel_pending_enqueues) {
      closed_ = true;
      for (auto& a : enqueue_attempts_) {
        Finish(a,
               a->kind == Attempt::kClose
                   ? absl::OkStatus()
                   : absl::CancelledError(absl::StrCat("enqueue to queue '", name_, "' was cancelled by a close")),
               &ready);
      }
      enqueue_attempts_.clear();
      FlushLocked(&ready);
    }
  }
  for (auto& fn : ready) fn();
  if (cancel_pending_enqueues) return done(absl::OkStatus());
  // Behind the pending enqueues: they complete first, then the queue closes.
  auto a = std::make_shared<Attempt>();
  a->kind = Attempt::kClose;
  a->done = std::move(done);
  Add(std::move(a));
}

void QueueBase::Add(std::shared_ptr<Attempt> a) {
  std::vector<std::function<void()>> ready;
  {
    absl::MutexLock lock(&mu_);
    a->id = next_attempt_id_++;
    if (a->cm != nullptr) {
      a->token = a->cm->NewToken();
      std::weak_ptr<QueueBase> weak = weak_from_this();
      int64_t id = a->id;
      a->registered = a->cm->RegisterCallback(a->token, [weak, id] {
        if (auto q = weak.lock()) q->Cancel(id);
      });
      if (!a->registered) {
        Finish(a, absl::CancelledError(absl::StrCat("step cancelled before using queue '", name_, "'")), &ready);
      }
    }
    if (ready.empty()) {
      (a->kind == Attempt::kDequeue ? dequeue_attempts_ : enqueue_attempts_).push_back(std::move(a));
      FlushLocked(&ready);
    }
  }
  for (auto& fn : ready) fn();
}

void QueueBase::Cancel(int64_t attempt_id) {
  std::vector<std::function<void()>> ready;
  {
    absl::MutexLock lock(&mu_);
    for (auto* list : {&enqueue_attempts_, &dequeue_attempts_}) {
      for (auto it = list->begin(); it != list->end(); ++it) {
        if ((*it)->id != attempt_id) continue;
        std::shared_ptr<Attempt> a = *it;
        list->erase(it);
        if (a->kind == Attempt::kDequeue && !a->slots.empty()) RestoreLocked(std::move(a->slots));
        if (a->kind == Attempt::kDequeue) a->slots.clear();
        const char* what = a->kind == Attempt::kDequeue ? "dequeue from" : a->kind == Attempt::kClose ? "close of"
                                                                                                      : "enqueue to";
        Finish(a, absl::CancelledError(absl::StrCat(what, " queue '", name_, "' was cancelled (the step aborted)")),
               &ready);
        FlushLocked(&ready);
        goto finished;
      }
    }
  }
finished:
  for (auto& fn : ready) fn();
}

void QueueBase::FlushLocked(std::vector<std::function<void()>>* ready) {
  bool progress = true;
  while (progress) {
    progress = false;
    while (!dequeue_attempts_.empty()) {
      std::shared_ptr<Attempt> a = dequeue_attempts_.front();
      while (static_cast<int32_t>(a->slots.size()) < a->want && CanPopLocked()) {
        a->slots.push_back(PopLocked());
        progress = true;
      }
      if (static_cast<int32_t>(a->slots.size()) == a->want) {
        dequeue_attempts_.pop_front();
        Finish(a, absl::OkStatus(), ready);
        progress = true;
        continue;
      }
      if (closed_ && !CanPopLocked()) {
        dequeue_attempts_.pop_front();
        if (a->allow_small && !a->slots.empty()) {
          Finish(a, absl::OkStatus(), ready);
        } else {
          size_t had = a->slots.size();
          RestoreLocked(std::move(a->slots));
          a->slots.clear();
          Finish(a,
                 absl::OutOfRangeError(absl::StrCat("queue '", name_, "' is closed and has insufficient elements "
                                                    "(requested ",
                                                    a->want, ", current size ", had + SizeLocked(), ")")),
                 ready);
        }
        progress = true;
        continue;
      }
      break;
    }
    while (!enqueue_attempts_.empty()) {
      std::shared_ptr<Attempt> a = enqueue_attempts_.front();
      if (a->kind == Attempt::kClose) {
        closed_ = true;
        enqueue_attempts_.pop_front();
        Finish(a, absl::OkStatus(), ready);
        progress = true;
        continue;
      }
      if (closed_) {
        enqueue_attempts_.pop_front();
        Finish(a, absl::CancelledError(absl::StrCat("queue '", name_, "' is closed")), ready);
        progress = true;
        continue;
      }
      while (a->next < a->slots.size() && SizeLocked() < static_cast<size_t>(capacity_)) {
        PushLocked(a->slots[a->next++]);
        progress = true;
      }
      if (a->next == a->slots.size()) {
        enqueue_attempts_.pop_front();
        Finish(a, absl::OkStatus(), ready);
        progress = true;
        continue;
      }
      break;
    }
  }
  size_.store(static_cast<int32_t>(SizeLocked()), std::memory_order_release);
}

void QueueBase::Finish(const std::shared_ptr<Attempt>& a, absl::Status s, std::vector<std::function<void()>>* ready) {
  CancellationManager* cm = a->registered ? a->cm : nullptr;
  CancellationManager::Token token = a->token;
  if (a->kind != Attempt::kDequeue) {
    // Elements a failed or cancelled enqueue did not insert are dropped.
    if (a->next < a->slots.size()) FreeSlotsLocked(a->slots.data() + a->next, a->slots.size() - a->next);
    a->slots.clear();
    ready->push_back([cm, token, s, done = std::move(a->done)] {
      if (cm != nullptr) cm->DeregisterCallback(token);
      done(s);
    });
    return;
  }
  if (!s.ok() || rows_) {
    // A failed dequeue restored what it had taken (except in ~QueueBase);
    // rows are gathered here, before their slots can be reused.
    absl::StatusOr<Tuple> result = s.ok() ? GatherRowsLocked(a->slots, a->many) : absl::StatusOr<Tuple>(s);
    FreeSlotsLocked(a->slots.data(), a->slots.size());
    a->slots.clear();
    ready->push_back([cm, token, result = std::move(result), done = std::move(a->dequeue_done)]() mutable {
      if (cm != nullptr) cm->DeregisterCallback(token);
      if (!result.ok()) return done(result.status(), {});
      done(absl::OkStatus(), *std::move(result));
    });
    return;
  }
  std::vector<Tuple> elements;
  elements.reserve(a->slots.size());
  for (Slot slot : a->slots) elements.push_back(std::move(tuples_[slot]));
  FreeSlotsLocked(a->slots.data(), a->slots.size());
  a->slots.clear();
  // Stacking happens outside the lock, in the ready callback.
  std::shared_ptr<QueueBase> self = a->many ? shared_from_this() : nullptr;
  ready->push_back([self, cm, token, many = a->many, elements = std::move(elements),
                    done = std::move(a->dequeue_done)]() mutable {
    if (cm != nullptr) cm->DeregisterCallback(token);
    if (!many) return done(absl::OkStatus(), std::move(elements[0]));
    Tuple batch;
    for (size_t c = 0; c < self->component_types_.size(); ++c) {
      auto t = self->BatchComponent(elements, static_cast<int>(c));
      if (!t.ok()) return done(t.status(), {});
      batch.push_back(std::move(t).value());
    }
    done(absl::OkStatus(), std::move(batch));
  });
}

absl::Status QueueBase::StoreElements(Tuple tuple, bool batched, std::vector<Slot>* slots) {
  const int64_t n = !batched ? 1 : tuple.empty() ? 0 : tuple[0].dim_size(0);
  const size_t nc = component_types_.size();
  if (rows_) {
    std::vector<char*> dst;
    dst.reserve(static_cast<size_t>(n) * nc);
    {
      absl::MutexLock lock(&mu_);
      absl::Status s = AllocateSlotsLocked(n, slots);
      if (!s.ok()) return s;
      for (Slot slot : *slots) {
        for (size_t c = 0; c < nc; ++c) dst.push_back(RowLocked(slot, static_cast<int>(c)));
      }
    }
    // The slots are this caller's until pushed, so the copies need no lock.
    for (int64_t i = 0; i < n; ++i) {
      for (size_t c = 0; c < nc; ++c) {
        if (row_bytes_[c] == 0) continue;
        std::memcpy(dst[i * nc + c], static_cast<const char*>(tuple[c].raw_data()) + i * row_bytes_[c], row_bytes_[c]);
      }
    }
    return absl::OkStatus();
  }
  std::vector<Tuple> elements;
  if (batched) {
    elements.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      for (const Tensor& component : tuple) {
        auto e = SliceElement(component, i);
        if (!e.ok()) return e.status();
        elements[i].push_back(std::move(e).value());
      }
    }
  } else {
    elements.push_back(std::move(tuple));
  }
  absl::MutexLock lock(&mu_);
  absl::Status s = AllocateSlotsLocked(n, slots);
  if (!s.ok()) return s;
  for (int64_t i = 0; i < n; ++i) tuples_[(*slots)[i]] = std::move(elements[i]);
  return absl::OkStatus();
}

absl::Status QueueBase::AllocateSlotsLocked(int64_t n, std::vector<Slot>* slots) {
  slots->clear();
  slots->reserve(n);
  while (static_cast<int64_t>(slots->size()) < n && !free_slots_.empty()) {
    slots->push_back(free_slots_.back());
    free_slots_.pop_back();
  }
  while (static_cast<int64_t>(slots->size()) < n) {
    if (rows_ && num_slots_ % slots_per_segment_ == 0) {
      Tuple segment;
      for (size_t c = 0; c < component_types_.size(); ++c) {
        auto t = Tensor::Allocate(CpuAllocator(), component_types_[c],
                                  TensorShape({slots_per_segment_ * element_shapes_[c].num_elements()}));
        if (!t.ok()) {
          FreeSlotsLocked(slots->data(), slots->size());
          slots->clear();
          return absl::ResourceExhaustedError(
              absl::StrCat("queue '", name_, "': no memory for ", n, " more elements: ", t.status().message()));
        }
        segment.push_back(std::move(t).value());
      }
      segments_.push_back(std::move(segment));
    }
    if (!rows_) tuples_.emplace_back();
    slots->push_back(num_slots_++);
  }
  return absl::OkStatus();
}

void QueueBase::FreeSlotsLocked(const Slot* slots, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!rows_) tuples_[slots[i]] = Tuple();
    free_slots_.push_back(slots[i]);
  }
}

char* QueueBase::RowLocked(Slot slot, int c) const {
  return static_cast<char*>(segments_[slot / slots_per_segment_][c].raw_data()) +
         (slot % slots_per_segment_) * row_bytes_[c];
}

absl::StatusOr<QueueBase::Tuple> QueueBase::GatherRowsLocked(const std::vector<Slot>& slots, bool many) const {
  Tuple out;
  for (size_t c = 0; c < component_types_.size(); ++c) {
    TensorShape shape = element_shapes_[c];
    if (many) {
      shape = TensorShape({static_cast<int64_t>(slots.size())});
      for (int64_t d : element_shapes_[c].dim_sizes()) {
        absl::Status s = shape.TryAddDim(d);
        if (!s.ok()) {
          return absl::InvalidArgumentError(absl::StrCat("queue '", name_, "': a batch of ", slots.size(),
                                                         " elements of shape ", element_shapes_[c].DebugString(),
                                                         ": ", s.message()));
        }
      }
    }
    auto t = Tensor::Allocate(CpuAllocator(), component_types_[c], shape);
    if (!t.ok()) return t.status();
    const size_t bytes = row_bytes_[c];
    char* dst = static_cast<char*>(t->raw_data());
    // The slots are scattered over the store (a shuffle queue's random picks
    // from 15 MB for Fashion-MNIST): each row's cache lines are requested
    // kPrefetchAhead rows before its copy, so the misses overlap.
    constexpr size_t kPrefetchAhead = 8;
    for (size_t i = 0; i < slots.size() && bytes > 0; ++i) {
      if (i + kPrefetchAhead < slots.size()) {
        const char* ahead = RowLocked(slots[i + kPrefetchAhead], static_cast<int>(c));
        for (size_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(ahead + offset);
      }
      std::memcpy(dst + i * bytes, RowLocked(slots[i], static_cast<int>(c)), bytes);
    }
    out.push_back(std::move(t).value());
  }
  return out;
}

absl::StatusOr<Tensor> QueueBase::BatchComponent(const std::vector<Tuple>& elements, int c) const {
  TensorShape element_shape;
  if (!elements.empty()) {
    element_shape = elements[0][c].shape();
  } else if (!shapes_.empty() && shapes_[c].IsFullyDefined()) {
    auto declared = TensorShape::Build(shapes_[c].dims());
    if (!declared.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("queue '", name_, "' component ", c, ": ",
                                                     declared.status().message()));
    }
    element_shape = *std::move(declared);
  }
  for (const Tuple& e : elements) {
    if (e[c].shape() != element_shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("queue '", name_, "': DequeueMany needs elements of one shape, component ", c, " has shapes ",
                       element_shape.DebugString(), " and ", e[c].shape().DebugString(),
                       " (a PaddingFIFOQueue pads them)"));
    }
  }
  TensorShape batch_shape({static_cast<int64_t>(elements.size())});
  for (int64_t d : element_shape.dim_sizes()) {
    absl::Status s = batch_shape.TryAddDim(d);
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("queue '", name_, "': a batch of ", elements.size(),
                                                     " elements of shape ", element_shape.DebugString(), ": ",
                                                     s.message()));
    }
  }
  auto batch = Tensor::Allocate(CpuAllocator(), component_types_[c], batch_shape);
  if (!batch.ok()) return batch.status();
  for (size_t i = 0; i < elements.size(); ++i) CopyElementInto(elements[i][c], &*batch, static_cast<int64_t>(i));
  return batch;
}

absl::StatusOr<Tensor> SliceElement(const Tensor& batch, int64_t i) {
  auto element = TensorShape::Build(batch.shape().dim_sizes().subspan(1));
  if (!element.ok()) return element.status();
  const TensorShape& shape = *element;
  auto out = Tensor::Allocate(CpuAllocator(), batch.dtype(), shape);
  if (!out.ok()) return out.status();
  const int64_t n = shape.num_elements();
  if (batch.dtype() == DT_STRING) {
    const tstring* src = batch.data<tstring>() + i * n;
    std::copy(src, src + n, out->data<tstring>());
  } else {
    const size_t bytes = static_cast<size_t>(n) * DataTypeSize(batch.dtype());
    if (bytes > 0) std::memcpy(out->raw_data(), static_cast<const char*>(batch.raw_data()) + i * bytes, bytes);
  }
  return out;
}

void CopyElementInto(const Tensor& element, Tensor* batch, int64_t i) {
  const int64_t n = element.NumElements();
  if (element.dtype() == DT_STRING) {
    std::copy(element.data<tstring>(), element.data<tstring>() + n, batch->data<tstring>() + i * n);
  } else {
    const size_t bytes = static_cast<size_t>(n) * DataTypeSize(element.dtype());
    if (bytes > 0) std::memcpy(static_cast<char*>(batch->raw_data()) + i * bytes, element.raw_data(), bytes);
  }
}

}  // namespace sluice
