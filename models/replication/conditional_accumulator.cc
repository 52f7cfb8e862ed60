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
      new ConditionalAccumulator(std::move(name), dtype, std::move(shape), reduction, /*sparse=*/false));
}

absl::StatusOr<std::shared_ptr<ConditionalAccumulator>> ConditionalAccumulator::CreateSparse(std::string name,
                                                                                             DataType dtype,
                                                                                             PartialShape shape,
                                                                                             Reduction reduction) {
  if (dtype != DT_FLOAT && dtype != DT_DOUBLE) {
    return absl::InvalidArgumentError(absl::StrCat("accumulator '", name, "': dtype ", DataTypeString(dtype),
                                                   " is not supported (float or double)"));
  }
  if (shape.rank_known() && shape.rank() < 1) {
    return absl::InvalidArgumentError(absl::StrCat("sparse accumulator '", name, "': the shape ", shape.DebugString(),
                                                    " has no rows (rank 0)"));
  }
  return std::shared_ptr<ConditionalAccumulator>(
      new ConditionalAccumulator(std::move(name), dtype, std::move(shape), reduction, /*sparse=*/true));
}

ConditionalAccumulator::ConditionalAccumulator(std::string name, DataType dtype, PartialShape shape,
                                               Reduction reduction, bool sparse)
    : name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)), reduction_(reduction), sparse_(sparse) {}

void ConditionalAccumulator::Fail(Taker& taker, const absl::Status& status) {
  if (taker.sparse_done) {
    taker.sparse_done(status, Tensor(), Tensor());
  } else {
    taker.done(status, Tensor());
  }
}

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
    Fail(*t, absl::CancelledError(absl::StrCat("accumulator '", name_, "' was destroyed")));
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
  if (sparse_) {
    return absl::InvalidArgumentError(absl::StrCat("accumulator '", name_, "' is sparse: apply rows with indices"));
  }
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

absl::Status ConditionalAccumulator::ApplySparseGradient(int64_t local_step, const Tensor& indices,
                                                         const Tensor& values) {
  const std::string who = absl::StrCat("sparse accumulator '", name_, "'");
  if (!sparse_) return absl::InvalidArgumentError(absl::StrCat("accumulator '", name_, "' is dense: apply a tensor"));
  if (indices.dtype() != DT_INT64 || indices.dims() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": indices must be an int64 vector, got ",
                                                   DataTypeString(indices.dtype()), " ", indices.shape().DebugString()));
  }
  if (values.dtype() != dtype_) {
    return absl::InvalidArgumentError(absl::StrCat(who, " holds ", DataTypeString(dtype_), " gradients, got ",
                                                   DataTypeString(values.dtype())));
  }
  const int64_t n = indices.dim_size(0);
  if (values.dims() < 1 || values.dim_size(0) != n) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": values ", values.shape().DebugString(), " must have one row per index (",
                                                   n, ")"));
  }
  std::vector<int64_t> row_dims(values.shape().dim_sizes().begin() + 1, values.shape().dim_sizes().end());
  if (shape_.rank_known()) {
    bool fits = shape_.rank() == values.dims();
    for (int d = 1; fits && d < shape_.rank(); ++d) fits = shape_.dim(d) < 0 || shape_.dim(d) == values.dim_size(d);
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat(who, " holds rows of ", shape_.DebugString(), ", got values ",
                                                     values.shape().DebugString()));
    }
  }
  const int64_t* idx = indices.data<int64_t>();
  const int64_t rows = shape_.rank_known() ? shape_.dim(0) : -1;
  for (int64_t i = 0; i < n; ++i) {
    if (idx[i] < 0 || (rows >= 0 && idx[i] >= rows)) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": index ", idx[i], " at position ", i,
                                                     " is out of range [0, ", rows, ")"));
    }
  }
  const int64_t width = n == 0 ? 0 : values.NumElements() / n;
  std::vector<std::function<void()>> ready;
  {
    absl::MutexLock lock(&mu_);
    if (local_step < step_) {
      ++stale_;
      return absl::OkStatus();
    }
    if (count_ == 0) {
      sum_min_step_ = sum_max_step_ = local_step;
      row_dims_ = row_dims;
      rows_.clear();
    } else {
      if (row_dims != row_dims_) {
        std::vector<int64_t> want = {n};
        want.insert(want.end(), row_dims_.begin(), row_dims_.end());
        return absl::InvalidArgumentError(absl::StrCat(who, " holds rows shaped as in ",
                                                       TensorShape(absl::Span<const int64_t>(want)).DebugString(),
                                                       " this step, got values ", values.shape().DebugString()));
      }
      sum_min_step_ = std::min(sum_min_step_, local_step);
      sum_max_step_ = std::max(sum_max_step_, local_step);
    }
    for (int64_t i = 0; i < n; ++i) {
      auto [it, fresh] = rows_.try_emplace(idx[i]);
      std::vector<double>& row = it->second;
      if (fresh) row.assign(width, 0.0);
      for (int64_t j = 0; j < width; ++j) {
        const double x = dtype_ == DT_FLOAT ? values.data<float>()[i * width + j] : values.data<double>()[i * width + j];
        // Rounded to dtype after each addition: float sums stay float sums.
        row[j] = fresh ? x : (dtype_ == DT_FLOAT ? static_cast<double>(static_cast<float>(row[j] + x)) : row[j] + x);
      }
    }
    ++count_;
    ServeTakersLocked(&ready);
  }
  for (auto& fn : ready) fn();
  return absl::OkStatus();
}

void ConditionalAccumulator::TakeSparseLocked(Tensor* indices, Tensor* values) {
  const int64_t k = static_cast<int64_t>(rows_.size());
  int64_t width = 1;
  for (int64_t d : row_dims_) width *= d;
  std::vector<int64_t> dims = {k};
  dims.insert(dims.end(), row_dims_.begin(), row_dims_.end());
  *indices = Tensor(DT_INT64, TensorShape({k}));
  *values = Tensor(dtype_, TensorShape(absl::Span<const int64_t>(dims)));
  const bool mean = reduction_ == Reduction::kMean && count_ > 1;
  int64_t r = 0;
  for (const auto& [index, row] : rows_) {
    indices->data<int64_t>()[r] = index;
    for (int64_t j = 0; j < width; ++j) {
      if (dtype_ == DT_FLOAT) {
        const float s = static_cast<float>(row[j]);
        values->data<float>()[r * width + j] = mean ? s / static_cast<float>(count_) : s;
      } else {
        values->data<double>()[r * width + j] = mean ? row[j] / static_cast<double>(count_) : row[j];
      }
    }
    ++r;
  }
  rows_.clear();
  last_taken_ = count_;
  count_ = 0;
  ++step_;
}

void ConditionalAccumulator::TryTakeGradient(int32_t num_required, CancellationManager* cm, TakeCallback done) {
  auto taker = std::make_shared<Taker>();
  taker->num_required = num_required;
  taker->done = std::move(done);
  taker->cm = cm;
  if (sparse_) {
    Fail(*taker, absl::InvalidArgumentError(absl::StrCat("accumulator '", name_, "' is sparse: take rows")));
    return;
  }
  AddTaker(std::move(taker));
}

void ConditionalAccumulator::TryTakeSparseGradient(int32_t num_required, CancellationManager* cm,
                                                   SparseTakeCallback done) {
  auto taker = std::make_shared<Taker>();
  taker->num_required = num_required;
  taker->sparse_done = std::move(done);
  taker->cm = cm;
  if (!sparse_) {
    Fail(*taker, absl::InvalidArgumentError(absl::StrCat("accumulator '", name_, "' is dense: take a tensor")));
    return;
  }
  AddTaker(std::move(taker));
}

void ConditionalAccumulator::AddTaker(std::shared_ptr<Taker> taker) {
  if (taker->num_required < 1) {
    Fail(*taker, absl::InvalidArgumentError(
                     absl::StrCat("accumulator '", name_, "': num_required must be >= 1, got ", taker->num_required)));
    return;
  }
  CancellationManager* cm = taker->cm;
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
          Fail(*taker, absl::CancelledError(absl::StrCat("step cancelled before taking from accumulator '", name_, "'")));
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
  if (sparse_) {
    Tensor indices, values;
    TakeSparseLocked(&indices, &values);
    ready->push_back([taker, indices = std::move(indices), values = std::move(values)]() mutable {
      if (taker->registered) taker->cm->DeregisterCallback(taker->token);
      taker->sparse_done(absl::OkStatus(), std::move(indices), std::move(values));
    });
    return;
  }
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
    Fail(*taker, absl::CancelledError(
                     absl::StrCat("taking from accumulator '", name_, "' was cancelled (the step aborted)")));
  }
}

void ConditionalAccumulator::SetGlobalStep(int64_t step) {
  absl::MutexLock lock(&mu_);
  if (count_ > 0 && (sum_min_step_ != step || sum_max_step_ != step)) {
    stale_ += count_;
    count_ = 0;
    sum_ = Tensor();
    rows_.clear();
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
