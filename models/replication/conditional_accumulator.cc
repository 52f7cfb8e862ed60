// ConditionalAccumulator (see conditional_accumulator.h).
#include "models/replication/conditional_accumulator.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace sluice {

absl::StatusOr<std::shared_ptr<ConditionalAccumulator>> ConditionalAccumulator::Create(std::string name,
                                                                                       DataType dtype,
                                                                                       PartialShape shape,
                                                                                       Reduction reduction) {
  if (dtype != DT_FLOAT && dtype != DT_DOUBLE) {
    return absl::InvalidArgumentError(absl::StrCat("accumulator '", name, "': dtype ", DataTypeString(dtype),
                                                   " is not supported (float or double)"));
  }
  return std::shared_ptr<ConditionalAccumulator>(
      new ConditionalAccumulator(std::move(name), dtype, std::move(shape), reduction));
}

ConditionalAccumulator::ConditionalAccumulator(std::string name, DataType dtype, PartialShape shape,
                                               Reduction reduction)
    : name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)), reduction_(reduction) {}

ConditionalAccumulator::~ConditionalAccumulator() {
  // Nothing can still be waiting: a waiting taker's step holds a reference
  // through its kernel's lookup only until it is cancelled or served. Any
  // taker left here still gets its answer.
  std::deque<std::shared_ptr<Taker>> takers;
  {
    absl::MutexLock lock(&mu_);
    takers.swap(takers_);
  }
  for (auto& t : takers) {
    if (t->registered) t->cm->DeregisterCallback(t->token);
    t->done(absl::CancelledError(absl::StrCat("accumulator '", name_, "' was destroyed")), Tensor());
  }
}

namespace {

template <typename T>
void AddInto(Tensor* sum, const Tensor& g) {
  T* s = sum->data<T>();
  const T* x = g.data<T>();
  const int64_t n = g.NumElements();
  for (int64_t i = 0; i < n; ++i) s[i] += x[i];
}

template <typename T>
void Scale(Tensor* t, T factor_divisor) {
  T* s = t->data<T>();
  const int64_t n = t->NumElements();
  for (int64_t i = 0; i < n; ++i) s[i] /= factor_divisor;
}

}  // namespace

absl::Status ConditionalAccumulator::ApplyGradient(int64_t local_step, const Tensor& gradient) {
  if (gradient.dtype() != dtype_) {
    return absl::InvalidArgumentError(absl::StrCat("accumulator '", name_, "' holds ", DataTypeString(dtype_),
                                                   " gradients, got ", DataTypeString(gradient.dtype())));
  }
  if (!shape_.IsCompatibleWith(gradient.shape())) {
    return absl::InvalidArgumentError(absl::StrCat("accumulator '", name_, "' holds gradients of shape ",
                                                   shape_.DebugString(), ", got ", gradient.shape().DebugString()));
  }
  std::vector<std::function<void()>> ready;
  {
    absl::MutexLock lock(&mu_);
    if (local_step < step_) {
      ++stale_;
      return absl::OkStatus();
    }
    if (count_ == 0) {
      sum_ = gradient.Clone();
      sum_min_step_ = sum_max_step_ = local_step;
    } else {
      sum_min_step_ = std::min(sum_min_step_, local_step);
      sum_max_step_ = std::max(sum_max_step_, local_step);
      if (sum_.shape() != gradient.shape()) {
        return absl::InvalidArgumentError(absl::StrCat("accumulator '", name_, "' holds gradients of shape ",
                                                       sum_.shape().DebugString(), " this step, got ",
                                                       gradient.shape().DebugString()));
      }
      if (dtype_ == DT_FLOAT) {
        AddInto<float>(&sum_, gradient);
      } else {
        AddInto<double>(&sum_, gradient);
      }
    }
    ++count_;
    ServeTakersLocked(&ready);
  }
  for (auto& fn : ready) fn();
  return absl::OkStatus();
}

void ConditionalAccumulator::TryTakeGradient(int32_t num_required, CancellationManager* cm, TakeCallback done) {
  if (num_required < 1) {
    done(absl::InvalidArgumentError(
             absl::StrCat("accumulator '", name_, "': num_required must be >= 1, got ", num_required)),
         Tensor());
    return;
  }
  auto taker = std::make_shared<Taker>();
  taker->num_required = num_required;
  taker->done = std::move(done);
  taker->cm = cm;
  std::vector<std::function<void()>> ready;
  {
    absl::MutexLock lock(&mu_);
    taker->id = next_taker_++;
    if (cm != nullptr) {
      taker->token = cm->NewToken();
      std::weak_ptr<ConditionalAccumulator> weak = weak_from_this();
      const int64_t id = taker->id;
      taker->registered = cm->RegisterCallback(taker->token, [weak, id] {
        if (auto a = weak.lock()) a->Cancel(id);
      });
      if (!taker->registered) {
        ready.push_back([taker, this] {
          taker->done(absl::CancelledError(absl::StrCat("step cancelled before taking from accumulator '", name_, "'")),
                      Tensor());
        });
      }
    }
    if (ready.empty()) {
      takers_.push_back(taker);
      ServeTakersLocked(&ready);
    }
  }
  for (auto& fn : ready) fn();
}

void ConditionalAccumulator::ServeTakersLocked(std::vector<std::function<void()>>* ready) {
  if (takers_.empty() || count_ < takers_.front()->num_required) return;
  std::shared_ptr<Taker> taker = takers_.front();
  takers_.pop_front();
  Tensor result = std::move(sum_);
  if (reduction_ == Reduction::kMean && count_ > 1) {
    if (dtype_ == DT_FLOAT) {
      Scale<float>(&result, static_cast<float>(count_));
    } else {
      Scale<double>(&result, static_cast<double>(count_));
    }
  }
  sum_ = Tensor();
  last_taken_ = count_;
  count_ = 0;
  ++step_;
  ready->push_back([taker, result = std::move(result)]() mutable {
    if (taker->registered) taker->cm->DeregisterCallback(taker->token);
    taker->done(absl::OkStatus(), std::move(result));
  });
}

void ConditionalAccumulator::Cancel(int64_t id) {
  std::shared_ptr<Taker> taker;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = takers_.begin(); it != takers_.end(); ++it) {
      if ((*it)->id != id) continue;
      taker = *it;
      takers_.erase(it);
      break;
    }
  }
  if (taker != nullptr) {
    taker->done(absl::CancelledError(
                    absl::StrCat("taking from accumulator '", name_, "' was cancelled (the step aborted)")),
                Tensor());
  }
}

void ConditionalAccumulator::SetGlobalStep(int64_t step) {
  absl::MutexLock lock(&mu_);
  if (count_ > 0 && (sum_min_step_ != step || sum_max_step_ != step)) {
    stale_ += count_;
    count_ = 0;
    sum_ = Tensor();
  }
  step_ = step;
}

int32_t ConditionalAccumulator::num_accumulated() const {
  absl::MutexLock lock(&mu_);
  return count_;
}

int64_t ConditionalAccumulator::global_step() const {
  absl::MutexLock lock(&mu_);
  return step_;
}

int32_t ConditionalAccumulator::last_taken() const {
  absl::MutexLock lock(&mu_);
  return last_taken_;
}

int64_t ConditionalAccumulator::num_stale() const {
  absl::MutexLock lock(&mu_);
  return stale_;
}

std::string ConditionalAccumulator::DebugString() const {
  absl::MutexLock lock(&mu_);
  return absl::StrCat("ConditionalAccumulator ", name_, " (step ", step_, ", ", count_, " gradients, ", stale_,
                      " stale)");
}

}  // namespace sluice
