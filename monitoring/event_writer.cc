// EventWriter: the caller side (serialize, queue) and the background thread (write, flush).
#include "monitoring/event_writer.h"

#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice {
namespace {

std::string LocalHostname() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace

std::string EventFileName(absl::Time created, absl::string_view hostname, absl::string_view suffix) {
  return absl::StrFormat("%s%010d.%s%s", kEventFilePrefix, absl::ToUnixSeconds(created), hostname, suffix);
}

absl::StatusOr<std::unique_ptr<EventWriter>> EventWriter::Create(EventWriterOptions options) {
  if (options.run_dir.empty()) return absl::InvalidArgumentError("EventWriter: empty run_dir");
  if (options.max_pending == 0) return absl::InvalidArgumentError("EventWriter: max_pending must be >= 1");
  if (options.flush_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("EventWriter: flush_interval must be positive");
  }
  if (options.env == nullptr) options.env = Env::Default();
  if (!options.clock) options.clock = [] { return absl::Now(); };
  if (options.hostname.empty()) options.hostname = LocalHostname();

  absl::Status s = options.env->CreateDirs(options.run_dir);
  if (!s.ok()) return s;
  const absl::Time created = options.clock();
  std::string path;
  std::unique_ptr<WritableFile> file;
  // Two writers started in the same second on the same host: the second gets ".1", and so on.
  for (int attempt = 0; attempt < 100 && file == nullptr; ++attempt) {
    std::string suffix = options.file_suffix;
    if (attempt > 0) absl::StrAppend(&suffix, ".", attempt);
    path = absl::StrCat(options.run_dir, "/", EventFileName(created, options.hostname, suffix));
    auto f = options.env->NewExclusiveFile(path);
    if (f.ok()) {
      file = std::move(f).value();
    } else if (!absl::IsAlreadyExists(f.status())) {
      return f.status();
    }
  }
  if (file == nullptr) return absl::AlreadyExistsError(absl::StrCat("EventWriter: too many event files like ", path));

  std::unique_ptr<EventWriter> writer(new EventWriter(std::move(options), std::move(path), std::move(file)));
  Event first;
  first.set_wall_time(writer->NowSeconds());
  first.set_step(0);
  first.set_file_version(kEventFileVersion);
  first.mutable_source_metadata()->set_writer("sluice.monitoring.EventWriter");
  s = writer->records_.WriteRecord(first.SerializeAsString());
  if (s.ok()) s = writer->file_->Flush();
  if (!s.ok()) {
    writer->file_->Close().IgnoreError();
    absl::MutexLock lock(&writer->mu_);
    writer->closing_ = writer->closed_ = true;  // no thread to join
    return s;
  }
  writer->thread_ = std::thread([w = writer.get()] { w->Run(); });
  return writer;
}

EventWriter::EventWriter(EventWriterOptions options, std::string path, std::unique_ptr<WritableFile> file)
    : options_(std::move(options)), path_(std::move(path)), file_(std::move(file)), records_(file_.get()) {}

EventWriter::~EventWriter() { Close().IgnoreError(); }

double EventWriter::NowSeconds() const { return absl::ToDoubleSeconds(options_.clock() - absl::UnixEpoch()); }

absl::Status EventWriter::WriteEvent(Event event) {
  if (event.wall_time() == 0) event.set_wall_time(NowSeconds());
  std::string serialized = event.SerializeAsString();
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return queue_.size() < options_.max_pending || !status_.ok() || closing_;
  };
  mu_.Await(absl::Condition(&ready));
  if (!status_.ok()) return status_;
  if (closing_) return absl::FailedPreconditionError(absl::StrCat("EventWriter for ", path_, " is closed"));
  queue_.push_back(std::move(serialized));
  ++enqueued_;
  return absl::OkStatus();
}

absl::Status EventWriter::WriteSummary(int64_t step, const Summary& summary) {
  Event event;
  event.set_step(step);
  *event.mutable_summary() = summary;
  return WriteEvent(std::move(event));
}

absl::Status EventWriter::WriteSerializedSummary(int64_t step, absl::string_view serialized) {
  Event event;
  event.set_step(step);
  if (!event.mutable_summary()->ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("EventWriter: a summary of ", serialized.size(), " bytes does not parse as sluice.Summary"));
  }
  return WriteEvent(std::move(event));
}

absl::Status EventWriter::WriteScalar(int64_t step, absl::string_view tag, float value) {
  Summary summary;
  Summary::Value* v = summary.add_value();
  v->set_tag(std::string(tag));
  v->set_simple_value(value);
  return WriteSummary(step, summary);
}

absl::Status EventWriter::WriteGraph(const GraphDef& graph) {
  Event event;
  event.set_step(0);
  if (!graph.SerializeToString(event.mutable_graph_def())) {
    return absl::InvalidArgumentError("EventWriter: the GraphDef does not serialize (over 2 GiB?)");
  }
  return WriteEvent(std::move(event));
}

absl::Status EventWriter::WriteSessionStart(int64_t step) {
  Event event;
  event.set_step(step);
  event.mutable_session_log()->set_status(SessionLog::START);
  return WriteEvent(std::move(event));
}

absl::Status EventWriter::Flush() {
  absl::MutexLock lock(&mu_);
  if (closed_) return status_.ok() ? absl::FailedPreconditionError(absl::StrCat("EventWriter for ", path_, " is closed"))
                                   : status_;
  const uint64_t target = enqueued_;
  if (sync_target_ < target) sync_target_ = target;
  auto done = [this, target]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return synced_ >= target || !status_.ok() || closed_;
  };
  mu_.Await(absl::Condition(&done));
  return status_;
}

absl::Status EventWriter::Close() {
  absl::MutexLock close_lock(&close_mu_);
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
  }
  if (thread_.joinable()) thread_.join();
  absl::MutexLock lock(&mu_);
  return status_;
}

void EventWriter::Run() {
  absl::Time last_flush = absl::Now();
  bool dirty = false;  // written but not yet handed to the OS
  for (;;) {
    std::deque<std::string> batch;
    uint64_t through;
    bool sync, closing;
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || closing_ || sync_target_ > synced_;
      };
      absl::Duration wait = options_.flush_interval - (absl::Now() - last_flush);
      if (!dirty) wait = absl::InfiniteDuration();
      if (wait > absl::ZeroDuration()) mu_.AwaitWithTimeout(absl::Condition(&has_work), wait);
      batch.swap(queue_);
      through = enqueued_;
      sync = sync_target_ > synced_ || closing_;
      closing = closing_;
      status = status_;
    }
    absl::Status s;
    if (status.ok()) {
      for (const std::string& record : batch) {
        s = records_.WriteRecord(record);
        if (!s.ok()) break;
        dirty = true;
      }
      if (s.ok() && sync) {
        s = file_->Sync();
        dirty = false;
        last_flush = absl::Now();
      } else if (s.ok() && dirty && absl::Now() - last_flush >= options_.flush_interval) {
        s = file_->Flush();
        dirty = false;
        last_flush = absl::Now();
      }
    }
    absl::MutexLock lock(&mu_);
    if (!s.ok() && status_.ok()) status_ = s;
    if (s.ok() && status_.ok() && sync && synced_ < through) synced_ = through;
    if (closing && queue_.empty()) {
      absl::Status c = file_->Close();
      if (!c.ok() && status_.ok()) status_ = c;
      closed_ = true;
      return;
    }
  }
}

}  // namespace sluice
