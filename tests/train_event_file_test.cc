// The event file of a real `train` run, read back with a decoder written here: its own CRC32C
// and TFRecord framing, and its own protobuf wire-format parsing of Event, Summary,
// HistogramProto, Image, SessionLog and GraphDef (no generated protos). It checks what
// monitoring/EVENTS.md promises: the version record, the graph, scalars at every
// summaries.every_steps step, histograms whose bucket limits are TensorFlow's defaults and
// whose buckets hold min and max, PNG input images, eval scalars, and session_log START at the
// restored step after a resume.
#include <dirent.h>
#include <sys/wait.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace {

// ---- CRC32C and framing ----

uint32_t Crc32c(const std::string& data) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char b : data) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return crc ^ 0xffffffffu;
}

uint32_t Masked(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

uint64_t LittleEndian(const std::string& s, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[pos + i]);
  return v;
}

// The records of a TFRecord file; ADD_FAILURE on a bad CRC or a truncated record.
std::vector<std::string> ReadRecords(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  std::vector<std::string> records;
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < 12) {
      ADD_FAILURE() << path << ": truncated header at " << pos;
      break;
    }
    const uint64_t len = LittleEndian(bytes, pos, 8);
    if (static_cast<uint32_t>(LittleEndian(bytes, pos + 8, 4)) != Masked(Crc32c(bytes.substr(pos, 8)))) {
      ADD_FAILURE() << path << ": bad length CRC at " << pos;
      break;
    }
    if (bytes.size() - pos - 12 < len + 4) {
      ADD_FAILURE() << path << ": truncated record at " << pos;
      break;
    }
    std::string data = bytes.substr(pos + 12, len);
    if (static_cast<uint32_t>(LittleEndian(bytes, pos + 12 + len, 4)) != Masked(Crc32c(data))) {
      ADD_FAILURE() << path << ": bad data CRC at " << pos;
      break;
    }
    records.push_back(std::move(data));
    pos += 12 + len + 4;
  }
  return records;
}

// ---- Protobuf wire format ----

struct Field {
  int number = 0;
  int wire = 0;        // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
  uint64_t bits = 0;   // varint / fixed64 / fixed32 value
  std::string bytes;   // length-delimited payload
  double AsDouble() const {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  float AsFloat() const {
    const uint32_t b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
};

bool ReadVarint(const std::string& s, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *pos < s.size(); shift += 7) {
    const auto b = static_cast<unsigned char>(s[(*pos)++]);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// A message's fields in wire order; `ok` false on malformed input.
std::vector<Field> Parse(const std::string& s, bool* ok) {
  std::vector<Field> fields;
  size_t pos = 0;
  *ok = true;
  while (pos < s.size()) {
    uint64_t key;
    if (!ReadVarint(s, &pos, &key)) return *ok = false, fields;
    Field f;
    f.number = static_cast<int>(key >> 3);
    f.wire = static_cast<int>(key & 7);
    if (f.wire == 0) {
      if (!ReadVarint(s, &pos, &f.bits)) return *ok = false, fields;
    } else if (f.wire == 1 || f.wire == 5) {
      const int n = f.wire == 1 ? 8 : 4;
      if (s.size() - pos < static_cast<size_t>(n)) return *ok = false, fields;
      f.bits = LittleEndian(s, pos, n);
      pos += n;
    } else if (f.wire == 2) {
      uint64_t len;
      if (!ReadVarint(s, &pos, &len) || s.size() - pos < len) return *ok = false, fields;
      f.bytes = s.substr(pos, len);
      pos += len;
    } else {
      return *ok = false, fields;
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

std::vector<Field> Parse(const std::string& s) {
  bool ok;
  std::vector<Field> f = Parse(s, &ok);
  EXPECT_TRUE(ok) << "malformed protobuf message of " << s.size() << " bytes";
  return f;
}

const Field* First(const std::vector<Field>& fields, int number) {
  for (const Field& f : fields) {
    if (f.number == number) return &f;
  }
  return nullptr;
}

std::vector<double> PackedDoubles(const Field* f) {
  std::vector<double> out;
  if (f == nullptr) return out;
  for (size_t i = 0; i + 8 <= f->bytes.size(); i += 8) {
    const uint64_t b = LittleEndian(f->bytes, i, 8);
    double d;
    std::memcpy(&d, &b, 8);
    out.push_back(d);
  }
  return out;
}

// ---- Decoded events ----

struct Histo {
  double min = 0, max = 0, num = 0, sum = 0;
  std::vector<double> limits, counts;
};
struct Image {
  int height = 0, width = 0, colorspace = 0;
  std::string png;
};
struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::string graph_def;
  bool has_summary = false;
  std::map<std::string, float> scalars;
  std::map<std::string, Histo> histograms;
  std::map<std::string, Image> images;
  int session_status = -1;
};

Event DecodeEvent(const std::string& record) {
  Event e;
  for (const Field& f : Parse(record)) {
    if (f.number == 1 && f.wire == 1) e.wall_time = f.AsDouble();
    if (f.number == 2 && f.wire == 0) e.step = static_cast<int64_t>(f.bits);
    if (f.number == 3 && f.wire == 2) e.file_version = f.bytes;
    if (f.number == 4 && f.wire == 2) e.graph_def = f.bytes;
    if (f.number == 7 && f.wire == 2) {
      const std::vector<Field> log = Parse(f.bytes);
      const Field* status = First(log, 1);
      e.session_status = status ? static_cast<int>(status->bits) : 0;
    }
    if (f.number == 5 && f.wire == 2) {
      e.has_summary = true;
      for (const Field& v : Parse(f.bytes)) {
        if (v.number != 1) continue;
        std::vector<Field> value = Parse(v.bytes);
        const Field* tag = First(value, 1);
        const std::string name = tag ? tag->bytes : "";
        if (const Field* simple = First(value, 2)) e.scalars[name] = simple->AsFloat();
        if (const Field* histo = First(value, 5)) {
          std::vector<Field> h = Parse(histo->bytes);
          Histo out;
          if (const Field* x = First(h, 1)) out.min = x->AsDouble();
          if (const Field* x = First(h, 2)) out.max = x->AsDouble();
          if (const Field* x = First(h, 3)) out.num = x->AsDouble();
          if (const Field* x = First(h, 4)) out.sum = x->AsDouble();
          out.limits = PackedDoubles(First(h, 6));
          out.counts = PackedDoubles(First(h, 7));
          e.histograms[name] = out;
        }
        if (const Field* image = First(value, 4)) {
          std::vector<Field> im = Parse(image->bytes);
          Image out;
          if (const Field* x = First(im, 1)) out.height = static_cast<int>(x->bits);
          if (const Field* x = First(im, 2)) out.width = static_cast<int>(x->bits);
          if (const Field* x = First(im, 3)) out.colorspace = static_cast<int>(x->bits);
          if (const Field* x = First(im, 4)) out.png = x->bytes;
          e.images[name] = out;
        }
      }
    }
  }
  return e;
}

// TensorFlow's default histogram bucket limits, built here from their definition.
std::vector<double> DefaultLimits() {
  std::vector<double> pos;
  for (double v = 1e-12; v < 1e20; v *= 1.1) pos.push_back(v);
  std::vector<double> all = {-DBL_MAX};
  for (auto it = pos.rbegin(); it != pos.rend(); ++it) all.push_back(-*it);
  all.push_back(0.0);
  all.insert(all.end(), pos.begin(), pos.end());
  all.push_back(DBL_MAX);
  return all;
}

// ---- Running train ----

std::string Runfile(const std::string& path) { return std::string(std::getenv("TEST_SRCDIR")) + "/sluice/" + path; }

int RunTrain(const std::string& args, std::string* output) {
  const std::string log = std::string(std::getenv("TEST_TMPDIR")) + "/train.log";
  const std::string cmd = Runfile("cmd/train/train") + " " + Runfile("configs/fashion_mlp.pbtxt") + " " + args +
                          " >" + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  *output = ss.str();
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::vector<std::string> EventFiles(const std::string& dir) {
  std::vector<std::string> files;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* ent = ::readdir(d)) {
      if (std::strstr(ent->d_name, "tfevents") != nullptr) files.push_back(dir + "/" + ent->d_name);
    }
    ::closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

class TrainEventFileTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    run_dir_ = new std::string(std::string(std::getenv("TEST_TMPDIR")) + "/run");
    // A small shuffle buffer starts the run quickly; summaries every 10 steps.
    common_ = new std::string(
        " --run_dir " + *run_dir_ +
        " --set input.train.shuffle.capacity=2000 --set input.train.shuffle.min_after_dequeue=500"
        " --set summaries.every_steps=10 --set summaries.input_images=2 --set train.eval_every_steps=0"
        " --set checkpoint.every_steps=0");
    std::string output;
    first_rc_ = RunTrain("--set train.steps=30" + *common_, &output);
    first_output_ = new std::string(output);
  }
  static std::string* run_dir_;
  static std::string* common_;
  static std::string* first_output_;
  static int first_rc_;
};
std::string* TrainEventFileTest::run_dir_ = nullptr;
std::string* TrainEventFileTest::common_ = nullptr;
std::string* TrainEventFileTest::first_output_ = nullptr;
int TrainEventFileTest::first_rc_ = -1;

TEST_F(TrainEventFileTest, FirstRunWritesVersionGraphScalarsHistogramsImages) {
  ASSERT_EQ(first_rc_, 0) << *first_output_;
  const std::vector<std::string> files = EventFiles(*run_dir_);
  ASSERT_EQ(files.size(), 1u) << *first_output_;
  const std::string name = files[0].substr(files[0].rfind('/') + 1);
  // events.out.tfevents.<10 digits>.<host>
  ASSERT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
  EXPECT_EQ(name.find_first_not_of("0123456789", 20), 30u) << name;
  EXPECT_EQ(name[30], '.') << name;

  std::vector<Event> events;
  for (const std::string& r : ReadRecords(files[0])) events.push_back(DecodeEvent(r));
  ASSERT_GE(events.size(), 5u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_EQ(events[0].step, 0);
  EXPECT_GT(events[0].wall_time, 1.6e9);

  // The graph: GraphDef.node (1) -> NodeDef.name (1), .op (2).
  int graphs = 0;
  std::map<std::string, std::string> ops;
  for (const Event& e : events) {
    if (e.graph_def.empty()) continue;
    ++graphs;
    for (const Field& n : Parse(e.graph_def)) {
      if (n.number != 1) continue;
      std::vector<Field> node = Parse(n.bytes);
      const Field* nm = First(node, 1);
      const Field* op = First(node, 2);
      if (nm && op) ops[nm->bytes] = op->bytes;
    }
  }
  EXPECT_EQ(graphs, 1);
  EXPECT_EQ(ops["fc1/kernel"], "VariableV2");
  EXPECT_EQ(ops["summaries/merged"], "MergeSummary");
  EXPECT_GT(ops.size(), 50u);

  std::map<int64_t, const Event*> summaries;
  for (const Event& e : events) {
    if (e.has_summary && e.scalars.count("train/loss")) summaries[e.step] = &e;
  }
  ASSERT_EQ(summaries.size(), 3u);
  const std::vector<double> defaults = DefaultLimits();
  const std::set<double> default_set(defaults.begin(), defaults.end());
  for (int64_t step : {10, 20, 30}) {
    ASSERT_TRUE(summaries.count(step)) << "no summary at step " << step;
    const Event& e = *summaries[step];
    SCOPED_TRACE(step);
    EXPECT_TRUE(std::isfinite(e.scalars.at("train/loss")));
    EXPECT_GT(e.scalars.at("train/loss"), 0);
    // momentum at 0.05, decaying by 0.7 every 2000 steps: a little below 0.05 here.
    EXPECT_NEAR(e.scalars.at("train/learning_rate"), 0.05, 1e-3);
    EXPECT_LE(e.scalars.at("train/learning_rate"), 0.05f);
    ASSERT_TRUE(e.scalars.count("train/accuracy"));
    EXPECT_GE(e.scalars.at("train/accuracy"), 0);
    EXPECT_LE(e.scalars.at("train/accuracy"), 1);
    ASSERT_TRUE(e.scalars.count("train/examples_per_second"));
    EXPECT_GT(e.scalars.at("train/examples_per_second"), 0);
    EXPECT_GT(e.scalars.at("train/gradient_global_norm"), 0);

    // Histograms of fc1's variables and gradients ("fc1/*").
    for (const auto& [tag, count] : std::vector<std::pair<std::string, double>>{
             {"fc1/kernel", 784 * 512}, {"fc1/kernel/gradient", 784 * 512}, {"fc1/bias", 512}, {"fc1/bias/gradient", 512}}) {
      SCOPED_TRACE(tag);
      ASSERT_TRUE(e.histograms.count(tag));
      const Histo& h = e.histograms.at(tag);
      EXPECT_EQ(h.num, count);
      ASSERT_EQ(h.limits.size(), h.counts.size());
      ASSERT_FALSE(h.limits.empty());
      EXPECT_EQ(h.limits.back(), DBL_MAX);
      double total = 0;
      for (size_t i = 0; i < h.limits.size(); ++i) {
        EXPECT_TRUE(default_set.count(h.limits[i])) << "limit " << h.limits[i] << " is not a default limit";
        if (i > 0) {
          EXPECT_LT(h.limits[i - 1], h.limits[i]);
        }
        total += h.counts[i];
      }
      EXPECT_EQ(total, h.num);
      EXPECT_LE(h.min, h.max);
      EXPECT_LT(std::abs(h.min) + std::abs(h.max), 10.0);
      // The first and last non-empty buckets hold min and max: bucket i is [previous default
      // limit, limit[i]).
      auto holds = [&](double limit, double v) {
        const auto it = std::lower_bound(defaults.begin(), defaults.end(), limit);
        const double lower = it == defaults.begin() ? -DBL_MAX : *(it - 1);
        return lower <= v && v < limit;
      };
      size_t first = 0, last = h.counts.size() - 1;
      while (first < h.counts.size() && h.counts[first] == 0) ++first;
      while (last > 0 && h.counts[last] == 0) --last;
      ASSERT_LT(first, h.counts.size());
      EXPECT_TRUE(holds(h.limits[first], h.min)) << h.min << " not below " << h.limits[first];
      EXPECT_TRUE(holds(h.limits[last], h.max)) << h.max << " not below " << h.limits[last];
    }
    EXPECT_FALSE(e.histograms.count("fc2/kernel")) << "only fc1/* was asked for";

    // Two input images, 28x28 grayscale PNGs.
    ASSERT_EQ(e.images.size(), 2u);
    for (const char* tag : {"input/image/0", "input/image/1"}) {
      ASSERT_TRUE(e.images.count(tag)) << tag;
      const Image& im = e.images.at(tag);
      EXPECT_EQ(im.height, 28);
      EXPECT_EQ(im.width, 28);
      EXPECT_EQ(im.colorspace, 1);
      ASSERT_GT(im.png.size(), 33u);
      EXPECT_EQ(im.png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
      EXPECT_EQ(im.png.substr(12, 4), "IHDR");
      auto big_endian32 = [&](size_t pos) {
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(im.png[pos + i]);
        return v;
      };
      EXPECT_EQ(big_endian32(16), 28u) << "PNG width";
      EXPECT_EQ(big_endian32(20), 28u) << "PNG height";
      EXPECT_EQ(static_cast<unsigned char>(im.png[24]), 8) << "bit depth";
      EXPECT_EQ(static_cast<unsigned char>(im.png[25]), 0) << "grayscale";
    }
  }
  // The final evaluation.
  bool eval = false;
  for (const Event& e : events) eval = eval || (e.step == 30 && e.scalars.count("eval/accuracy") > 0);
  EXPECT_TRUE(eval);
  for (const Event& e : events) EXPECT_NE(e.session_status, 1) << "a fresh run has no session_log START";
}

TEST_F(TrainEventFileTest, ResumeWritesSessionStartAtTheStepAfterTheRestoredOne) {
  ASSERT_EQ(first_rc_, 0) << *first_output_;
  std::string output;
  ASSERT_EQ(RunTrain("--set train.steps=40 --allow-drift" + *common_, &output), 0) << output;
  const std::vector<std::string> files = EventFiles(*run_dir_);
  ASSERT_EQ(files.size(), 2u) << output;
  // The newer file (names sort by creation second; the same second gets a ".1" suffix).
  std::vector<Event> events;
  for (const std::string& f : files) {
    std::vector<Event> e;
    for (const std::string& r : ReadRecords(f)) e.push_back(DecodeEvent(r));
    bool has_start = false;
    for (const Event& x : e) has_start = has_start || x.session_status == 1;
    if (has_start) events = e;
  }
  ASSERT_FALSE(events.empty()) << "no file holds session_log START";
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  int starts = 0;
  for (const Event& e : events) {
    if (e.session_status == 1) {
      ++starts;
      // The resumed run's first step: TensorBoard keeps the first attempt's
      // points before it, step 30's included (a START at 30 dropped them).
      EXPECT_EQ(e.step, 31);
    }
  }
  EXPECT_EQ(starts, 1);
  bool step40 = false;
  for (const Event& e : events) step40 = step40 || (e.step == 40 && e.scalars.count("train/loss") > 0);
  EXPECT_TRUE(step40);
}

}  // namespace
