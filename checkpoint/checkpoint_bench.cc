// Checkpoint save and restore throughput against the raw limits of this disk,
// measured in pairs so that the disk's swings (this VM's raw write+fsync of the
// same bytes varies 2x between runs) hit both sides of each ratio:
//   BM_SaveVsRaw/<MB>     each pair: a raw write(2) of the same bytes into one
//                         file + fsync, and WriteCheckpointDir (RocksDB SST +
//                         ingest + fsyncs + FILES); the order alternates from
//                         pair to pair (raw first in even pairs).
//   BM_RestoreVsRaw/<MB>  each pair: read(2) of that file back (page cache
//                         warm) and CheckpointReader::ReadTensor of every
//                         tensor (CRCs checked), order alternating likewise.
// Outside the timer, before every timed operation: the target of a write is
// unlinked (the raw file, the checkpoint directory) and sync(2) runs, so no
// write pays for freeing the previous one's blocks or flushing the other
// side's dirty pages. Per pair: frac_of_raw = checkpoint MB/s / raw MB/s. The
// counters are the median over pairs (frac_of_raw, raw_MBps, ckpt_MBps) and
// frac_min/frac_max; every pair is also printed to stderr. Variables are float
// tensors of 16 MB each (the last one smaller). Sizes and pairs come from the
// environment: SLUICE_CKPT_BENCH_MB="100,1000", SLUICE_CKPT_BENCH_PAIRS=7
// (at least 7), SLUICE_CKPT_BENCH_DIR (default /tmp), SLUICE_CKPT_BENCH_SHARDS=1.
//   bazel run //checkpoint:checkpoint_bench
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "benchmark/benchmark.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_writer.h"

namespace sluice {
namespace checkpoint {
namespace {

constexpr int64_t kMB = 1 << 20;

std::string BenchDir() {
  const char* d = std::getenv("SLUICE_CKPT_BENCH_DIR");
  return JoinPath(d ? d : "/tmp", "sluice_checkpoint_bench");
}

int Shards() {
  const char* s = std::getenv("SLUICE_CKPT_BENCH_SHARDS");
  int n = 1;
  if (s == nullptr || !absl::SimpleAtoi(s, &n) || n < 1) n = 1;
  return n;
}

std::vector<SaveEntry> MakeVariables(int64_t mb) {
  std::vector<SaveEntry> entries;
  std::mt19937 rng(1);
  int64_t left = mb * kMB / 4;  // floats
  for (int i = 0; left > 0; ++i) {
    const int64_t n = std::min<int64_t>(left, 16 * kMB / 4);
    SaveEntry e;
    e.full_name = absl::StrCat("layer_", i, "/kernel");
    e.value = Tensor(DT_FLOAT, TensorShape({n}));
    float* p = e.value.data<float>();
    for (int64_t j = 0; j < n; ++j) p[j] = static_cast<float>(rng()) * 1e-9f;
    entries.push_back(std::move(e));
    left -= n;
  }
  return entries;
}

std::map<int64_t, std::vector<SaveEntry>>& Variables() {
  static auto* v = new std::map<int64_t, std::vector<SaveEntry>>();
  return *v;
}
const std::vector<SaveEntry>& VariablesOf(int64_t mb) {
  auto& v = Variables()[mb];
  if (v.empty()) v = MakeVariables(mb);
  return v;
}

std::string RawPath(int64_t mb) { return JoinPath(BenchDir(), absl::StrCat("raw_", mb)); }
std::string CkptPath(int64_t mb) { return JoinPath(BenchDir(), absl::StrCat("ckpt_", mb)); }

using Clock = std::chrono::steady_clock;
double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int g_pairs = 7;

// Raw write of `vars` into a fresh file + fsync; returns seconds (untimed: the
// unlink of the old file and a sync before).
double RawWriteOnce(int64_t mb, const std::vector<SaveEntry>& vars) {
  ::unlink(RawPath(mb).c_str());
  ::sync();
  auto start = Clock::now();
  int fd = ::open(RawPath(mb).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (const SaveEntry& e : vars) {
    const char* p = static_cast<const char*>(e.value.raw_data());
    size_t n = e.value.TotalBytes();
    while (n > 0) {
      ssize_t w = ::write(fd, p, n);
      if (w <= 0) break;
      p += w;
      n -= w;
    }
  }
  ::fsync(fd);
  ::close(fd);
  return SecondsSince(start);
}

// WriteCheckpointDir into a fresh directory; seconds (untimed: the delete of
// the old one and a sync before).
absl::StatusOr<double> SaveOnce(int64_t mb, const std::vector<SaveEntry>& vars) {
  Env::Default()->DeleteRecursively(CkptPath(mb)).IgnoreError();
  ::sync();
  WriteOptions options;
  options.num_shards = Shards();
  auto start = Clock::now();
  absl::Status s = WriteCheckpointDir(Env::Default(), CkptPath(mb), vars, options);
  if (!s.ok()) return s;
  return SecondsSince(start);
}

double RawReadOnce(int64_t mb) {
  static std::vector<char> buf(16 * kMB);
  auto start = Clock::now();
  int fd = ::open(RawPath(mb).c_str(), O_RDONLY);
  while (::read(fd, buf.data(), buf.size()) > 0) {
  }
  ::close(fd);
  return SecondsSince(start);
}

absl::StatusOr<double> RestoreOnce(int64_t mb, const std::vector<SaveEntry>& vars) {
  auto start = Clock::now();
  auto reader = CheckpointReader::Open(CkptPath(mb));
  if (!reader.ok()) return reader.status();
  for (const SaveEntry& e : vars) {
    auto t = (*reader)->ReadTensor(e.full_name);
    if (!t.ok()) return t.status();
    benchmark::DoNotOptimize(t->raw_data());
  }
  return SecondsSince(start);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Runs g_pairs pairs of (raw, checkpoint) operations, alternating the order;
// sets the counters described at the top. Returns false after SkipWithError.
bool RunPairs(benchmark::State& state, const char* what, int64_t mb, const std::function<double()>& raw,
              const std::function<absl::StatusOr<double>()>& ckpt) {
  std::vector<double> frac, raw_mbps, ckpt_mbps;
  for (int i = 0; i < g_pairs; ++i) {
    double raw_s = 0, ckpt_s = 0;
    for (int k = 0; k < 2; ++k) {
      if ((k == 0) == (i % 2 == 0)) {
        raw_s = raw();
      } else {
        auto c = ckpt();
        if (!c.ok()) {
          state.SkipWithError(c.status().ToString().c_str());
          return false;
        }
        ckpt_s = *c;
      }
    }
    raw_mbps.push_back(mb / raw_s);
    ckpt_mbps.push_back(mb / ckpt_s);
    frac.push_back(raw_s / ckpt_s);
    std::fprintf(stderr, "%s/%lld pair %d (%s first): raw %.1f ms, checkpoint %.1f ms, frac_of_raw %.2f\n", what,
                 static_cast<long long>(mb), i + 1, i % 2 == 0 ? "raw" : "checkpoint", raw_s * 1e3, ckpt_s * 1e3,
                 frac.back());
  }
  state.counters["frac_of_raw"] = Median(frac);
  state.counters["frac_min"] = *std::min_element(frac.begin(), frac.end());
  state.counters["frac_max"] = *std::max_element(frac.begin(), frac.end());
  state.counters["raw_MBps"] = Median(raw_mbps);
  state.counters["ckpt_MBps"] = Median(ckpt_mbps);
  state.counters["pairs"] = g_pairs;
  return true;
}

void BM_SaveVsRaw(benchmark::State& state) {
  const int64_t mb = state.range(0);
  const auto& vars = VariablesOf(mb);
  for (auto _ : state) {
    RunPairs(
        state, "BM_SaveVsRaw", mb, [&] { return RawWriteOnce(mb, vars); }, [&] { return SaveOnce(mb, vars); });
  }
}

void BM_RestoreVsRaw(benchmark::State& state) {
  const int64_t mb = state.range(0);
  const auto& vars = VariablesOf(mb);
  // Both files exist (BM_SaveVsRaw ran before), or are written here, untimed.
  if (::access(RawPath(mb).c_str(), F_OK) != 0) RawWriteOnce(mb, vars);
  if (!Env::Default()->FileExists(CkptPath(mb)).ok()) {
    auto s = SaveOnce(mb, vars);
    if (!s.ok()) {
      state.SkipWithError(s.status().ToString().c_str());
      return;
    }
  }
  for (auto _ : state) {
    RunPairs(
        state, "BM_RestoreVsRaw", mb, [&] { return RawReadOnce(mb); }, [&] { return RestoreOnce(mb, vars); });
  }
}

std::vector<int64_t> SizesMB() {
  const char* s = std::getenv("SLUICE_CKPT_BENCH_MB");
  std::vector<int64_t> sizes;
  for (absl::string_view p : absl::StrSplit(s ? s : "100,1000", ',', absl::SkipEmpty())) {
    int64_t v;
    if (absl::SimpleAtoi(p, &v) && v > 0) sizes.push_back(v);
  }
  return sizes;
}

}  // namespace
}  // namespace checkpoint
}  // namespace sluice

int main(int argc, char** argv) {
  using namespace sluice::checkpoint;
  benchmark::Initialize(&argc, argv);
  sluice::Env::Default()->CreateDirs(BenchDir()).IgnoreError();
  if (const char* s = std::getenv("SLUICE_CKPT_BENCH_PAIRS")) {
    if (!absl::SimpleAtoi(s, &g_pairs) || g_pairs < 7) {
      std::fprintf(stderr, "SLUICE_CKPT_BENCH_PAIRS must be a number >= 7, got '%s'\n", s);
      return 2;
    }
  }
  for (int64_t mb : SizesMB()) {
    // One iteration runs all the pairs; its time is the whole series.
    benchmark::RegisterBenchmark("BM_SaveVsRaw", BM_SaveVsRaw)->Arg(mb)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark("BM_RestoreVsRaw", BM_RestoreVsRaw)->Arg(mb)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  sluice::Env::Default()->DeleteRecursively(BenchDir()).IgnoreError();
  return 0;
}
