// ckpt: lists, inspects and verifies Sluice checkpoints (checkpoint/FORMAT.md)
// and TensorFlow V2 checkpoints, and converts between the two.
//
//   ckpt list PATH      checkpoints of a run and the tensors of one checkpoint
//                       (name, dtype, shape, bytes, slice)
//   ckpt inspect PATH   the same plus value statistics (min, max, mean)
//   ckpt verify PATH    every CRC and file of the checkpoint(s)
//   ckpt convert FROM TO  a TensorFlow checkpoint prefix FROM into a new
//                       Sluice checkpoint directory TO, or a Sluice PATH FROM
//                       (its newest checkpoint that reads whole) into a
//                       TensorFlow prefix TO
//
// PATH is a run directory, its checkpoints/ directory (list and inspect use
// the newest checkpoint, verify checks all of them), a checkpoint directory
// (ckpt-<step>), or one shard store inside it; or a TensorFlow checkpoint
// prefix (PREFIX.index exists; PREFIX.index itself is accepted too).
// Exit codes: 0 ok, 1 corrupt or unreadable checkpoint (the message names
// the file and tensor), 2 usage error (bad arguments, no checkpoint at PATH).
#include <cmath>
#include <complex>
#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/store_format.h"
#include "checkpoint/tensor_bundle_format.h"
#include "checkpoint/tensor_bundle_reader.h"
#include "checkpoint/tensor_bundle_writer.h"

namespace sluice {
namespace checkpoint {
namespace {

constexpr char kUsage[] =
    "usage: ckpt list|inspect|verify PATH\n"
    "       ckpt convert FROM TO\n"
    "  list     the checkpoints of a run and the tensors (dtype, shape, bytes) of one checkpoint\n"
    "  inspect  like list, with min/max/mean of every tensor\n"
    "  verify   check every CRC and file, and a run's state file; exit 0 ok, 1 corrupt\n"
    "  convert  a TensorFlow checkpoint prefix FROM into a new Sluice checkpoint directory TO,\n"
    "           or a Sluice PATH FROM (its newest checkpoint that reads whole, as train resumes from)\n"
    "           into a TensorFlow checkpoint prefix TO\n"
    "PATH: a run directory, its checkpoints/ directory, a ckpt-<step> directory or a shard store;\n"
    "      or a TensorFlow checkpoint prefix (PREFIX.index and PREFIX.data-*).\n";

enum Exit { kOk = 0, kCorrupt = 1, kUsage_ = 2 };

struct Target {
  std::string checkpoints_dir;          // set when PATH is a run or checkpoints directory
  std::vector<std::string> checkpoints;  // checkpoint directories, newest first
};

bool IsCheckpointDir(Env* env, const std::string& path) {
  if (!env->IsDirectory(path)) return false;
  auto children = env->GetChildren(path);
  if (!children.ok()) return false;
  for (const std::string& c : *children) {
    if (absl::StartsWith(c, "shard-")) return true;
  }
  return env->FileExists(JoinPath(path, kFilesName)).ok();
}

// `path` without trailing slashes ("/" stays).
std::string WithoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

std::string Parent(std::string path) {
  path = WithoutTrailingSlashes(std::move(path));
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool Resolve(Env* env, const std::string& path, Target* t) {
  if (IsCheckpointDir(env, path)) {
    t->checkpoints.push_back(path);
    return true;
  }
  if (env->FileExists(JoinPath(path, "CURRENT")).ok() && IsCheckpointDir(env, Parent(path))) {
    t->checkpoints.push_back(Parent(path));  // a shard store
    return true;
  }
  std::string dir = path;
  if (env->IsDirectory(CheckpointsDir(path))) dir = CheckpointsDir(path);
  if (!env->IsDirectory(dir)) return false;
  auto children = env->GetChildren(dir);
  if (!children.ok()) return false;
  std::vector<std::pair<int64_t, std::string>> found;
  for (const std::string& c : *children) {
    int64_t step;
    if (ParseCheckpointDirName(c, &step) && env->IsDirectory(JoinPath(dir, c))) found.push_back({step, c});
  }
  if (found.empty()) return false;
  std::sort(found.rbegin(), found.rend());
  t->checkpoints_dir = dir;
  for (const auto& f : found) t->checkpoints.push_back(JoinPath(dir, f.second));
  return true;
}

template <typename T>
double AsDouble(const T& v) {
  if constexpr (std::is_same_v<T, complex64>) {
    return std::abs(v);
  } else {
    return static_cast<double>(v);
  }
}

std::string Stats(const Tensor& t) {
  if (t.NumElements() == 0) return "(empty)";
  if (t.dtype() == DT_STRING) {
    std::string first = t.data<tstring>()[0];
    if (first.size() > 32) first = first.substr(0, 32) + "...";
    return absl::StrCat("first=\"", absl::CHexEscape(first), "\"");
  }
  double mn = std::numeric_limits<double>::infinity(), mx = -mn, sum = 0;
  int64_t nan = 0;
  SLUICE_SWITCH_ALL_TYPES(t.dtype(), return "", {
    if constexpr (!std::is_same_v<T, tstring>) {
      const T* p = t.data<T>();
      for (int64_t i = 0; i < t.NumElements(); ++i) {
        const double v = AsDouble(p[i]);
        if (std::isnan(v)) {
          ++nan;
          continue;
        }
        mn = std::min(mn, v);
        mx = std::max(mx, v);
        sum += v;
      }
    }
  });
  const int64_t n = t.NumElements() - nan;
  std::string s = n > 0 ? absl::StrFormat("min=%.6g max=%.6g mean=%.6g", mn, mx, sum / n) : "all NaN";
  if (t.dtype() == DT_COMPLEX64) s += " (of |z|)";
  if (nan > 0) absl::StrAppend(&s, " nan=", nan);
  return s;
}

std::string ShapeString(const TensorShapeProto& p) {
  auto s = TensorShape::FromProto(p);
  return s.ok() ? s->DebugString() : "?";
}

void PrintStateSummary(Env* env, const Target& t) {
  if (t.checkpoints_dir.empty()) return;
  auto state = ReadCheckpointState(env, t.checkpoints_dir);
  if (state.ok()) {
    // Newest first, as the directories below.
    std::printf("state file: latest %s, retained:", state->latest().c_str());
    for (auto r = state->checkpoints().rbegin(); r != state->checkpoints().rend(); ++r) {
      std::printf(" %s%s", r->dir().c_str(), r->keep_forever() ? "(kept forever)" : "");
    }
    std::printf("\n");
  } else {
    std::printf("state file: %s\n", std::string(state.status().message()).c_str());
  }
  std::printf("checkpoint directories:");
  for (const std::string& c : t.checkpoints) std::printf(" %s", c.substr(t.checkpoints_dir.size() + 1).c_str());
  std::printf("\n");
}

int ListOrInspect(Env* env, const Target& t, bool inspect) {
  PrintStateSummary(env, t);
  const std::string& dir = t.checkpoints.front();
  auto reader = CheckpointReader::Open(dir, env);
  if (!reader.ok()) {
    std::fprintf(stderr, "ckpt: %s\n", std::string(reader.status().message()).c_str());
    return kCorrupt;
  }
  const CheckpointManifest& m = (*reader)->manifest();
  std::printf("checkpoint %s: step %lld, %d shard(s), %d tensor(s), chunk %llu bytes%s\n", dir.c_str(),
              static_cast<long long>(m.step()), m.num_shards(), m.tensors_size(),
              static_cast<unsigned long long>(m.chunk_bytes()),
              m.config_hash().empty() ? "" : absl::StrCat(", config ", m.config_hash()).c_str());
  int rc = kOk;
  uint64_t total = 0;
  for (const TensorEntry& e : m.tensors()) {
    total += e.num_bytes();
    std::string line = absl::StrFormat("  %-40s %-10s %-16s %12llu B", e.key(), DataTypeString(e.dtype()),
                                       ShapeString(e.shape()), static_cast<unsigned long long>(e.num_bytes()));
    if (!e.slice_spec().empty()) absl::StrAppend(&line, "  slice ", e.slice_spec(), " of ", ShapeString(e.full_shape()));
    if (inspect) {
      auto value = (*reader)->ReadTensor(e.key());
      if (value.ok()) {
        absl::StrAppend(&line, "  ", Stats(*value));
      } else {
        absl::StrAppend(&line, "  ERROR");
        std::fprintf(stderr, "ckpt: %s\n", std::string(value.status().message()).c_str());
        rc = kCorrupt;
      }
    }
    std::printf("%s\n", line.c_str());
  }
  std::printf("total %llu bytes\n", static_cast<unsigned long long>(total));
  return rc;
}

int Verify(Env* env, const Target& t) {
  int rc = kOk;
  // A run's state file: one that does not parse is damage too (train and
  // list report it); none at all is not (train then finds the directories).
  if (!t.checkpoints_dir.empty()) {
    auto state = ReadCheckpointState(env, t.checkpoints_dir);
    const std::string path = JoinPath(t.checkpoints_dir, "checkpoint");
    if (state.ok()) {
      std::printf("OK       %s\n", path.c_str());
    } else if (!absl::IsNotFound(state.status())) {
      std::printf("CORRUPT  %s: %s\n", path.c_str(), std::string(state.status().message()).c_str());
      rc = kCorrupt;
    }
  }
  for (const std::string& dir : t.checkpoints) {
    absl::Status s = VerifyCheckpoint(env, dir, VerifyLevel::kFull);
    if (s.ok()) {
      std::printf("OK       %s\n", dir.c_str());
    } else {
      std::printf("CORRUPT  %s: %s\n", dir.c_str(), std::string(s.message()).c_str());
      rc = kCorrupt;
    }
  }
  return rc;
}

// A TensorFlow checkpoint prefix at `path` (or `path` minus ".index").
bool ResolveBundle(Env* env, std::string path, std::string* prefix) {
  if (absl::EndsWith(path, ".index")) path.resize(path.size() - 6);
  if (!IsTensorBundle(env, path)) return false;
  *prefix = path;
  return true;
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "ckpt: %s\n", std::string(s.message()).c_str());
  return kCorrupt;
}

int ListBundle(Env* env, const std::string& prefix, bool inspect) {
  auto reader = BundleReader::Open(prefix, env);
  if (!reader.ok()) return Fail(reader.status());
  const BundleReader& r = **reader;
  std::printf("TensorFlow checkpoint %s: %d data shard(s), %zu tensor(s)\n", prefix.c_str(),
              r.header().num_shards(), r.entries().size());
  int rc = kOk;
  uint64_t total = 0;
  for (const auto& [name, e] : r.entries()) {
    if (e.slices_size() > 0) {
      std::printf("  %-40s %-10s partitioned (sliced): not supported\n", absl::CHexEscape(name).c_str(),
                  DataTypeString(e.dtype()).c_str());
      continue;
    }
    total += static_cast<uint64_t>(e.size());
    std::string line = absl::StrFormat("  %-40s %-10s %-16s %12llu B", absl::CHexEscape(name), DataTypeString(e.dtype()),
                                       r.ShapeOf(name).DebugString(), static_cast<unsigned long long>(e.size()));
    if (inspect) {
      auto value = r.Read(name);
      if (value.ok()) {
        absl::StrAppend(&line, "  ", Stats(*value));
      } else {
        absl::StrAppend(&line, "  ERROR");
        Fail(value.status());
        rc = kCorrupt;
      }
    }
    std::printf("%s\n", line.c_str());
  }
  std::printf("total %llu bytes\n", static_cast<unsigned long long>(total));
  return rc;
}

int VerifyBundle(Env* env, const std::string& prefix) {
  auto reader = BundleReader::Open(prefix, env);
  absl::Status s = reader.status();
  if (s.ok()) {
    for (const auto& [name, e] : (*reader)->entries()) {
      s = (*reader)->Read(name).status();
      if (!s.ok()) break;
    }
  }
  if (s.ok()) {
    std::printf("OK       %s\n", prefix.c_str());
    return kOk;
  }
  std::printf("CORRUPT  %s: %s\n", prefix.c_str(), std::string(s.message()).c_str());
  return kCorrupt;
}

// TensorFlow prefix -> new Sluice checkpoint directory.
int BundleToCheckpoint(Env* env, const std::string& prefix, const std::string& dir) {
  if (env->FileExists(dir).ok()) {
    std::fprintf(stderr, "ckpt: %s already exists; convert writes a new checkpoint directory\n", dir.c_str());
    return kUsage_;
  }
  auto reader = BundleReader::Open(prefix, env);
  if (!reader.ok()) return Fail(reader.status());
  std::vector<SaveEntry> entries;
  for (const auto& [name, e] : (*reader)->entries()) {
    auto value = (*reader)->Read(name);
    if (!value.ok()) return Fail(value.status());
    SaveEntry entry;
    entry.full_name = name;
    entry.value = *std::move(value);
    entries.push_back(std::move(entry));
  }
  // The checkpoint's step is the global step it holds, if any (TensorFlow's
  // Saver keeps it as the int64 scalar "global_step").
  WriteOptions options;
  for (const SaveEntry& entry : entries) {
    if (entry.full_name == "global_step" && entry.value.dtype() == DT_INT64 && entry.value.NumElements() == 1) {
      options.step = entry.value.data<int64_t>()[0];
    }
  }
  absl::Status s = WriteCheckpointDir(env, dir, entries, options);
  if (!s.ok()) return Fail(s);
  std::printf("wrote %zu tensor(s) from TensorFlow checkpoint %s to %s\n", entries.size(), prefix.c_str(),
              dir.c_str());
  return kOk;
}

// Every tensor of the checkpoint directory `dir`, whole (a partitioned
// variable's slices assembled), in key order.
absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> ReadWholeTensors(Env* env, const std::string& dir) {
  auto reader = CheckpointReader::Open(dir, env);
  if (!reader.ok()) return reader.status();
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const TensorEntry& e : (*reader)->manifest().tensors()) {
    if (!tensors.empty() && tensors.back().first == e.full_name()) continue;  // another slice (keys are sorted)
    absl::StatusOr<Tensor> value;
    if (e.slice_spec().empty()) {
      value = (*reader)->ReadTensor(e.key());
    } else {
      auto full = TensorShape::FromProto(e.full_shape());
      if (!full.ok()) return full.status();
      value = (*reader)->ReadSlice(e.full_name(), *full, TensorSlice::Full(full->dims()));
    }
    if (!value.ok()) return value.status();
    tensors.emplace_back(e.full_name(), *std::move(value));
  }
  return tensors;
}

// Newest Sluice checkpoint at `t` -> TensorFlow prefix; partitioned variables
// are assembled whole. Of a run (or checkpoints) directory, the newest
// checkpoint that reads whole, as `train` resumes from: a damaged newer one is
// skipped with a warning.
int CheckpointToBundle(Env* env, const Target& t, const std::string& prefix) {
  if (IsTensorBundle(env, prefix)) {
    std::fprintf(stderr, "ckpt: %s.index already exists; delete it first\n", prefix.c_str());
    return kUsage_;
  }
  const bool one = t.checkpoints_dir.empty();  // a checkpoint named by the user
  absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> tensors = absl::NotFoundError("no checkpoint");
  std::string dir;
  for (const std::string& candidate : t.checkpoints) {
    dir = candidate;
    tensors = ReadWholeTensors(env, dir);
    if (tensors.ok() || one) break;
    std::fprintf(stderr, "ckpt: warning: skipping %s: %s\n", dir.c_str(), std::string(tensors.status().message()).c_str());
  }
  if (!tensors.ok()) return Fail(tensors.status());
  absl::Status s = WriteTensorBundle(env, prefix, *tensors);
  if (!s.ok()) return Fail(s);
  std::printf("wrote %zu tensor(s) from %s to TensorFlow checkpoint %s\n", tensors->size(), dir.c_str(),
              prefix.c_str());
  return kOk;
}

int Convert(Env* env, const std::string& from, const std::string& to) {
  std::string prefix;
  if (ResolveBundle(env, from, &prefix)) return BundleToCheckpoint(env, prefix, to);
  Target target;
  if (Resolve(env, from, &target)) return CheckpointToBundle(env, target, to);
  std::fprintf(stderr, "ckpt: no checkpoint at %s (expected a TensorFlow checkpoint prefix, a run directory, "
               "checkpoints/, ckpt-<step> or a shard store)\n", from.c_str());
  return kUsage_;
}

int Main(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::fputs(kUsage, stdout);
    return kOk;
  }
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(kUsage, stdout);
      return kOk;
    }
  }
  Env* env = Env::Default();
  const std::string cmd = argc >= 2 ? argv[1] : "";
  if (cmd == "convert") {
    if (argc == 4) return Convert(env, argv[2], argv[3]);
    std::fprintf(stderr, "ckpt: convert takes FROM and TO (got %d argument%s)\n%s", argc - 2, argc - 2 == 1 ? "" : "s",
                 kUsage);
    return kUsage_;
  }
  if (argc >= 2 && cmd != "list" && cmd != "inspect" && cmd != "verify") {
    std::fprintf(stderr, "ckpt: unknown command '%s'\n%s", cmd.c_str(), kUsage);
    return kUsage_;
  }
  if (argc != 3) {
    if (argc >= 2) std::fprintf(stderr, "ckpt: %s takes one PATH\n", cmd.c_str());
    std::fputs(kUsage, stderr);
    return kUsage_;
  }
  const std::string path = argv[2];
  std::string prefix;
  if (ResolveBundle(env, path, &prefix)) {
    return cmd == "verify" ? VerifyBundle(env, prefix) : ListBundle(env, prefix, cmd == "inspect");
  }
  Target target;
  if (!Resolve(env, path, &target)) {
    const std::string trimmed = WithoutTrailingSlashes(path);
    const bool checkpoints_dir = absl::EndsWith(trimmed, "/checkpoints") || trimmed == "checkpoints";
    if (env->IsDirectory(CheckpointsDir(path)) || (checkpoints_dir && env->IsDirectory(path))) {
      std::fprintf(stderr, "ckpt: %s has no checkpoint yet (no ckpt-<step> directory)\n", path.c_str());
    } else {
      std::fprintf(stderr, "ckpt: no checkpoint at %s (expected a run directory, checkpoints/, ckpt-<step>, a shard "
                   "store or a TensorFlow checkpoint prefix)\n",
                   path.c_str());
    }
    return kUsage_;
  }
  if (cmd == "verify") return Verify(env, target);
  return ListOrInspect(env, target, cmd == "inspect");
}

}  // namespace
}  // namespace checkpoint
}  // namespace sluice

int main(int argc, char** argv) { return sluice::checkpoint::Main(argc, argv); }
