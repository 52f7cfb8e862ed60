// Corruption sweeps (issue 20): 1,000 truncations and 1,000 single-bit flips, from seeded RNGs,
// of each file format we read from outside: a TFRecord file, an event file, an experiment
// config, and a checkpoint written by the real Saver. Each result is read by our own reader and
// must be one of the outcomes the rule of its format allows (stated per test); counts are printed
// (docs/RELIABILITY.md records them). A crash fails the test by itself; a read that takes over
// 30 s fails it through the watchdog.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/saver.h"
#include "configs/load.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/platform/env.h"
#include "engine/platform/record_reader.h"
#include "engine/platform/record_writer.h"
#include "engine/platform/test_dirs.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "monitoring/event_file_reader_testlib.h"
#include "monitoring/event_writer.h"
#include "tests/sweep_testlib.h"

namespace sluice {
namespace {

using sweep::BitFlips;
using sweep::Flipped;
using sweep::kCases;
using sweep::Tally;
using sweep::TruncationLengths;

void WriteRaw(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(out.good()) << path;
}

std::string ReadRaw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "offset N" with N not followed by another digit.
bool NamesOffset(const std::string& message, uint64_t offset) {
  const std::string needle = absl::StrCat("offset ", offset);
  for (size_t at = message.find(needle); at != std::string::npos; at = message.find(needle, at + 1)) {
    const size_t end = at + needle.size();
    if (end == message.size() || !absl::ascii_isdigit(static_cast<unsigned char>(message[end]))) return true;
  }
  return false;
}

// The start of the record that holds byte `pos` (starts ascending, starts[0] == 0).
uint64_t RecordStartOf(const std::vector<uint64_t>& starts, uint64_t pos) {
  return *(std::upper_bound(starts.begin(), starts.end(), pos) - 1);
}

// Every byte where a record starts or its header or data ends.
std::vector<size_t> FramingBoundaries(const std::vector<uint64_t>& starts, const std::vector<size_t>& lengths) {
  std::vector<size_t> b;
  for (size_t i = 0; i < starts.size(); ++i) {
    b.push_back(starts[i]);
    b.push_back(starts[i] + kRecordHeaderBytes);
    b.push_back(starts[i] + kRecordHeaderBytes + lengths[i]);
  }
  return b;
}

// ---- TFRecord ----
//
// Rule: a truncation exactly at a record boundary reads as the records before it (the framing
// has no end marker: that file is a valid shorter file); any other truncation, and every bit
// flip (each byte is under a CRC), is DataLoss naming the file and the offset of the first bad
// record, after exactly the intact records before it.

// buffer_bytes == 0: the reader's default, which maps the file; else it reads
// the file into a buffer of that size.
absl::Status ReadAllRecords(const std::string& path, size_t buffer_bytes, std::vector<std::string>* out) {
  out->clear();
  auto file = Env::Default()->NewRandomAccessFile(path);
  if (!file.ok()) return file.status();
  RecordReaderOptions options;
  if (buffer_bytes != 0) {
    options.map_file = false;
    options.buffer_bytes = buffer_bytes;
  }
  SequentialRecordReader reader(file->get(), options);
  for (int i = 0; i < 10000; ++i) {  // bounded: the file holds a few dozen records
    std::string record;
    absl::Status s = reader.ReadRecord(&record);
    // The mapped half really maps (a non-empty file: an empty one is read).
    if (buffer_bytes == 0 && !reader.mapping()) {
      auto size = Env::Default()->GetFileSize(path);
      if (!size.ok() || *size != 0) return absl::InternalError("the reader does not map the file");
    }
    if (absl::IsOutOfRange(s)) return absl::OkStatus();
    if (!s.ok()) return s;
    out->push_back(std::move(record));
  }
  return absl::InternalError("reader does not advance");
}

TEST(CorruptionSweep, TFRecord) {
  const std::string path = JoinPath(FreshTestDir("sweep_tfrecord"), "data.tfrecord");
  std::mt19937_64 rng(2026001);
  std::vector<std::string> records;
  for (size_t n : {0, 1, 7, 100, 300, 13, 64, 2, 500, 31, 0, 250, 90, 5}) {
    std::string r(n, '\0');
    for (char& c : r) c = static_cast<char>(rng());
    records.push_back(r);
  }
  {
    auto file = Env::Default()->NewWritableFile(path);
    ASSERT_TRUE(file.ok());
    RecordWriter writer(file->get());
    for (const std::string& r : records) ASSERT_TRUE(writer.WriteRecord(r).ok());
    ASSERT_TRUE(writer.Close().ok());
  }
  const std::string original = ReadRaw(path);
  std::vector<uint64_t> starts;
  std::vector<size_t> lengths;
  uint64_t at = 0;
  for (const std::string& r : records) {
    starts.push_back(at);
    lengths.push_back(r.size());
    at += kRecordHeaderBytes + r.size() + kRecordFooterBytes;
  }
  ASSERT_EQ(original.size(), starts.back() + kRecordHeaderBytes + lengths.back() + kRecordFooterBytes);

  sweep::Watchdog watchdog(std::chrono::seconds(30));
  // Half the cases map the file (the default), half read it with a 64-byte
  // buffer, so the large-record path of reads runs too.
  auto check = [&](const std::string& what, int i, bool boundary_ok, uint64_t bad_start, Tally* tally) {
    watchdog.Arm("tfrecord " + what);
    std::vector<std::string> got;
    absl::Status s = ReadAllRecords(path, i % 2 ? 0 : 64, &got);
    const size_t intact = std::lower_bound(starts.begin(), starts.end(), bad_start) - starts.begin();
    SCOPED_TRACE(what);
    ASSERT_LE(got.size(), records.size());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), records.begin())) << "records differ from the originals";
    EXPECT_EQ(got.size(), intact);
    if (boundary_ok) {
      EXPECT_TRUE(s.ok()) << s;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
      EXPECT_TRUE(absl::StrContains(s.message(), path)) << s;
      EXPECT_TRUE(NamesOffset(std::string(s.message()), bad_start)) << "expected offset " << bad_start << ": " << s;
    }
    tally->Count(s.ok() ? "ok" : "error");
  };

  Tally truncations("tfrecord truncations");
  const std::vector<size_t> cuts =
      TruncationLengths(original.size(), FramingBoundaries(starts, lengths), kCases, &rng);
  ASSERT_EQ(cuts.size(), static_cast<size_t>(kCases));
  int i = 0;
  for (size_t cut : cuts) {
    WriteRaw(path, original.substr(0, cut));
    const bool at_boundary = std::binary_search(starts.begin(), starts.end(), cut);
    check(absl::StrCat("truncated to ", cut), i++, at_boundary, at_boundary ? cut : RecordStartOf(starts, cut),
          &truncations);
  }
  Tally flips("tfrecord bit flips");
  for (const auto& [pos, bit] : BitFlips(original.size(), kCases, &rng)) {
    WriteRaw(path, Flipped(original, pos, bit));
    check(absl::StrCat("bit ", bit, " of byte ", pos, " flipped"), i++, false, RecordStartOf(starts, pos), &flips);
  }
  truncations.Print();
  flips.Print();
  EXPECT_EQ(flips.count("error"), kCases);
  EXPECT_EQ(truncations.count("ok"), static_cast<int>(starts.size()));  // every record start is a chosen cut
}

// ---- Event file (written by EventWriter, read by the tests' event-file reader) ----
//
// Rule: as for TFRecord (events are TFRecords of Event protos): a truncation at a record
// boundary reads as the events before it; anything else is an error naming the file and the
// offset of the first bad record, after exactly the intact events before it.

TEST(CorruptionSweep, EventFile) {
  EventWriterOptions options;
  options.run_dir = FreshTestDir("sweep_events");
  options.hostname = "sweep";
  options.clock = [] { return absl::FromUnixSeconds(1763720000); };
  auto writer = EventWriter::Create(options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  GraphDefBuilder b;
  b.Const("x", Tensor::Scalar<float>(2));
  b.Identity("y", "x", DT_FLOAT);
  ASSERT_TRUE((*writer)->WriteGraph(b.graph()).ok());
  for (int step = 1; step <= 20; ++step) ASSERT_TRUE((*writer)->WriteScalar(step, "loss", 2.5f / step).ok());
  ASSERT_TRUE((*writer)->WriteSessionStart(10).ok());
  Summary histogram;
  HistogramProto* h = histogram.add_value()->mutable_histo();
  h->set_min(-1);
  h->set_max(1);
  h->set_num(3);
  for (double limit : {-1.0, 0.0, 1.0}) h->add_bucket_limit(limit);
  for (double count : {1.0, 1.0, 1.0}) h->add_bucket(count);
  histogram.mutable_value(0)->set_tag("fc1/kernel");
  ASSERT_TRUE((*writer)->WriteSummary(20, histogram).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  const std::string path = (*writer)->path();
  const std::string original = ReadRaw(path);
  const testing_events::DecodedFile whole = testing_events::DecodeFile(path);
  ASSERT_EQ(whole.error, "");
  ASSERT_EQ(whole.events.size(), 24u);
  std::vector<uint64_t> starts;
  std::vector<size_t> lengths;
  uint64_t at = 0;
  for (const std::string& r : whole.records) {
    starts.push_back(at);
    lengths.push_back(r.size());
    at += kRecordHeaderBytes + r.size() + kRecordFooterBytes;
  }

  sweep::Watchdog watchdog(std::chrono::seconds(30));
  auto check = [&](const std::string& what, bool boundary_ok, uint64_t bad_start, Tally* tally) {
    watchdog.Arm("event file " + what);
    const testing_events::DecodedFile got = testing_events::DecodeFile(path);
    const size_t intact = std::lower_bound(starts.begin(), starts.end(), bad_start) - starts.begin();
    SCOPED_TRACE(what);
    ASSERT_LE(got.records.size(), whole.records.size());
    EXPECT_TRUE(std::equal(got.records.begin(), got.records.end(), whole.records.begin()));
    EXPECT_EQ(got.records.size(), intact);
    if (boundary_ok) {
      EXPECT_EQ(got.error, "");
    } else {
      EXPECT_TRUE(absl::StrContains(got.error, path)) << got.error;
      EXPECT_TRUE(NamesOffset(got.error, bad_start)) << "expected offset " << bad_start << ": " << got.error;
    }
    tally->Count(got.error.empty() ? "ok" : "error");
  };

  std::mt19937_64 rng(2026002);
  Tally truncations("event file truncations");
  const std::vector<size_t> cuts =
      TruncationLengths(original.size(), FramingBoundaries(starts, lengths), kCases, &rng);
  ASSERT_EQ(cuts.size(), static_cast<size_t>(kCases));
  for (size_t cut : cuts) {
    WriteRaw(path, original.substr(0, cut));
    const bool at_boundary = std::binary_search(starts.begin(), starts.end(), cut);
    check(absl::StrCat("truncated to ", cut), at_boundary, at_boundary ? cut : RecordStartOf(starts, cut),
          &truncations);
  }
  Tally flips("event file bit flips");
  for (const auto& [pos, bit] : BitFlips(original.size(), kCases, &rng)) {
    WriteRaw(path, Flipped(original, pos, bit));
    check(absl::StrCat("bit ", bit, " of byte ", pos, " flipped"), false, RecordStartOf(starts, pos), &flips);
  }
  truncations.Print();
  flips.Print();
  EXPECT_EQ(flips.count("error"), kCases);
  EXPECT_EQ(truncations.count("ok"), static_cast<int>(starts.size()));
}

// ---- Experiment config (configs/fashion_mlp.pbtxt, loaded and validated as train does) ----
//
// Rule: the loader and validator either accept the text or fail with InvalidArgument whose
// every line is "<file>[:line[:col]]: error: ..." (parse errors always with line and column).
// An accepted text must be exactly what protobuf's own text parser makes of it (the loader adds
// nothing), and is either the original experiment (e.g. a cut trailing comment) or a valid
// different one (a digit or a name changed; nothing can tell). A bit flip inside a comment
// (after '#', not turning a byte into a newline) must give the original or an error, never a
// different experiment.

std::vector<bool> CommentBytes(const std::string& text) {
  std::vector<bool> in_comment(text.size(), false);
  bool comment = false, quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      comment = quoted = false;
    } else if (comment) {
      in_comment[i] = true;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == '#' && !quoted) {
      comment = true;  // the '#' itself is not counted: flipping it uncomments the line
    }
  }
  return in_comment;
}

TEST(CorruptionSweep, ExperimentConfig) {
  const std::string path = "configs/fashion_mlp.pbtxt";
  const std::string original = ReadRaw(path);
  ASSERT_GT(original.size(), 1000u) << path;
  auto base = config::ParseExperiment(path, original);
  ASSERT_TRUE(base.ok()) << base.status();
  config::ApplyDefaults(&(*base)->experiment);  // as train does before Validate
  const config::Experiment reference = (*base)->experiment;
  {
    config::ConfigErrors errors(path);
    config::Validate(**base, &errors);
    ASSERT_TRUE(errors.empty()) << errors.ToStatus();
  }
  const std::vector<bool> in_comment = CommentBytes(original);
  std::vector<size_t> line_ends;
  for (size_t i = 0; i < original.size(); ++i) {
    if (original[i] == '\n') line_ends.push_back(i);
  }

  sweep::Watchdog watchdog(std::chrono::seconds(30));
  // Returns "error", "ok, original" or "ok, different".
  auto load = [&](const std::string& what, const std::string& text) -> std::string {
    watchdog.Arm("config " + what);
    SCOPED_TRACE(what);
    auto loaded = config::ParseExperiment(path, text);
    absl::Status s = loaded.status();
    if (loaded.ok()) {
      config::Experiment independent;
      EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &independent)) << "the loader accepted it";
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(independent, (*loaded)->experiment));
      config::ApplyDefaults(&(*loaded)->experiment);
      config::ConfigErrors errors(path);
      config::Validate(**loaded, &errors);
      s = errors.ToStatus();
    }
    if (!s.ok()) {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
      for (absl::string_view line : absl::StrSplit(s.message(), '\n')) {
        EXPECT_TRUE(absl::StartsWith(line, path + ":")) << line;
        EXPECT_TRUE(absl::StrContains(line, ": error: ")) << line;
        if (!loaded.ok()) {
          std::vector<std::string> parts = absl::StrSplit(line.substr(path.size()), absl::MaxSplits(':', 3));
          int l = 0, c = 0;
          EXPECT_TRUE(parts.size() == 4 && absl::SimpleAtoi(parts[1], &l) && absl::SimpleAtoi(parts[2], &c) &&
                      l > 0 && c > 0)
              << "a parse error without line and column: " << line;
        }
      }
      return "error";
    }
    return google::protobuf::util::MessageDifferencer::Equals((*loaded)->experiment, reference) ? "ok, original"
                                                                                                : "ok, different";
  };

  std::mt19937_64 rng(2026003);
  Tally truncations("config truncations");
  const std::vector<size_t> cuts = TruncationLengths(original.size(), line_ends, kCases, &rng);
  ASSERT_EQ(cuts.size(), static_cast<size_t>(kCases));
  for (size_t cut : cuts) truncations.Count(load(absl::StrCat("truncated to ", cut), original.substr(0, cut)));
  Tally flips("config bit flips");
  Tally comment_flips("config bit flips inside comments");
  for (const auto& [pos, bit] : BitFlips(original.size(), kCases, &rng)) {
    const std::string text = Flipped(original, pos, bit);
    const std::string outcome = load(absl::StrCat("bit ", bit, " of byte ", pos, " flipped"), text);
    flips.Count(outcome);
    if (in_comment[pos] && text[pos] != '\n') {
      comment_flips.Count(outcome);
      EXPECT_NE(outcome, "ok, different") << "a flip in a comment changed the experiment: byte " << pos;
    }
  }
  truncations.Print();
  flips.Print();
  comment_flips.Print();
  EXPECT_EQ(truncations.count("error") + truncations.count("ok, original") + truncations.count("ok, different"),
            kCases);
  EXPECT_GT(comment_flips.total(), 0);
}

// ---- Checkpoint (the real Saver: 2 shards, 3 chunks per kernel; ckpt-1 and ckpt-2) ----
//
// Each file of ckpt-2 (FILES, each shard's SST, MANIFEST, CURRENT, OPTIONS, IDENTITY), and the
// `checkpoint` state file, is truncated and bit-flipped in turn (the empty LOCK files cannot be).
// Rule for a file of ckpt-2: reading each tensor straight from ckpt-2 gives the exact saved
// tensor or DataLoss naming ckpt-2; full verification of ckpt-2 fails, naming the corrupted file
// (every file is under a CRC: FILES, RocksDB's, or ours); the Saver's restore falls back to ckpt-1 and restores exactly
// its tensors. Rule for the state file: the restore uses ckpt-2 and restores exactly its tensors:
// either the state file still says what the Saver wrote (a flip in its comment or a time), or
// it is DataLoss (unparsable, or inconsistent: see ReadCheckpointState) and every directory is
// a candidate.

struct SweepModel {
  SweepModel() {
    GraphDefBuilder b;
    const std::vector<std::pair<std::string, TensorShape>> vars = {
        {"dense/kernel", TensorShape({40, 8})}, {"dense/bias", TensorShape({8})},
        {"dense/kernel/momentum", TensorShape({40, 8})}};
    std::vector<std::string> inits, trains;
    for (const auto& [name, shape] : vars) {
      const std::string v = b.Variable(name, DT_FLOAT, shape, kContainer);
      Tensor init(DT_FLOAT, shape), delta(DT_FLOAT, shape);
      for (int64_t i = 0; i < shape.num_elements(); ++i) {
        init.data<float>()[i] = 0.001f * i - 0.1f * name.size();
        delta.data<float>()[i] = 0.37f + 0.01f * i;
      }
      inits.push_back(b.Assign(name + "/init", v, b.Const(name + "/init_value", init), DT_FLOAT));
      trains.push_back(b.AssignAdd(name + "/train", v, b.Const(name + "/delta", delta), DT_FLOAT));
      b.Identity(name + "/read", v, DT_FLOAT);
      variables.push_back({name, "", DT_FLOAT});
    }
    const std::string gs = b.Variable("global_step", DT_INT64, TensorShape({}), kContainer);
    inits.push_back(b.Assign("global_step/init", gs, b.Const("gs0", Tensor::Scalar<int64_t>(0)), DT_INT64));
    trains.push_back(b.AssignAdd("global_step/train", gs, b.Const("one", Tensor::Scalar<int64_t>(1)), DT_INT64));
    b.Identity("global_step/read", gs, DT_INT64);
    variables.push_back({"global_step", "", DT_INT64});
    b.NoOp("init", inits);
    b.NoOp("train", trains);
    graph = b.graph();
  }
  std::unique_ptr<Session> NewSessionWith(const checkpoint::Saver& saver) const {
    Session::Reset({kContainer});
    auto s = NewSession();
    EXPECT_TRUE(s.ok());
    EXPECT_TRUE((*s)->Create(graph).ok());
    EXPECT_TRUE(saver.Extend(s->get()).ok());
    return *std::move(s);
  }
  // The variables' values, by name, from a session ("" values when a fetch fails).
  std::map<std::string, Tensor> Values(Session* session) const {
    std::map<std::string, Tensor> out;
    for (const checkpoint::SaveableVariable& v : variables) {
      std::vector<Tensor> t;
      if (session->Run({}, {v.node + "/read"}, {}, &t).ok()) out[v.node] = t[0].Clone();  // not the variable's buffer
    }
    return out;
  }
  static constexpr char kContainer[] = "corruption_sweep";
  GraphDef graph;
  std::vector<checkpoint::SaveableVariable> variables;
};

bool SameTensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.TotalBytes() == b.TotalBytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

bool SameValues(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, t] : a) {
    auto it = b.find(name);
    if (it == b.end() || !SameTensor(t, it->second)) return false;
  }
  return true;
}

// Every regular file under `dir`, as paths relative to it.
void ListFiles(const std::string& dir, const std::string& rel, std::vector<std::string>* out) {
  auto children = Env::Default()->GetChildren(JoinPath(dir, rel));
  ASSERT_TRUE(children.ok()) << children.status();
  for (const std::string& c : *children) {
    const std::string r = rel.empty() ? c : JoinPath(rel, c);
    if (Env::Default()->IsDirectory(JoinPath(dir, r))) {
      ListFiles(dir, r, out);
    } else {
      out->push_back(r);
    }
  }
}

TEST(CorruptionSweep, Checkpoint) {
  SweepModel model;
  checkpoint::SaverOptions options;
  options.run_dir = FreshTestDir("sweep_ckpt_pristine");
  options.num_shards = 2;
  options.chunk_bytes = 512;  // each 1280-byte kernel spans three chunks
  options.background = false;
  auto saver = checkpoint::Saver::Create(options, model.variables);
  ASSERT_TRUE(saver.ok()) << saver.status();
  std::map<int64_t, std::map<std::string, Tensor>> saved;
  {
    auto session = model.NewSessionWith(**saver);
    std::vector<Tensor> none;
    ASSERT_TRUE(session->Run({}, {}, {"init"}, &none).ok());
    for (int64_t step = 1; step <= 2; ++step) {
      ASSERT_TRUE(session->Run({}, {}, {"train"}, &none).ok());
      ASSERT_TRUE((*saver)->Save(session.get(), step).ok());
      saved[step] = model.Values(session.get());
      ASSERT_EQ(saved[step].size(), model.variables.size());
    }
  }
  // The pristine checkpoints directory, kept in memory; each case starts from a copy.
  const std::string pristine = checkpoint::CheckpointsDir(options.run_dir);
  std::vector<std::string> rel_paths;
  ListFiles(pristine, "", &rel_paths);
  std::map<std::string, std::string> files;
  std::vector<std::string> targets;  // what the sweep corrupts
  for (const std::string& r : rel_paths) {
    files[r] = ReadRaw(JoinPath(pristine, r));
    if (!files[r].empty() && (r == "checkpoint" || absl::StartsWith(r, "ckpt-2/"))) targets.push_back(r);
  }
  ASSERT_GE(targets.size(), 12u);  // state file, FILES, 2 x (SST, MANIFEST, CURRENT, OPTIONS, IDENTITY)

  checkpoint::SaverOptions scratch_options = options;
  scratch_options.run_dir = FreshTestDir("sweep_ckpt");
  auto scratch_saver = checkpoint::Saver::Create(scratch_options, model.variables);
  ASSERT_TRUE(scratch_saver.ok());
  const std::string scratch = checkpoint::CheckpointsDir(scratch_options.run_dir);
  const std::string ckpt2 = JoinPath(scratch, "ckpt-2");
  for (const auto& [r, bytes] : files) {
    ASSERT_TRUE(Env::Default()->CreateDirs(Dirname(JoinPath(scratch, r))).ok());
    WriteRaw(JoinPath(scratch, r), bytes);
  }

  sweep::Watchdog watchdog(std::chrono::seconds(30));
  std::map<std::string, Tally> by_file;
  Tally naming("checkpoint: verification errors");
  // Checks the rules after `target` was corrupted; counts the outcome in both tallies.
  auto check = [&](const std::string& target, const std::string& what, Tally* tally, Tally* all) {
    watchdog.Arm("checkpoint: " + what);
    SCOPED_TRACE(what);
    std::string outcome;
    if (target != "checkpoint") {
      auto reader = checkpoint::CheckpointReader::Open(ckpt2);
      bool exact = reader.ok();
      if (!reader.ok()) {
        EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss) << reader.status();
        EXPECT_TRUE(absl::StrContains(reader.status().message(), ckpt2)) << reader.status();
      } else {
        for (const auto& [name, value] : saved[2]) {
          auto t = (*reader)->ReadTensor(name);
          if (t.ok()) {
            EXPECT_TRUE(SameTensor(*t, value)) << "silently wrong value of " << name;
          } else {
            exact = false;
            EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss) << t.status();
            EXPECT_TRUE(absl::StrContains(t.status().message(), ckpt2)) << t.status();
          }
        }
      }
      // Full verification (VerifyCheckpoint at kFull: Open, then VerifyAll) must fail.
      absl::Status v = reader.ok() ? (*reader)->VerifyAll() : reader.status();
      EXPECT_FALSE(v.ok()) << "the corrupted ckpt-2 verifies";
      EXPECT_TRUE(absl::StrContains(v.message(), ckpt2)) << v;
      const std::string base = target.substr(target.rfind('/') + 1);
      naming.Count(absl::StrContains(v.message(), base) ? "names the file" : "names the checkpoint only");
      outcome = exact ? "read exact, " : "read error, ";
    }
    const int64_t want = target == "checkpoint" ? 2 : 1;
    auto session = model.NewSessionWith(**scratch_saver);
    auto step = (*scratch_saver)->RestoreLatest(session.get());
    ASSERT_TRUE(step.ok()) << step.status();
    EXPECT_EQ(*step, want);
    EXPECT_TRUE(SameValues(model.Values(session.get()), saved[want])) << "restored values are not ckpt-" << want;
    outcome += absl::StrCat("restored ckpt-", *step);
    tally->Count(outcome);
    all->Count(outcome);
  };

  std::mt19937_64 rng(2026004);
  std::vector<size_t> sizes;
  for (const std::string& t : targets) sizes.push_back(files[t].size());
  std::vector<size_t> flip_capacity;
  for (size_t s : sizes) flip_capacity.push_back(8 * s);
  const std::vector<size_t> cut_quota = sweep::Quotas(sizes, kCases);
  const std::vector<size_t> flip_quota = sweep::Quotas(flip_capacity, kCases);
  Tally truncations("checkpoint truncations"), flips("checkpoint bit flips");
  for (size_t f = 0; f < targets.size(); ++f) {
    const std::string& t = targets[f];
    Tally* cut_tally = &by_file.emplace(t + " truncations", Tally("  " + t + " truncations")).first->second;
    for (size_t cut : TruncationLengths(sizes[f], {}, cut_quota[f], &rng)) {
      WriteRaw(JoinPath(scratch, t), files[t].substr(0, cut));
      check(t, absl::StrCat(t, " truncated to ", cut), cut_tally, &truncations);
      WriteRaw(JoinPath(scratch, t), files[t]);
    }
    Tally* flip_tally = &by_file.emplace(t + " bit flips", Tally("  " + t + " bit flips")).first->second;
    for (const auto& [pos, bit] : BitFlips(sizes[f], flip_quota[f], &rng)) {
      WriteRaw(JoinPath(scratch, t), Flipped(files[t], pos, bit));
      check(t, absl::StrCat(t, ": bit ", bit, " of byte ", pos, " flipped"), flip_tally, &flips);
      WriteRaw(JoinPath(scratch, t), files[t]);
    }
  }
  // The readers wrote nothing: the directory holds exactly the files it started with.
  std::vector<std::string> after;
  ListFiles(scratch, "", &after);
  std::sort(after.begin(), after.end());
  std::sort(rel_paths.begin(), rel_paths.end());
  EXPECT_EQ(after, rel_paths);
  for (const auto& [name, tally] : by_file) tally.Print();
  truncations.Print();
  flips.Print();
  naming.Print();
  EXPECT_EQ(naming.count("names the file"), naming.total()) << "every failed verification names the corrupted file";
  EXPECT_EQ(truncations.total(), kCases);
  EXPECT_EQ(flips.total(), kCases);
}

}  // namespace
}  // namespace sluice
