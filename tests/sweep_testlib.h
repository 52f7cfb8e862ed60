// Helpers for the corruption sweeps (tests/corruption_sweep_test.cc): seeded choices of
// truncation lengths and bit positions, per-file quotas, outcome counters, and a watchdog that
// turns a hung read into a failed test.
// Ownership: values only. Thread safety: a Watchdog is armed from one thread; the rest are
// plain functions and values for the test's main thread.
#ifndef SLUICE_TESTS_SWEEP_TESTLIB_H_
#define SLUICE_TESTS_SWEEP_TESTLIB_H_

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sluice {
namespace sweep {

inline constexpr int kCases = 1000;  // truncations, and bit flips, per format

// `quota` distinct lengths in [0, size): every length within 2 bytes of a boundary first
// (0 and size-1 always count as boundaries), then uniform draws from `rng`.
inline std::vector<size_t> TruncationLengths(size_t size, const std::vector<size_t>& boundaries, size_t quota,
                                             std::mt19937_64* rng) {
  std::set<size_t> chosen;
  if (size == 0) return {};
  if (quota > size) quota = size;
  std::vector<size_t> near = {0, size - 1};
  for (size_t b : boundaries) {
    for (int d = -2; d <= 2; ++d) {
      const int64_t l = static_cast<int64_t>(b) + d;
      if (l >= 0 && static_cast<size_t>(l) < size) near.push_back(static_cast<size_t>(l));
    }
  }
  for (size_t l : near) {
    if (chosen.size() < quota) chosen.insert(l);
  }
  std::uniform_int_distribution<size_t> pick(0, size - 1);
  while (chosen.size() < quota) chosen.insert(pick(*rng));
  return std::vector<size_t>(chosen.begin(), chosen.end());
}

// `quota` distinct (byte offset, bit) pairs in a file of `size` bytes.
inline std::vector<std::pair<size_t, int>> BitFlips(size_t size, size_t quota, std::mt19937_64* rng) {
  std::set<std::pair<size_t, int>> chosen;
  if (size == 0) return {};
  if (quota > size * 8) quota = size * 8;
  std::uniform_int_distribution<size_t> pos(0, size - 1);
  std::uniform_int_distribution<int> bit(0, 7);
  while (chosen.size() < quota) chosen.insert({pos(*rng), bit(*rng)});
  return std::vector<std::pair<size_t, int>>(chosen.begin(), chosen.end());
}

// Splits `total` cases over files round-robin, none getting more than `capacity[i]`.
inline std::vector<size_t> Quotas(const std::vector<size_t>& capacity, size_t total) {
  std::vector<size_t> quota(capacity.size(), 0);
  bool progress = true;
  while (total > 0 && progress) {
    progress = false;
    for (size_t i = 0; i < capacity.size() && total > 0; ++i) {
      if (quota[i] < capacity[i]) {
        ++quota[i];
        --total;
        progress = true;
      }
    }
  }
  return quota;
}

inline std::string Flipped(std::string bytes, size_t pos, int bit) {
  bytes[pos] = static_cast<char>(bytes[pos] ^ (1 << bit));
  return bytes;
}

// Outcome counts of one sweep ("tfrecord truncations"), printed as
// "tfrecord truncations: 1000 (error 990, ok 10)".
class Tally {
 public:
  explicit Tally(std::string what) : what_(std::move(what)) {}
  void Count(const std::string& outcome) { ++counts_[outcome]; }
  int total() const {
    int n = 0;
    for (const auto& c : counts_) n += c.second;
    return n;
  }
  int count(const std::string& outcome) const {
    auto it = counts_.find(outcome);
    return it == counts_.end() ? 0 : it->second;
  }
  std::string Summary() const {
    std::string s = what_ + ": " + std::to_string(total()) + " (";
    bool first = true;
    for (const auto& c : counts_) {
      s += (first ? "" : ", ") + c.first + " " + std::to_string(c.second);
      first = false;
    }
    return s + ")";
  }
  void Print() const { std::printf("%s\n", Summary().c_str()); }

 private:
  std::string what_;
  std::map<std::string, int> counts_;
};

// Fails the whole test (exit 1, naming the case) when one case runs longer than `limit`:
// a reader that hangs is a bug the sweep must report, not wait for.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds limit) : limit_(limit), thread_([this] { Watch(); }) {}
  ~Watchdog() {
    stop_ = true;
    thread_.join();
  }
  void Arm(const std::string& what) {
    std::lock_guard<std::mutex> l(mu_);
    what_ = what;
    start_ = std::chrono::steady_clock::now();
  }

 private:
  void Watch() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::lock_guard<std::mutex> l(mu_);
      if (!what_.empty() && std::chrono::steady_clock::now() - start_ > limit_) {
        std::fprintf(stderr, "FAIL: %s did not finish within %lld s (a hang)\n", what_.c_str(),
                     static_cast<long long>(limit_.count()));
        std::fflush(stderr);
        _exit(1);
      }
    }
  }
  const std::chrono::seconds limit_;
  std::mutex mu_;
  std::string what_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace sweep
}  // namespace sluice

#endif  // SLUICE_TESTS_SWEEP_TESTLIB_H_
