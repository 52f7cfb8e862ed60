// EventWriter: appends Events (summaries, the graph, session logs) to one TensorBoard event
// file, `<run_dir>/events.out.tfevents.<unix seconds, 10 digits>.<hostname>[suffix]`, framed as
// TFRecords. The first record (`file_version: "brain.Event:2"`) is written and flushed by
// Create; later events are serialized on the caller's thread and written by a background thread,
// which hands the file to the OS every `flush_interval` and when Flush() or Close() asks.
// monitoring/EVENTS.md documents the bytes.
//
// Errors: the first write/flush error is sticky. Every later call returns it and queued events
// are dropped; the writer never crashes the process on I/O errors.
// Ownership: the writer owns its file and thread; the Env is borrowed (must outlive it).
// Thread safety: every method may be called from any thread; events from one thread keep their
// order.
#ifndef SLUICE_MONITORING_EVENT_WRITER_H_
#define SLUICE_MONITORING_EVENT_WRITER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/framework/graph.pb.h"
#include "engine/platform/env.h"
#include "engine/platform/record_writer.h"
#include "monitoring/event.pb.h"
#include "monitoring/summary.pb.h"

namespace sluice {

inline constexpr char kEventFileVersion[] = "brain.Event:2";
inline constexpr char kEventFilePrefix[] = "events.out.tfevents.";

struct EventWriterOptions {
  // Created (mkdir -p) when missing.
  std::string run_dir;
  // nullptr: Env::Default().
  Env* env = nullptr;
  // Background cadence for handing written events to the OS (TensorBoard then sees them).
  absl::Duration flush_interval = absl::Seconds(5);
  // Events queued but not yet written; a writer blocks while the queue is full.
  size_t max_pending = 1024;
  // "" : gethostname().
  std::string hostname;
  // Appended to the file name, e.g. ".worker-0" (TensorBoard needs only "tfevents" in the name).
  std::string file_suffix;
  // Wall clock for the file name and for events with wall_time 0. Default absl::Now.
  std::function<absl::Time()> clock;
};

class EventWriter {
 public:
  // Creates the run directory and the file, and writes and flushes the file_version record.
  // InvalidArgument for an empty run_dir or max_pending 0; file errors as the Env reports.
  static absl::StatusOr<std::unique_ptr<EventWriter>> Create(EventWriterOptions options);
  // Close(); its error is dropped (call Close() to see it).
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // The full path of the event file.
  const std::string& path() const { return path_; }

  // Queues `event` (wall_time 0 is replaced by now). Returns the sticky error, or
  // FailedPrecondition after Close.
  absl::Status WriteEvent(Event event);
  absl::Status WriteSummary(int64_t step, const Summary& summary);
  // `serialized` is what a summary op (or MergeSummary) outputs; InvalidArgument if it does
  // not parse as a Summary.
  absl::Status WriteSerializedSummary(int64_t step, absl::string_view serialized);
  absl::Status WriteScalar(int64_t step, absl::string_view tag, float value);
  // The graph for TensorBoard's graph dashboard (an Event with graph_def, step 0).
  absl::Status WriteGraph(const GraphDef& graph);
  // `session_log { status: START }` at `step`: after a restore at step T, TensorBoard drops the
  // points with step >= T that the previous attempt wrote.
  absl::Status WriteSessionStart(int64_t step);

  // Blocks until every event queued before the call is written, handed to the OS and fsynced.
  absl::Status Flush();
  // Flush, stop the thread, close the file. Idempotent; returns the sticky status.
  absl::Status Close();

 private:
  EventWriter(EventWriterOptions options, std::string path, std::unique_ptr<WritableFile> file);
  double NowSeconds() const;
  void Run();  // the background thread

  const EventWriterOptions options_;
  const std::string path_;
  std::unique_ptr<WritableFile> file_;  // used by Create, then only by the thread
  RecordWriter records_;
  std::thread thread_;

  absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);  // serialized Events
  uint64_t enqueued_ ABSL_GUARDED_BY(mu_) = 0;          // events ever queued
  uint64_t sync_target_ ABSL_GUARDED_BY(mu_) = 0;       // Flush(): sync through this count
  uint64_t synced_ ABSL_GUARDED_BY(mu_) = 0;            // written and fsynced through this count
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;            // the thread has exited
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  absl::Mutex close_mu_;                                // serializes Close (joins the thread)
};

// `events.out.tfevents.0001700000.host` for those values (the seconds padded to 10 digits, as
// TensorFlow's EventsWriter names them).
std::string EventFileName(absl::Time created, absl::string_view hostname, absl::string_view suffix);

}  // namespace sluice

#endif  // SLUICE_MONITORING_EVENT_WRITER_H_
