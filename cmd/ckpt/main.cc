// ckpt: lists, inspects and verifies Sluice checkpoints (checkpoint/FORMAT.md).
//
//   ckpt list PATH      checkpoints of a run and the tensors of one checkpoint
//                       (name, dtype, shape, bytes, slice)
//   ckpt inspect PATH   the same plus value statistics (min, max, mean)
//   ckpt verify PATH    every CRC and file of the checkpoint(s)
//
// PATH is a run directory, its checkpoints/ directory (list and inspect use
// the newest checkpoint, verify checks all of them), a checkpoint directory
// (ckpt-<step>), or one shard store inside it.
// Exit codes: 0 ok, 1 corrupt or unreadable checkpoint (the message names
// the file and tensor), 2 usage error (bad arguments, no checkpoint at PATH).
#include <cmath>
#include <complex>
#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/store_format.h"

namespace sluice {
namespace checkpoint {
namespace {

constexpr char kUsage[] =
    "usage: ckpt list|inspect|verify PATH\n"
    "  list     the checkpoints of a run and the tensors (dtype, shape, bytes) of one checkpoint\n"
    "  inspect  like list, with min/max/mean of every tensor\n"
    "  verify   check every CRC and file; exit 0 ok, 1 corrupt\n"
    "PATH: a run directory, its checkpoints/ directory, a ckpt-<step> directory or a shard store.\n";

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

std::string Parent(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
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
    std::printf("state file: latest %s, retained:", state->latest().c_str());
    for (const CheckpointRecord& r : state->checkpoints()) {
      std::printf(" %s%s", r.dir().c_str(), r.keep_forever() ? "(kept forever)" : "");
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

int Main(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::fputs(kUsage, stdout);
    return kOk;
  }
  if (argc != 3) {
    std::fputs(kUsage, stderr);
    return kUsage_;
  }
  const std::string cmd = argv[1];
  const std::string path = argv[2];
  if (cmd != "list" && cmd != "inspect" && cmd != "verify") {
    std::fprintf(stderr, "ckpt: unknown command '%s'\n%s", cmd.c_str(), kUsage);
    return kUsage_;
  }
  Env* env = Env::Default();
  Target target;
  if (!Resolve(env, path, &target)) {
    std::fprintf(stderr, "ckpt: no checkpoint at %s (expected a run directory, checkpoints/, ckpt-<step> or a shard store)\n",
                 path.c_str());
    return kUsage_;
  }
  if (cmd == "verify") return Verify(env, target);
  return ListOrInspect(env, target, cmd == "inspect");
}

}  // namespace
}  // namespace checkpoint
}  // namespace sluice

int main(int argc, char** argv) { return sluice::checkpoint::Main(argc, argv); }
