// ReaderBase: the work loop over file names, and state save/restore.
#include "inputs/reader_base.h"

#include "absl/strings/str_cat.h"
#include "inputs/reader_state.pb.h"

namespace sluice {

ReaderBase::ReaderBase(std::string reader_type, std::string name, Env* env)
    : reader_type_(std::move(reader_type)), name_(std::move(name)), env_(env), handle_(DT_STRING, TensorShape({2})) {}

std::string ReaderBase::DebugString() const {
  absl::MutexLock lock(&mu_);
  return absl::StrCat(reader_type_, " '", name_, "' (", records_, " records, file '", current_, "')");
}

int64_t ReaderBase::NumRecordsProduced() const {
  absl::MutexLock lock(&mu_);
  return records_;
}

int64_t ReaderBase::NumWorkUnitsCompleted() const {
  absl::MutexLock lock(&mu_);
  return work_finished_;
}

void ReaderBase::Reset() {
  absl::MutexLock lock(&mu_);
  if (has_work_) CloseLocked();
  has_work_ = false;
  current_.clear();
  pending_.clear();
  work_started_ = work_finished_ = records_ = 0;
  records_at_open_ = empty_in_a_row_ = 0;
}

bool ReaderBase::TryReadLocked(absl::Status* s, std::string* key, std::string* value, bool open_next) {
  while (true) {
    if (!has_work_) {
      if (!open_next || pending_.empty()) return false;
      current_ = pending_.front();
      pending_.pop_front();
      ++work_started_;
      records_at_open_ = records_;
      *s = OpenLocked(current_, 0);
      if (!s->ok()) {
        // The file stays "done" so a later read moves on to the next one.
        ++work_finished_;
        return true;
      }
      has_work_ = true;
    }
    bool produced = false, at_end = false;
    *s = ReadLocked(key, value, &produced, &at_end);
    if (!s->ok()) return true;
    if (produced) {
      ++records_;
      empty_in_a_row_ = 0;
      return true;
    }
    if (at_end) {
      CloseLocked();
      has_work_ = false;
      const std::string finished = std::move(current_);
      current_.clear();
      ++work_finished_;
      if (records_ == records_at_open_ && empty_work_limit_ > 0 && ++empty_in_a_row_ >= empty_work_limit_) {
        *s = absl::FailedPreconditionError(absl::StrCat("reader '", name_, "': the last ", empty_in_a_row_,
                                                        " files read held no record (the last: ", finished,
                                                        "): are the input files empty?"));
        empty_in_a_row_ = 0;
        return true;
      }
    }
  }
}

void ReaderBase::FetchWorkAsync(std::shared_ptr<QueueBase> queue, CancellationManager* cm,
                                std::function<void(const absl::Status&)> next) {
  const DataTypeVector& types = queue->component_types();
  if (types.size() != 1 || types[0] != DT_STRING) {
    return next(absl::InvalidArgumentError(
        absl::StrCat("reader '", name_, "': queue '", queue->name(), "' must hold single strings (file names)")));
  }
  std::shared_ptr<ReaderBase> self = shared_from_this();
  queue->TryDequeue(cm, [self, next = std::move(next)](const absl::Status& s, QueueBase::Tuple tuple) {
    if (!s.ok()) {
      if (absl::IsOutOfRange(s)) {
        return next(absl::OutOfRangeError(absl::StrCat("reader '", self->name_, "' has no more files: ", s.message())));
      }
      return next(s);
    }
    if (tuple.size() != 1 || tuple[0].NumElements() != 1) {
      return next(absl::InvalidArgumentError("a file-name queue element must be one string"));
    }
    {
      absl::MutexLock lock(&self->mu_);
      self->pending_.push_back(tuple[0].data<tstring>()[0]);
    }
    next(absl::OkStatus());
  });
}

void ReaderBase::ReadAsync(std::shared_ptr<QueueBase> queue, CancellationManager* cm, ReadCallback done) {
  absl::Status s;
  std::string key, value;
  bool finished;
  {
    absl::MutexLock lock(&mu_);
    finished = TryReadLocked(&s, &key, &value);
  }
  if (finished) return done(s, std::move(key), std::move(value));
  std::shared_ptr<ReaderBase> self = shared_from_this();
  FetchWorkAsync(queue, cm, [self, queue, cm, done = std::move(done)](const absl::Status& s) mutable {
    if (!s.ok()) return done(s, "", "");
    self->ReadAsync(std::move(queue), cm, std::move(done));
  });
}

void ReaderBase::ReadUpToAsync(std::shared_ptr<QueueBase> queue, CancellationManager* cm, int64_t max_records,
                               ReadUpToCallback done) {
  absl::Status s;
  std::vector<std::string> keys, values;
  bool finished;
  {
    absl::MutexLock lock(&mu_);
    std::string key, value;
    finished = TryReadLocked(&s, &key, &value);
    if (finished && s.ok()) {
      keys.push_back(std::move(key));
      values.push_back(std::move(value));
      // The rest of the batch from the same file only; a bad record ends the
      // batch and stays for the next read to report.
      while (static_cast<int64_t>(keys.size()) < max_records) {
        absl::Status more;
        if (!TryReadLocked(&more, &key, &value, /*open_next=*/false) || !more.ok()) break;
        keys.push_back(std::move(key));
        values.push_back(std::move(value));
      }
    }
  }
  if (finished) return done(s, std::move(keys), std::move(values));
  std::shared_ptr<ReaderBase> self = shared_from_this();
  FetchWorkAsync(queue, cm, [self, queue, cm, max_records, done = std::move(done)](const absl::Status& s) mutable {
    if (!s.ok()) return done(s, {}, {});
    self->ReadUpToAsync(std::move(queue), cm, max_records, std::move(done));
  });
}

std::string ReaderBase::SerializeState() const {
  absl::MutexLock lock(&mu_);
  ReaderState st;
  st.set_reader_type(reader_type_);
  st.set_work_started(work_started_);
  st.set_work_finished(work_finished_);
  st.set_num_records_produced(records_);
  if (has_work_) {
    st.set_current_work(current_);
    st.set_position(const_cast<ReaderBase*>(this)->PositionLocked());
  }
  for (const std::string& p : pending_) st.add_pending_work(p);
  return st.SerializeAsString();
}

absl::Status ReaderBase::RestoreState(const std::string& state) {
  ReaderState st;
  if (!st.ParseFromString(state)) {
    return absl::InvalidArgumentError(absl::StrCat("reader '", name_, "': cannot parse the saved reader state"));
  }
  if (st.reader_type() != reader_type_) {
    return absl::InvalidArgumentError(absl::StrCat("reader '", name_, "' is a ", reader_type_,
                                                   "; the saved state is of a ", st.reader_type()));
  }
  if (st.work_started() < st.work_finished() || st.num_records_produced() < 0 || st.position() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("reader '", name_, "': inconsistent saved state"));
  }
  absl::MutexLock lock(&mu_);
  if (has_work_) CloseLocked();
  has_work_ = false;
  current_.clear();
  // The counters first: a format may key its order by them (IdxRecordReader).
  work_started_ = st.work_started();
  work_finished_ = st.work_finished();
  records_ = st.num_records_produced();
  records_at_open_ = records_;
  empty_in_a_row_ = 0;
  pending_.assign(st.pending_work().begin(), st.pending_work().end());
  if (!st.current_work().empty()) {
    absl::Status s = OpenLocked(st.current_work(), st.position());
    if (!s.ok()) return s;
    has_work_ = true;
    current_ = st.current_work();
  }
  return absl::OkStatus();
}

}  // namespace sluice
