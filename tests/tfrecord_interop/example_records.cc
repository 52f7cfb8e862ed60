// example_records: Sluice's side of the TFRecord / tf.train.Example interop
// test (tfrecord_interop_test.sh, tfrecord_interop.py holds TensorFlow's).
//
//   example_records write-examples FILE   the spec Examples (below), with Sluice's writer
//   example_records write-raw FILE        the spec raw records (not Examples)
//   example_records dump FILE...          every record of every file, parsed as an Example,
//                                         in the canonical text form (stdout)
//   example_records dump-raw FILE...      every record as hex, one a line
//   example_records dump-fashion FILE...  Examples {image: bytes, label: int64} read through
//                                         the in-graph pipeline (FIFOQueue of file names ->
//                                         TFRecordReader -> ParseExample): "label hex(image)"
//
// The spec is built independently here and in tfrecord_interop.py; the test
// checks that both sides dump both sides' files to the same text. Canonical
// form, one record after another:
//   record <i> features:<0|1> n:<number of features>
//   <hex(key)> bytes <count> <hex(value)>...      (keys in byte order)
//   <hex(key)> float <count> <8-hex-digit IEEE bits>...
//   <hex(key)> int64 <count> <decimal>...
//   <hex(key)> none
// Exit codes: 0 done, 1 a read or parse error (the message names the file),
// 2 usage.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "engine/runtime/session.h"
#include "engine/platform/env.h"
#include "inputs/example.pb.h"
#include "inputs/input_builders.h"
#include "engine/platform/record_reader.h"
#include "engine/platform/record_writer.h"

namespace sluice {
namespace {

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint32_t ToBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

// ---- the spec (keep in step with tfrecord_interop.py) ----

std::string Pattern(size_t n, uint32_t mul, uint32_t add) {
  std::string s(n, '\0');
  for (size_t j = 0; j < n; ++j) s[j] = static_cast<char>((j * mul + add) & 0xff);
  return s;
}

std::vector<Example> SpecExamples() {
  std::vector<Example> out;
  // 0: no features message at all.
  out.emplace_back();
  // 1: an empty features map.
  out.emplace_back();
  out.back().mutable_features();
  // 2: empty lists of every kind, and a feature with no kind.
  {
    Example e;
    auto& f = *e.mutable_features()->mutable_feature();
    f["b"].mutable_bytes_list();
    f["f"].mutable_float_list();
    f["i"].mutable_int64_list();
    f["n"];
    out.push_back(e);
  }
  // 3: edge values of every kind, and unusual keys.
  {
    Example e;
    auto& f = *e.mutable_features()->mutable_feature();
    auto* b = f["bytes"].mutable_bytes_list();
    for (const std::string& v : {std::string(), std::string(1, '\0'), std::string("\x00\xff\x80 binary", 10),
                                 std::string("hello"), std::string("\xc3\xa9t\xc3\xa9")}) {
      b->add_value(v);
    }
    auto* fl = f["floats"].mutable_float_list();
    for (uint32_t bits : {0x00000000u, 0x80000000u, 0x3fc00000u, 0xc0500000u, 0x00000001u, 0x007fffffu, 0x7f7fffffu,
                          0xff7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x3eaaaaabu}) {
      fl->add_value(FromBits(bits));
    }
    auto* in = f["ints"].mutable_int64_list();
    for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{127}, int64_t{128}, int64_t{-128},
                      int64_t{2147483647}, int64_t{-2147483647} - 1, int64_t{4294967296}, INT64_MAX, INT64_MIN}) {
      in->add_value(v);
    }
    f["\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87"].mutable_bytes_list()->add_value("value");  // "ключ"
    f["key with spaces/and:punct"].mutable_int64_list()->add_value(42);
    out.push_back(e);
  }
  // 4: long lists (the record is larger than the reader's 256 KB buffer).
  {
    Example e;
    auto& f = *e.mutable_features()->mutable_feature();
    f["blob"].mutable_bytes_list()->add_value(Pattern(300000, 131, 7));
    auto* fl = f["many_floats"].mutable_float_list();
    for (uint32_t i = 0; i < 1000; ++i) fl->add_value(FromBits(0x3f800000u + i * 4099u));
    auto* in = f["many_ints"].mutable_int64_list();
    for (int64_t i = 0; i < 1000; ++i) in->add_value((i % 2 ? -1 : 1) * i * i * 1000003);
    out.push_back(e);
  }
  // 5..54: small records like a data set's.
  for (int i = 0; i < 50; ++i) {
    Example e;
    auto& f = *e.mutable_features()->mutable_feature();
    f["id"].mutable_int64_list()->add_value(i);
    f["name"].mutable_bytes_list()->add_value(absl::StrCat("example-", i));
    auto* fl = f["vals"].mutable_float_list();
    for (int k = 0; k <= i % 5; ++k) fl->add_value(static_cast<float>(i + k) * 0.25f);
    out.push_back(e);
  }
  return out;
}

std::vector<std::string> SpecRaw() {
  std::string ramp(255, '\0');
  for (int j = 0; j < 255; ++j) ramp[j] = static_cast<char>(j);
  return {std::string(), "a", ramp, Pattern(70000, 7, 3), std::string(1000, '\0'), Pattern(300000, 13, 1)};
}

// ---- reading and dumping ----

std::string DumpExample(size_t index, const Example& e) {
  std::string out = absl::StrCat("record ", index, " features:", e.has_features() ? 1 : 0,
                                 " n:", e.features().feature_size(), "\n");
  std::map<std::string, const Feature*> sorted;  // std::string compares as unsigned bytes
  for (const auto& kv : e.features().feature()) sorted[kv.first] = &kv.second;
  for (const auto& kv : sorted) {
    const Feature& f = *kv.second;
    absl::StrAppend(&out, absl::BytesToHexString(kv.first));
    switch (f.kind_case()) {
      case Feature::kBytesList:
        absl::StrAppend(&out, " bytes ", f.bytes_list().value_size());
        for (const std::string& v : f.bytes_list().value()) absl::StrAppend(&out, " ", absl::BytesToHexString(v));
        break;
      case Feature::kFloatList:
        absl::StrAppend(&out, " float ", f.float_list().value_size());
        for (float v : f.float_list().value()) {
          char bits[16];
          std::snprintf(bits, sizeof(bits), " %08" PRIx32, ToBits(v));
          out += bits;
        }
        break;
      case Feature::kInt64List:
        absl::StrAppend(&out, " int64 ", f.int64_list().value_size());
        for (int64_t v : f.int64_list().value()) absl::StrAppend(&out, " ", v);
        break;
      case Feature::KIND_NOT_SET:
        absl::StrAppend(&out, " none");
        break;
    }
    out += "\n";
  }
  return out;
}

// Calls fn(record) for every record of `path`; stops at the first error.
template <typename Fn>
absl::Status ForEachRecord(const std::string& path, Fn fn) {
  auto file = Env::Default()->NewRandomAccessFile(path);
  if (!file.ok()) return file.status();
  SequentialRecordReader reader(file->get());
  while (true) {
    uint64_t offset = reader.offset();
    absl::string_view record;
    absl::Status s = reader.ReadRecord(&record);
    if (absl::IsOutOfRange(s)) return absl::OkStatus();
    if (!s.ok()) return s;
    s = fn(offset, record);
    if (!s.ok()) return s;
  }
}

absl::Status Dump(const std::vector<std::string>& paths) {
  size_t index = 0;
  for (const std::string& path : paths) {
    absl::Status s = ForEachRecord(path, [&](uint64_t offset, absl::string_view record) {
      Example e;
      if (!e.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
        return absl::DataLossError(absl::StrCat(path, ": the record at offset ", offset, " is not an Example"));
      }
      std::fputs(DumpExample(index++, e).c_str(), stdout);
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status DumpRaw(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    absl::Status s = ForEachRecord(path, [](uint64_t, absl::string_view record) {
      std::printf("%zu %s\n", record.size(), absl::BytesToHexString(record).c_str());
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// The graph path: file names -> FIFOQueue -> TFRecordReader -> ParseExample.
absl::Status DumpFashion(const std::vector<std::string>& paths) {
  GraphDef graph;
  InputGraph in(&graph, "example_records");
  std::string q = in.AddNode("files", "FIFOQueue", {},
                             {{"component_types", MakeAttr(std::vector<DataType>{DT_STRING})},
                              {"capacity", MakeAttr(static_cast<int64_t>(paths.size()))},
                              {"container", MakeAttr(in.container)}});
  in.AddConst("names", Tensor::FromVector<tstring>(paths));
  in.AddNode("fill", "QueueEnqueueMany", {q, "names"}, {{"Tcomponents", MakeAttr(std::vector<DataType>{DT_STRING})}});
  in.AddNode("close", "QueueClose", {q});
  auto kv = AddReaderRead(&in, "TFRecordReader", q, "reader");
  auto parsed = AddParseSingleExample(
      &in, kv.second, {{"image", DT_STRING, TensorShape({})}, {"label", DT_INT64, TensorShape({})}}, "parse");
  auto session = NewSession();
  if (!session.ok()) return session.status();
  absl::Status s = (*session)->Create(graph);
  std::vector<Tensor> out;
  if (s.ok()) s = (*session)->Run({}, {}, {"fill"}, &out);
  if (s.ok()) s = (*session)->Run({}, {}, {"close"}, &out);
  while (s.ok()) {
    s = (*session)->Run({}, {parsed[0], parsed[1]}, {}, &out);
    if (!s.ok()) break;
    std::printf("%" PRId64 " %s\n", out[1].scalar<int64_t>(), absl::BytesToHexString(out[0].scalar<tstring>()).c_str());
  }
  Session::Reset({in.container});
  return absl::IsOutOfRange(s) ? absl::OkStatus() : s;
}

absl::Status Write(const std::string& path, const std::vector<std::string>& records) {
  auto file = Env::Default()->NewWritableFile(path);
  if (!file.ok()) return file.status();
  RecordWriter writer(file->get());
  for (const std::string& r : records) {
    absl::Status s = writer.WriteRecord(r);
    if (!s.ok()) return s;
  }
  return writer.Close();
}

constexpr char kUsage[] =
    "usage: example_records write-examples FILE | write-raw FILE | dump FILE... | dump-raw FILE... |"
    " dump-fashion FILE...\n";

int Main(int argc, char** argv) {
  if (argc < 3) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string mode = argv[1];
  const std::vector<std::string> paths(argv + 2, argv + argc);
  absl::Status s;
  if (mode == "write-examples" && paths.size() == 1) {
    std::vector<std::string> records;
    for (const Example& e : SpecExamples()) records.push_back(e.SerializeAsString());
    s = Write(paths[0], records);
  } else if (mode == "write-raw" && paths.size() == 1) {
    s = Write(paths[0], SpecRaw());
  } else if (mode == "dump") {
    s = Dump(paths);
  } else if (mode == "dump-raw") {
    s = DumpRaw(paths);
  } else if (mode == "dump-fashion") {
    s = DumpFashion(paths);
  } else {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::fflush(stdout);
  if (!s.ok()) {
    std::fprintf(stderr, "example_records: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) { return sluice::Main(argc, argv); }
