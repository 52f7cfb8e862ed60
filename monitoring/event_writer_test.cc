// EventWriter, read back with the independent decoder in event_file_reader_testlib.h: the file
// name, the first record byte for byte, every Event kind round-tripping, ordering under
// concurrent writers, backpressure, and injected I/O faults (short writes, failing flushes).
#include "monitoring/event_writer.h"

#include <dirent.h>

#include <atomic>
#include <cfloat>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "engine/platform/fault_env.h"
#include "engine/platform/record_writer.h"
#include "gtest/gtest.h"
#include "monitoring/event_file_reader_testlib.h"
#include "monitoring/histogram.h"

namespace sluice {
namespace {

using testing_events::DecodedFile;
using testing_events::DecodeFile;

std::string FreshDir(const std::string& name) {
  static std::atomic<int> counter{0};
  return absl::StrCat(::testing::TempDir(), "/", name, "_", counter++);
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

EventWriterOptions Options(const std::string& dir) {
  EventWriterOptions o;
  o.run_dir = dir;
  o.hostname = "testhost";
  o.clock = [] { return absl::FromUnixSeconds(1700000000); };
  return o;
}

TEST(EventFileNameTest, MatchesTensorFlow) {
  EXPECT_EQ(EventFileName(absl::FromUnixSeconds(1700000000), "host", ""), "events.out.tfevents.1700000000.host");
  EXPECT_EQ(EventFileName(absl::FromUnixSeconds(42), "h", ".w0"), "events.out.tfevents.0000000042.h.w0");
}

TEST(RecordWriterTest, GoldenBytes) {
  // Event{wall_time: 1700000000, file_version: "brain.Event:2"}, framed; the bytes were
  // computed by a separate Python implementation and are quoted in EVENTS.md.
  Event e;
  e.set_wall_time(1700000000.0);
  e.set_file_version(kEventFileVersion);
  const std::string payload = e.SerializeAsString();
  char header[kRecordHeaderBytes];
  char footer[kRecordFooterBytes];
  RecordWriter::EncodeHeader(payload.size(), header);
  RecordWriter::EncodeFooter(payload, footer);
  const std::string record =
      std::string(header, sizeof(header)) + payload + std::string(footer, sizeof(footer));
  EXPECT_EQ(absl::BytesToHexString(record),
            "1800000000000000a37f4b220900000040fc54d9411a0d627261696e2e4576656e743a32eced8f9d");
}

TEST(EventWriterTest, FileNameAndFirstRecord) {
  const std::string dir = FreshDir("first");
  auto w = EventWriter::Create(Options(dir));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*w)->path(), dir + "/events.out.tfevents.1700000000.testhost");
  // Visible before any Flush: Create flushes the version record.
  DecodedFile f = DecodeFile((*w)->path());
  EXPECT_EQ(f.error, "");
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_EQ(f.events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(f.events[0].step(), 0);
  EXPECT_EQ(f.events[0].wall_time(), 1700000000.0);
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(ListDir(dir), std::vector<std::string>{"events.out.tfevents.1700000000.testhost"});
}

TEST(EventWriterTest, SameSecondSameHostGetsSuffix) {
  const std::string dir = FreshDir("collide");
  auto a = EventWriter::Create(Options(dir));
  auto b = EventWriter::Create(Options(dir));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*b)->path(), dir + "/events.out.tfevents.1700000000.testhost.1");
}

TEST(EventWriterTest, EveryEventKindRoundTrips) {
  const std::string dir = FreshDir("kinds");
  EventWriterOptions o = Options(dir);
  o.clock = nullptr;  // real time, checked to be in range below
  const double before = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  auto created = EventWriter::Create(o);
  ASSERT_TRUE(created.ok()) << created.status();
  EventWriter& w = **created;

  GraphDef graph;
  NodeDef* node = graph.add_node();
  node->set_name("x");
  node->set_op("Const");
  graph.mutable_versions()->set_producer(27);
  ASSERT_TRUE(w.WriteGraph(graph).ok());

  ASSERT_TRUE(w.WriteScalar(10, "loss", 0.25f).ok());

  Histogram h;
  for (double v : {-3.0, 0.0, 0.5, 0.5, 1e-13, 7.0}) h.Add(v);
  Summary histo_summary;
  Summary::Value* hv = histo_summary.add_value();
  hv->set_tag("weights");
  h.EncodeToProto(hv->mutable_histo(), false);
  ASSERT_TRUE(w.WriteSummary(20, histo_summary).ok());

  Summary image_summary;
  Summary::Value* iv = image_summary.add_value();
  iv->set_tag("input/image/0");
  iv->mutable_image()->set_height(2);
  iv->mutable_image()->set_width(3);
  iv->mutable_image()->set_colorspace(1);
  iv->mutable_image()->set_encoded_image_string(std::string("\x89PNG\r\n\x1a\n\0\xff", 10));
  ASSERT_TRUE(w.WriteSerializedSummary(30, image_summary.SerializeAsString()).ok());

  ASSERT_TRUE(w.WriteSessionStart(40).ok());
  ASSERT_TRUE(w.Close().ok());
  const double after = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());

  DecodedFile f = DecodeFile(w.path());
  ASSERT_EQ(f.error, "");
  ASSERT_EQ(f.events.size(), 6u);
  for (const Event& e : f.events) {
    EXPECT_GE(e.wall_time(), before - 1);
    EXPECT_LE(e.wall_time(), after + 1);
  }
  EXPECT_EQ(f.events[0].file_version(), "brain.Event:2");

  ASSERT_TRUE(f.events[1].has_graph_def());
  GraphDef g;
  ASSERT_TRUE(g.ParseFromString(f.events[1].graph_def()));
  EXPECT_EQ(g.node(0).name(), "x");
  EXPECT_EQ(g.versions().producer(), 27);

  EXPECT_EQ(f.events[2].step(), 10);
  ASSERT_EQ(f.events[2].summary().value_size(), 1);
  EXPECT_EQ(f.events[2].summary().value(0).tag(), "loss");
  EXPECT_EQ(f.events[2].summary().value(0).simple_value(), 0.25f);

  EXPECT_EQ(f.events[3].step(), 20);
  const HistogramProto& hp = f.events[3].summary().value(0).histo();
  EXPECT_EQ(hp.num(), 6);
  EXPECT_EQ(hp.min(), -3.0);
  EXPECT_EQ(hp.max(), 7.0);
  EXPECT_DOUBLE_EQ(hp.sum(), 5.0 + 1e-13);
  EXPECT_DOUBLE_EQ(hp.sum_squares(), 9 + 0.25 + 0.25 + 49 + 1e-26);
  ASSERT_EQ(hp.bucket_limit_size(), hp.bucket_size());
  // Non-empty buckets carry their own limit from the default table; counts add up.
  const std::vector<double>& limits = Histogram::DefaultBucketLimits();
  double total = 0;
  for (int i = 0; i < hp.bucket_size(); ++i) {
    total += hp.bucket(i);
    EXPECT_TRUE(std::binary_search(limits.begin(), limits.end(), hp.bucket_limit(i))) << hp.bucket_limit(i);
    if (i > 0) {
      EXPECT_LT(hp.bucket_limit(i - 1), hp.bucket_limit(i));
    }
  }
  EXPECT_EQ(total, 6);
  EXPECT_EQ(hp.bucket_limit(hp.bucket_limit_size() - 1), DBL_MAX);

  EXPECT_EQ(f.events[4].step(), 30);
  const Summary::Image& img = f.events[4].summary().value(0).image();
  EXPECT_EQ(f.events[4].summary().value(0).tag(), "input/image/0");
  EXPECT_EQ(img.height(), 2);
  EXPECT_EQ(img.width(), 3);
  EXPECT_EQ(img.colorspace(), 1);
  EXPECT_EQ(img.encoded_image_string(), std::string("\x89PNG\r\n\x1a\n\0\xff", 10));

  EXPECT_EQ(f.events[5].step(), 40);
  EXPECT_EQ(f.events[5].session_log().status(), SessionLog::START);
}

TEST(EventWriterTest, FlushMakesEventsVisibleWhileOpen) {
  auto w = EventWriter::Create(Options(FreshDir("flush")));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->WriteScalar(1, "a", 1).ok());
  ASSERT_TRUE((*w)->Flush().ok());
  DecodedFile f = DecodeFile((*w)->path());
  EXPECT_EQ(f.error, "");
  ASSERT_EQ(f.events.size(), 2u);
  EXPECT_EQ(f.events[1].summary().value(0).tag(), "a");
}

TEST(EventWriterTest, BackgroundCadenceFlushesWithoutBeingAsked) {
  EventWriterOptions o = Options(FreshDir("cadence"));
  o.flush_interval = absl::Milliseconds(5);
  auto w = EventWriter::Create(o);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->WriteScalar(1, "a", 1).ok());
  // Poll (bounded) for the background thread's flush; no assertion on how long it took.
  size_t seen = 0;
  for (int i = 0; i < 2000 && seen < 2; ++i) {
    seen = DecodeFile((*w)->path()).events.size();
    if (seen < 2) absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(seen, 2u);
}

TEST(EventWriterTest, ConcurrentWritersKeepPerThreadOrder) {
  EventWriterOptions o = Options(FreshDir("concurrent"));
  o.max_pending = 3;  // exercise backpressure too
  auto w = EventWriter::Create(o);
  ASSERT_TRUE(w.ok());
  constexpr int kThreads = 4, kEach = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        ASSERT_TRUE((*w)->WriteScalar(i, absl::StrCat("t", t), static_cast<float>(i)).ok());
        if (i % 50 == 0) {
          ASSERT_TRUE((*w)->Flush().ok());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE((*w)->Close().ok());
  DecodedFile f = DecodeFile((*w)->path());
  ASSERT_EQ(f.error, "");
  ASSERT_EQ(f.events.size(), 1u + kThreads * kEach);
  std::vector<int64_t> next(kThreads, 0);
  for (size_t i = 1; i < f.events.size(); ++i) {
    const std::string& tag = f.events[i].summary().value(0).tag();
    const int t = tag[1] - '0';
    EXPECT_EQ(f.events[i].step(), next[t]++);
  }
}

TEST(EventWriterTest, RejectsGarbageSummaryAndWritesAfterClose) {
  auto w = EventWriter::Create(Options(FreshDir("garbage")));
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(absl::IsInvalidArgument((*w)->WriteSerializedSummary(1, std::string("\xff\xff\xff", 3))));
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_TRUE((*w)->Close().ok());  // idempotent
  EXPECT_TRUE(absl::IsFailedPrecondition((*w)->WriteScalar(2, "late", 1)));
  EXPECT_TRUE(absl::IsFailedPrecondition((*w)->Flush()));
}

TEST(EventWriterTest, BadOptions) {
  EventWriterOptions o;
  EXPECT_TRUE(absl::IsInvalidArgument(EventWriter::Create(o).status()));
  o = Options(FreshDir("bad"));
  o.max_pending = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(EventWriter::Create(o).status()));
}

// ---- Fault injection ----

TEST(EventWriterFaultTest, ShortWriteIsStickyAndLeavesAReadablePrefix) {
  // A full disk: the append that crosses the budget writes what fits (a short write) and fails.
  FaultEnv env(Env::Default());
  env.SetWriteBudget(200);
  EventWriterOptions o = Options(FreshDir("short"));
  o.env = &env;
  auto w = EventWriter::Create(o);
  ASSERT_TRUE(w.ok()) << w.status();
  absl::Status s;
  for (int i = 0; i < 20 && s.ok(); ++i) s = (*w)->WriteScalar(i, "loss", 1.0f);
  absl::Status flushed = (*w)->Flush();
  EXPECT_TRUE(absl::IsResourceExhausted(flushed)) << flushed;
  EXPECT_TRUE(absl::IsResourceExhausted((*w)->WriteScalar(99, "loss", 1.0f)));
  EXPECT_TRUE(absl::IsResourceExhausted((*w)->Close()));

  DecodedFile f = DecodeFile((*w)->path());
  EXPECT_TRUE(f.truncated_tail) << f.error;  // the short write left a partial record...
  ASSERT_GE(f.events.size(), 2u);           // ...after whole, valid ones
  EXPECT_EQ(f.events[0].file_version(), "brain.Event:2");
  for (size_t i = 1; i < f.events.size(); ++i) EXPECT_EQ(f.events[i].step(), static_cast<int64_t>(i - 1));
}

TEST(EventWriterFaultTest, FailingFirstRecordFailsCreate) {
  FaultEnv env(Env::Default());
  env.SetWriteBudget(10);
  EventWriterOptions o = Options(FreshDir("nofirst"));
  o.env = &env;
  EXPECT_TRUE(absl::IsResourceExhausted(EventWriter::Create(o).status()));
}

TEST(EventWriterFaultTest, OpenErrorIsReturned) {
  FaultEnv env(Env::Default());
  env.CrashAfter(1);  // the run directory is created; creating the file fails
  EventWriterOptions o = Options(FreshDir("noopen"));
  o.env = &env;
  absl::Status s = EventWriter::Create(o).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "events.out.tfevents.")) << s;
}

TEST(EventWriterFaultTest, FailingSyncReportedByFlush) {
  FaultEnv env(Env::Default());
  env.FailSyncs(true);
  EventWriterOptions o = Options(FreshDir("nosync"));
  o.env = &env;
  auto w = EventWriter::Create(o);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->WriteScalar(1, "a", 1).ok());
  EXPECT_TRUE(absl::IsUnavailable((*w)->Flush()));
  EXPECT_TRUE(absl::IsUnavailable((*w)->Close()));
}

TEST(EventWriterFaultTest, RunDirThatIsAFileFails) {
  const std::string dir = FreshDir("isfile");
  ASSERT_TRUE(Env::Default()->CreateDirs(dir).ok());
  auto f = Env::Default()->NewWritableFile(dir + "/plain");
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Close().ok());
  EventWriterOptions o = Options(dir + "/plain");
  EXPECT_FALSE(EventWriter::Create(o).ok());
}

}  // namespace
}  // namespace sluice
