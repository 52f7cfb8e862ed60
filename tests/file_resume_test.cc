// Exact resume of TFRecord and CSV inputs: a pipeline built from an
// experiment's input section (models/input_pipeline.cc) and put at example k
// by RestoreInputPosition (models/training/input_hook.h) reads the records
// that an uninterrupted pipeline reads from its k-th on: the same files, in
// each epoch's shuffled order, at the same offsets, across file and epoch
// boundaries, with CSV header lines skipped; past the configured epochs it
// reads nothing. The records are seen through the reader's keys ("file:offset"
// for TFRecord, "file:line" for text lines), read one at a time with only the
// file producer running. In deterministic mode the reader shuffles each
// file's records in a seeded permutation, and resumes at the index in it.
#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/platform/env.h"
#include "engine/platform/record_writer.h"
#include "engine/platform/test_dirs.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"
#include "inputs/example.pb.h"
#include "inputs/queue_runner.h"
#include "models/input_pipeline.h"
#include "models/training/input_hook.h"

namespace sluice {
namespace {

const std::string& Dir() {
  static const std::string* dir = new std::string(FreshTestDir("file_resume"));
  return *dir;
}

std::string TmpPath(const std::string& name) { return absl::StrCat(Dir(), "/", name); }

// A TFRecord file of `n` Examples {label: first + i}.
std::string WriteRecords(const std::string& name, int first, int n) {
  const std::string path = TmpPath(name);
  auto file = Env::Default()->NewWritableFile(path);
  EXPECT_TRUE(file.ok());
  RecordWriter writer(file->get());
  for (int i = 0; i < n; ++i) {
    Example e;
    (*e.mutable_features()->mutable_feature())["label"].mutable_int64_list()->add_value(first + i);
    EXPECT_TRUE(writer.WriteRecord(e.SerializeAsString()).ok());
  }
  EXPECT_TRUE(writer.Close().ok());
  return path;
}

// A CSV file: a header line, then `n` rows "x,label".
std::string WriteCsv(const std::string& name, int first, int n) {
  std::string text = "x,label\n";
  for (int i = 0; i < n; ++i) absl::StrAppend(&text, 0.5 * i, ",", first + i, "\n");
  const std::string path = TmpPath(name);
  EXPECT_TRUE(WriteStringToFile(Env::Default(), path, text).ok());
  return path;
}

config::Input::Pipeline TfRecordInput(const std::vector<std::string>& files, bool shuffle, int64_t epochs) {
  config::Input::Pipeline p;
  for (const std::string& f : files) p.mutable_tfrecord()->add_files(f);
  auto* label = p.mutable_tfrecord()->add_feature();
  label->set_name("label");
  label->set_dtype("int64");
  p.set_batch_size(1);  // one record per read
  p.set_epochs(epochs);
  if (shuffle) p.mutable_shuffle()->set_capacity(10);
  return p;
}

config::Input::Pipeline CsvInput(const std::vector<std::string>& files, bool shuffle) {
  config::Input::Pipeline p;
  config::Input::Csv* c = p.mutable_csv();
  for (const std::string& f : files) c->add_files(f);
  c->set_skip_header(true);
  auto* x = c->add_column();
  x->set_name("x");
  x->set_dtype("float");
  auto* label = c->add_column();
  label->set_name("label");
  label->set_dtype("int64");
  p.set_batch_size(1);
  if (shuffle) p.mutable_shuffle()->set_capacity(10);
  return p;
}

struct Read {
  std::vector<std::string> keys;
  std::string where;           // RestoreInputPosition's description
  absl::Status end;            // why reading stopped (OK: `count` keys read)
};

// `p` built as a training pipeline (seed 3; in deterministic mode each file's
// records come in a seeded permutation) into a new session, its init ops run.
// Its queues and reader live in the process's default container: going, it
// resets that, so the next pipeline starts without them.
struct InitializedPipeline {
  GraphDef graph;
  models::InputPipeline pipeline;
  std::unique_ptr<Session> session;  // null when building failed

  explicit InitializedPipeline(const config::Input::Pipeline& p, bool deterministic = false) {
    models::PipelineOptions options;
    options.scope = "input/train";
    options.seed = 3;
    options.deterministic = deterministic;
    absl::Status built = models::BuildInputPipeline(p, options, &graph, &pipeline);
    EXPECT_TRUE(built.ok()) << built;
    EXPECT_TRUE(pipeline.file_source.has_value());
    auto made = NewSession();
    EXPECT_TRUE(made.ok()) << made.status();
    if (!built.ok() || !made.ok()) return;
    session = std::move(made).value();
    EXPECT_TRUE(session->Create(graph).ok());
    std::vector<Tensor> out;
    EXPECT_TRUE(session->Run({}, {}, pipeline.init_ops, &out).ok());
  }
  ~InitializedPipeline() {
    session.reset();
    Session::Reset({""});
  }
  // RestoreInputPosition of this pipeline.
  absl::StatusOr<std::string> RestoreTo(int64_t consumed) {
    return training::RestoreInputPosition(session.get(), pipeline, consumed);
  }
};

// Builds `p` (InitializedPipeline), restores it to example `consumed`, starts
// its file producer alone and reads up to `count` records' keys.
Read ReadKeys(const config::Input::Pipeline& p, int64_t consumed, int count, bool deterministic = false) {
  Read read;
  InitializedPipeline built(p, deterministic);
  if (built.session == nullptr) return read;
  Session* session = built.session.get();
  const models::InputPipeline& pipeline = built.pipeline;
  auto where = built.RestoreTo(consumed);
  EXPECT_TRUE(where.ok()) << where.status();
  if (where.ok()) read.where = *where;
  Coordinator coord;
  std::vector<std::unique_ptr<QueueRunner>> runners;
  for (const QueueRunnerDef& def : pipeline.runners) {
    if (def.queue_name != "input/train/files/queue") continue;
    auto runner = QueueRunner::New(def);
    EXPECT_TRUE(runner.ok());
    EXPECT_TRUE((*runner)->Start(session, &coord).ok());
    runners.push_back(std::move(runner).value());
  }
  EXPECT_EQ(runners.size(), 1u);
  std::vector<Tensor> out;
  for (int i = 0; i < count; ++i) {
    absl::Status s = session->Run({}, {"input/train/reader/read:0"}, {}, &out);
    if (!s.ok()) {
      read.end = s;
      break;
    }
    EXPECT_EQ(out[0].NumElements(), 1);
    read.keys.push_back(std::string(out[0].data<tstring>()[0]));
  }
  coord.RequestStop();
  for (auto& r : runners) r->Stop();
  for (auto& r : runners) (void)r->Join();
  runners.clear();
  return read;
}

// The file part of a key ("file:offset").
std::string FileOf(const std::string& key) { return key.substr(0, key.rfind(':')); }

// Resuming at every k in `at` reads what the uninterrupted pipeline reads from k on.
void ExpectResumesMatch(const config::Input::Pipeline& p, int64_t per_epoch, const std::vector<int64_t>& at,
                        bool deterministic = false) {
  const int kAhead = 9;
  const Read whole = ReadKeys(p, 0, static_cast<int>(3 * per_epoch + kAhead), deterministic);
  ASSERT_TRUE(whole.end.ok()) << whole.end;
  ASSERT_EQ(whole.keys.size(), static_cast<size_t>(3 * per_epoch + kAhead));
  // Every record once per epoch.
  for (int64_t e = 0; e < 3; ++e) {
    std::set<std::string> epoch(whole.keys.begin() + e * per_epoch, whole.keys.begin() + (e + 1) * per_epoch);
    EXPECT_EQ(epoch.size(), static_cast<size_t>(per_epoch)) << "epoch " << e;
  }
  for (int64_t k : at) {
    const Read resumed = ReadKeys(p, k, kAhead, deterministic);
    ASSERT_TRUE(resumed.end.ok()) << "at " << k << ": " << resumed.end;
    const std::vector<std::string> want(whole.keys.begin() + k, whole.keys.begin() + k + kAhead);
    EXPECT_EQ(resumed.keys, want) << "resumed at example " << k;
    // " at epoch E, record R of FILE", FILE the file of example k.
    EXPECT_TRUE(absl::StartsWith(resumed.where, absl::StrCat(" at epoch ", k / per_epoch, ", record ")))
        << resumed.where;
    EXPECT_TRUE(absl::EndsWith(resumed.where, absl::StrCat(" of ", FileOf(want[0])))) << resumed.where;
  }
}

TEST(FileResume, TfRecordFilesInOrder) {
  const std::vector<std::string> files = {WriteRecords("a.tfrecord", 0, 5), WriteRecords("b.tfrecord", 100, 7),
                                          WriteRecords("c.tfrecord", 200, 4)};
  // Inside the first file, at its end, inside the second, at an epoch's end,
  // and in the second and third epochs.
  ExpectResumesMatch(TfRecordInput(files, /*shuffle=*/false, 0), 16, {1, 4, 5, 11, 12, 15, 16, 17, 29, 40});
}

TEST(FileResume, TfRecordFilesShuffledPerEpoch) {
  std::vector<std::string> files;
  for (int f = 0; f < 5; ++f) files.push_back(WriteRecords(absl::StrCat("s", f, ".tfrecord"), 100 * f, 2 + f));
  const config::Input::Pipeline p = TfRecordInput(files, /*shuffle=*/true, 0);
  // The epochs' file orders differ (5! orders; seed 3 gives different ones).
  const Read whole = ReadKeys(p, 0, 3 * 20);
  ASSERT_EQ(whole.keys.size(), 60u);
  std::vector<std::vector<std::string>> orders(3);
  for (int i = 0; i < 60; ++i) {
    std::vector<std::string>& order = orders[i / 20];
    if (order.empty() || order.back() != FileOf(whole.keys[i])) order.push_back(FileOf(whole.keys[i]));
  }
  EXPECT_TRUE(orders[0] != orders[1] || orders[1] != orders[2]) << "the files come in one order every epoch";
  EXPECT_NE(orders[0], std::vector<std::string>(files.begin(), files.end())) << "epoch 0 is not shuffled";
  ExpectResumesMatch(p, 20, {1, 3, 9, 19, 20, 21, 33, 47, 50});
}

// Deterministic mode shuffles in the reader: each file's records in a seeded
// permutation per epoch (no shuffle queue, whose order depends on timing),
// and a resume puts the reader at the index in that permutation.
TEST(FileResume, DeterministicShuffleReadsEachFileInASeededPermutation) {
  std::vector<std::string> files;
  for (int f = 0; f < 3; ++f) files.push_back(WriteRecords(absl::StrCat("d", f, ".tfrecord"), 100 * f, 6 + f));
  const config::Input::Pipeline p = TfRecordInput(files, /*shuffle=*/true, 0);
  const Read first = ReadKeys(p, 0, 21, /*deterministic=*/true);
  const Read again = ReadKeys(p, 0, 21, /*deterministic=*/true);
  ASSERT_EQ(first.keys.size(), 21u);
  EXPECT_EQ(first.keys, again.keys);
  // Within a file the offsets are not in file order (the records are shuffled).
  bool out_of_order = false;
  for (size_t i = 1; i < first.keys.size(); ++i) {
    if (FileOf(first.keys[i]) != FileOf(first.keys[i - 1])) continue;
    const std::string a = first.keys[i - 1].substr(first.keys[i - 1].rfind(':') + 1);
    const std::string b = first.keys[i].substr(first.keys[i].rfind(':') + 1);
    if (std::stoll(b) < std::stoll(a)) out_of_order = true;
  }
  EXPECT_TRUE(out_of_order) << "the records of each file came in file order";
  ExpectResumesMatch(p, 21, {1, 5, 6, 13, 20, 21, 22, 40, 50}, /*deterministic=*/true);
  const std::vector<std::string> csv = {WriteCsv("d.csv", 0, 7), WriteCsv("e.csv", 10, 4)};
  ExpectResumesMatch(CsvInput(csv, /*shuffle=*/true), 11, {1, 4, 7, 11, 12, 30}, /*deterministic=*/true);
}

TEST(FileResume, CsvLinesAfterTheirHeader) {
  const std::vector<std::string> files = {WriteCsv("a.csv", 0, 3), WriteCsv("b.csv", 10, 6)};
  ExpectResumesMatch(CsvInput(files, /*shuffle=*/false), 9, {1, 2, 3, 4, 8, 9, 10, 13, 22});
  ExpectResumesMatch(CsvInput(files, /*shuffle=*/true), 9, {2, 3, 9, 12, 21});
  // The keys count lines from 1, the header being line 1: a.csv's first record is line 2.
  const Read first = ReadKeys(CsvInput(files, false), 0, 1);
  ASSERT_EQ(first.keys.size(), 1u);
  EXPECT_EQ(first.keys[0], files[0] + ":2");
}

TEST(FileResume, PastTheLastEpochReadsNothing) {
  const std::vector<std::string> files = {WriteRecords("e1.tfrecord", 0, 3), WriteRecords("e2.tfrecord", 10, 2)};
  const config::Input::Pipeline p = TfRecordInput(files, /*shuffle=*/true, /*epochs=*/2);
  const Read whole = ReadKeys(p, 0, 20);
  ASSERT_EQ(whole.keys.size(), 10u);  // two epochs of five
  EXPECT_TRUE(absl::IsOutOfRange(whole.end)) << whole.end;
  const Read near_end = ReadKeys(p, 7, 20);
  EXPECT_EQ(near_end.keys, std::vector<std::string>(whole.keys.begin() + 7, whole.keys.end()));
  EXPECT_TRUE(absl::IsOutOfRange(near_end.end)) << near_end.end;
  const Read past = ReadKeys(p, 10, 20);
  EXPECT_TRUE(past.keys.empty());
  EXPECT_TRUE(absl::IsOutOfRange(past.end)) << past.end;
  EXPECT_EQ(past.where, ": all 2 epoch(s) of 5 records were read");
}

// Files that hold no record (empty, or a header alone) among others are
// skipped; when every file is so, a read fails instead of taking file after
// file for ever, and a resume says so.
TEST(FileResume, InputFilesWithoutAnyRecordFailInsteadOfLooping) {
  const std::string empty = TmpPath("empty.tfrecord");
  ASSERT_TRUE(WriteStringToFile(Env::Default(), empty, "").ok());
  const std::string three = WriteRecords("three.tfrecord", 0, 3);
  const Read mixed = ReadKeys(TfRecordInput({empty, three}, false, 0), 0, 7);
  EXPECT_TRUE(mixed.end.ok()) << mixed.end;
  EXPECT_EQ(mixed.keys.size(), 7u);

  const std::vector<std::string> headers = {WriteCsv("h1.csv", 0, 0), WriteCsv("h2.csv", 0, 0)};
  const Read none = ReadKeys(CsvInput(headers, /*shuffle=*/true), 0, 5);
  EXPECT_TRUE(none.keys.empty());
  EXPECT_TRUE(absl::IsFailedPrecondition(none.end)) << none.end;
  EXPECT_TRUE(absl::StrContains(none.end.message(), "files read held no record")) << none.end;

  InitializedPipeline built(CsvInput(headers, false));
  ASSERT_NE(built.session, nullptr);
  auto where = built.RestoreTo(8);
  EXPECT_TRUE(absl::IsFailedPrecondition(where.status())) << where.status();
  EXPECT_TRUE(absl::StrContains(where.status().message(), "hold no record")) << where.status();
}

TEST(FileResume, AFileThatCannotBeReadIsNamed) {
  const std::string good = WriteRecords("g.tfrecord", 0, 4);
  const std::string bad = TmpPath("bad.tfrecord");
  ASSERT_TRUE(WriteStringToFile(Env::Default(), bad, "not a record file at all").ok());
  InitializedPipeline built(TfRecordInput({good, bad}, false, 0));
  ASSERT_NE(built.session, nullptr);
  auto where = built.RestoreTo(2);
  ASSERT_FALSE(where.ok());
  EXPECT_TRUE(absl::StrContains(where.status().message(), bad)) << where.status();
}

}  // namespace
}  // namespace sluice
