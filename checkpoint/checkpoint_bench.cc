// Checkpoint save and restore throughput against the raw limits of this disk:
//   BM_RawWrite/<MB>   write(2) of the same bytes into one file + fsync
//   BM_Save/<MB>       WriteCheckpointDir (RocksDB SST + ingest + fsyncs + FILES)
//   BM_RawRead/<MB>    read(2) of that file back (page cache warm)
//   BM_Restore/<MB>    CheckpointReader::ReadTensor of every tensor (CRCs checked)
// Variables are float tensors of 16 MB each (the last one smaller). Each save
// benchmark reports frac_of_raw = its MB/s over BM_RawWrite's MB/s in the
// same run (restore: over BM_RawRead's). Sizes and iterations come from the
// environment: SLUICE_CKPT_BENCH_MB="100,1000", SLUICE_CKPT_BENCH_ITERS=3,
// SLUICE_CKPT_BENCH_DIR (default /tmp), SLUICE_CKPT_BENCH_SHARDS=1.
//   bazel run //checkpoint:checkpoint_bench
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

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
std::map<int64_t, double> raw_write_mbps, raw_read_mbps;  // by size in MB

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

void BM_RawWrite(benchmark::State& state) {
  const int64_t mb = state.range(0);
  const auto& vars = VariablesOf(mb);
  double seconds = 0;
  for (auto _ : state) {
    ::sync();
    auto start = std::chrono::steady_clock::now();
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
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  state.SetBytesProcessed(state.iterations() * mb * kMB);
  raw_write_mbps[mb] = mb * state.iterations() / seconds;
}

void BM_Save(benchmark::State& state) {
  const int64_t mb = state.range(0);
  const auto& vars = VariablesOf(mb);
  WriteOptions options;
  options.num_shards = Shards();
  double seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Env::Default()->DeleteRecursively(CkptPath(mb)).IgnoreError();
    ::sync();
    state.ResumeTiming();
    auto start = std::chrono::steady_clock::now();
    absl::Status s = WriteCheckpointDir(Env::Default(), CkptPath(mb), vars, options);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  state.SetBytesProcessed(state.iterations() * mb * kMB);
  const double mbps = mb * state.iterations() / seconds;
  state.counters["MBps"] = mbps;
  if (raw_write_mbps.count(mb)) state.counters["frac_of_raw"] = mbps / raw_write_mbps[mb];
}

void BM_RawRead(benchmark::State& state) {
  const int64_t mb = state.range(0);
  std::vector<char> buf(16 * kMB);
  double seconds = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    int fd = ::open(RawPath(mb).c_str(), O_RDONLY);
    while (::read(fd, buf.data(), buf.size()) > 0) {
    }
    ::close(fd);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  state.SetBytesProcessed(state.iterations() * mb * kMB);
  raw_read_mbps[mb] = mb * state.iterations() / seconds;
}

void BM_Restore(benchmark::State& state) {
  const int64_t mb = state.range(0);
  const auto& vars = VariablesOf(mb);
  double seconds = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    auto reader = CheckpointReader::Open(CkptPath(mb));
    if (!reader.ok()) {
      state.SkipWithError(reader.status().ToString().c_str());
      return;
    }
    for (const SaveEntry& e : vars) {
      auto t = (*reader)->ReadTensor(e.full_name);
      if (!t.ok()) {
        state.SkipWithError(t.status().ToString().c_str());
        return;
      }
      benchmark::DoNotOptimize(t->raw_data());
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  state.SetBytesProcessed(state.iterations() * mb * kMB);
  const double mbps = mb * state.iterations() / seconds;
  state.counters["MBps"] = mbps;
  if (raw_read_mbps.count(mb)) state.counters["frac_of_raw"] = mbps / raw_read_mbps[mb];
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
  int iters = 3;
  if (const char* s = std::getenv("SLUICE_CKPT_BENCH_ITERS")) absl::SimpleAtoi(s, &iters);
  for (int64_t mb : SizesMB()) {
    // Order matters: raw before the checkpoint it is compared with.
    benchmark::RegisterBenchmark("BM_RawWrite", BM_RawWrite)->Arg(mb)->Iterations(iters)->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark("BM_Save", BM_Save)->Arg(mb)->Iterations(iters)->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark("BM_RawRead", BM_RawRead)->Arg(mb)->Iterations(iters)->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark("BM_Restore", BM_Restore)->Arg(mb)->Iterations(iters)->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  sluice::Env::Default()->DeleteRecursively(BenchDir()).IgnoreError();
  return 0;
}
