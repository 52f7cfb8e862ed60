// Device and DeviceMgr.
#include "engine/framework/device.h"
#include "engine/framework/local_devices.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/spinning_thread_pool.h"
#include "engine/platform/logging.h"

namespace sluice {
namespace {

// The intra-op pool, which may also run the executor's nodes (a session's
// SessionOptions::ops_on_intra_op_pool), so a kernel can be running on one of
// its threads when it asks for parallel work:
// - RunTasks / ParallelForRanges (engine/kernels/run_tasks.h) queue their
//   helpers with ScheduleWithHint and never wait for a helper that has not
//   started, so they may be called from inside the pool.
// - Eigen's ThreadPoolDevice (tensor expressions, parallelFor) queues blocks
//   with Schedule and then blocks in a Barrier until they ran: from a thread
//   of this pool, with every thread so blocked, nobody would run them. So
//   Schedule from inside the pool runs the function at once, and such an
//   expression is evaluated on the calling thread alone. (Called from
//   outside, its parallelFor queues only the first split and the pool
//   thread that takes it runs the rest: about two-way. No kernel uses
//   Eigen's parallel evaluation any more; they split with RunTasks.)
//   Eigen's contraction must not run on this device at all: inline, its
//   packing of the next slice of k would overwrite thread-local blocks that
//   the current slice still reads (kernels contract on their own thread).
class IntraOpPool : public SpinningThreadPool {
 public:
  explicit IntraOpPool(int num_threads) : SpinningThreadPool(num_threads, SpinNanos()) {}
  void Schedule(std::function<void()> fn) override {
    if (CurrentThreadId() >= 0) {
      fn();
      return;
    }
    SpinningThreadPool::Schedule(std::move(fn));
  }

 private:
  // Read once per process (a process makes many devices).
  static int64_t SpinNanos() {
    static const int64_t nanos = SpinNanosFromEnv();
    return nanos;
  }
  // SLUICE_SPIN_WAIT_US: how long an idle intra-op thread spins before it
  // sleeps (0: at once, for machines shared with other work), in
  // microseconds; unset or invalid: the default.
  static int64_t SpinNanosFromEnv() {
    const char* v = std::getenv("SLUICE_SPIN_WAIT_US");
    int64_t us = 0;
    if (v == nullptr) return SpinningThreadPool::kDefaultSpinNanos;
    if (!absl::SimpleAtoi(v, &us) || us < 0 || us > 1000000) {
      LOG(WARNING) << "SLUICE_SPIN_WAIT_US='" << v << "' is not a number of microseconds in [0, 1000000]; using "
                   << SpinningThreadPool::kDefaultSpinNanos / 1000;
      return SpinningThreadPool::kDefaultSpinNanos;
    }
    return us * 1000;
  }
};

}  // namespace

Device::Device(std::string name, std::string device_type, Allocator* allocator, int intra_op_threads)
    : name_(std::move(name)),
      device_type_(std::move(device_type)),
      allocator_(allocator),
      intra_op_threads_(std::max(1, intra_op_threads)),
      intra_op_pool_(std::make_unique<IntraOpPool>(intra_op_threads_)),
      eigen_device_(std::make_unique<Eigen::ThreadPoolDevice>(intra_op_pool_.get(), intra_op_threads_)) {}

Device::~Device() = default;

int NumSchedulableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

namespace {
struct DeviceFactories {
  absl::Mutex mu;
  std::vector<std::pair<std::string, LocalDeviceFactory>> factories ABSL_GUARDED_BY(mu);
  std::vector<std::string> disabled ABSL_GUARDED_BY(mu);
};
DeviceFactories& Factories() {
  static auto* f = new DeviceFactories;
  return *f;
}
std::atomic<int> g_local_intra_op_threads{0};  // 0: LocalIntraOpThreads's default
std::atomic<int> g_local_beside_accelerator{0};  // 0: no cap beside an accelerator
std::atomic<int> g_local_cpu_devices{1};
std::atomic<bool> g_local_created{false};

std::vector<std::unique_ptr<Device>> MakeCpuDevices(int num_devices, int intra_op_threads, const std::string& task) {
  std::vector<std::unique_ptr<Device>> devices;
  for (int i = 0; i < num_devices; ++i) {
    std::string name = task.empty() ? LocalCpuDeviceName(i) : absl::StrCat(task, "/device:CPU:", i);
    devices.push_back(std::make_unique<Device>(std::move(name), kDeviceCpu, CpuAllocator(), intra_op_threads));
  }
  return devices;
}
}  // namespace

namespace {
absl::Mutex g_task_name_mu;
// "/job:<name>/replica:<digits>/task:<digits>", <name> of [A-Za-z0-9_-].
bool IsTaskName(absl::string_view s) {
  auto take = [&s](absl::string_view prefix) {
    if (!absl::ConsumePrefix(&s, prefix)) return false;
    size_t n = 0;
    while (n < s.size() && s[n] != '/') ++n;
    if (n == 0) return false;
    for (size_t i = 0; i < n; ++i) {
      const char c = s[i];
      const bool ok = prefix == "/job:" ? (absl::ascii_isalnum(c) || c == '_' || c == '-') : absl::ascii_isdigit(c);
      if (!ok) return false;
    }
    s.remove_prefix(n);
    return true;
  };
  return take("/job:") && take("/replica:") && take("/task:") && s.empty();
}
std::string* g_task_name ABSL_GUARDED_BY(g_task_name_mu) = nullptr;
}  // namespace

std::string LocalTaskName() {
  absl::MutexLock lock(&g_task_name_mu);
  return g_task_name != nullptr ? *g_task_name : "/job:localhost/replica:0/task:0";
}

absl::Status SetLocalTaskName(const std::string& task) {
  if (!IsTaskName(task)) {
    return absl::InvalidArgumentError(
        absl::StrCat("task name '", task, "' must be /job:<name>/replica:<r>/task:<t>"));
  }
  if (g_local_created.load()) {
    if (LocalTaskName() == task) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat("this process's devices are already named ", LocalTaskName(),
                                                      "; cannot rename them to ", task));
  }
  absl::MutexLock lock(&g_task_name_mu);
  delete g_task_name;
  g_task_name = new std::string(task);
  return absl::OkStatus();
}

std::string LocalCpuDeviceName(int index) { return absl::StrCat(LocalTaskName(), "/device:CPU:", index); }

absl::Status SetLocalCpuDeviceCount(int n) {
  if (n < 1 || n > kMaxLocalCpuDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat("the number of CPU devices must be in [1, ", kMaxLocalCpuDevices, "], got ", n));
  }
  if (g_local_created.load()) {
    int have = 0;
    for (const auto& d : DeviceMgr::Local()->devices()) have += d->device_type() == kDeviceCpu ? 1 : 0;
    if (have == n) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("this process already has ", have, " CPU device(s); cannot change to ", n));
  }
  g_local_cpu_devices.store(n);
  return absl::OkStatus();
}

std::unique_ptr<DeviceMgr> NewCpuDeviceMgr(int num_devices, int intra_op_threads, const std::string& task) {
  CHECK_GE(num_devices, 1);
  CHECK_GE(intra_op_threads, 1);
  return std::make_unique<DeviceMgr>(MakeCpuDevices(num_devices, intra_op_threads, task));
}

absl::Status DeviceMgr::SetLocalIntraOpThreads(int n) {
  if (n < 1) return absl::InvalidArgumentError(absl::StrCat("intra-op threads must be >= 1, got ", n));
  if (g_local_created.load()) {
    const int have = Local()->HostCpu()->intra_op_threads();
    if (have == n) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("the local CPU device already runs ", have, " intra-op threads; cannot change to ", n));
  }
  g_local_intra_op_threads.store(n);
  return absl::OkStatus();
}

absl::Status DeviceMgr::SetLocalIntraOpThreadsBesideAnAccelerator(int n) {
  if (n < 0) return absl::InvalidArgumentError(absl::StrCat("intra-op threads must be >= 0, got ", n));
  if (g_local_created.load() && g_local_beside_accelerator.load() != n) {
    return absl::FailedPreconditionError(
        "the local devices exist already; set the intra-op threads beside an accelerator before they are made");
  }
  g_local_beside_accelerator.store(n);
  return absl::OkStatus();
}

DeviceMgr* DeviceMgr::Local() {
  static DeviceMgr* mgr = [] {
    g_local_created.store(true);
    const int requested = g_local_intra_op_threads.load();
    // Debian's Abseil checks every Mutex acquisition against a global lock
    // graph (deadlock detection, a debugging aid). The executor takes a frame
    // lock per node, and that check was ~20% of a trivial node's cost, so
    // processes that run graphs turn it off.
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    // The factories first: whether there is a GPU decides the default
    // intra-op thread count. The CPU devices still come first in the list.
    std::vector<std::unique_ptr<Device>> accelerators;
    {
      DeviceFactories& f = Factories();
      absl::MutexLock lock(&f.mu);
      for (const auto& [type, factory] : f.factories) {
        if (std::find(f.disabled.begin(), f.disabled.end(), type) != f.disabled.end()) continue;
        for (auto& d : factory(LocalTaskName())) accelerators.push_back(std::move(d));
      }
    }
    std::vector<std::unique_ptr<Device>> devices =
        MakeCpuDevices(g_local_cpu_devices.load(),
                       LocalIntraOpThreads(requested, !accelerators.empty(), g_local_beside_accelerator.load(),
                                           NumSchedulableCpus()),
                       "");
    for (auto& d : accelerators) devices.push_back(std::move(d));
    return new DeviceMgr(std::move(devices));
  }();
  return mgr;
}

int LocalIntraOpThreads(int requested, bool has_accelerator, int beside_accelerator, int cores) {
  if (requested > 0) return requested;
  return has_accelerator && beside_accelerator > 0 ? std::min(cores, beside_accelerator) : cores;
}

void RegisterLocalDeviceFactory(std::string device_type, LocalDeviceFactory factory) {
  DeviceFactories& f = Factories();
  absl::MutexLock lock(&f.mu);
  f.factories.emplace_back(std::move(device_type), std::move(factory));
}

std::vector<std::string> RegisteredLocalDeviceTypes() {
  DeviceFactories& f = Factories();
  absl::MutexLock lock(&f.mu);
  std::vector<std::string> types;
  for (const auto& entry : f.factories) types.push_back(entry.first);
  return types;
}

absl::Status SetLocalDeviceTypeEnabled(const std::string& device_type, bool enabled) {
  DeviceFactories& f = Factories();
  absl::MutexLock lock(&f.mu);
  const bool was_enabled = std::find(f.disabled.begin(), f.disabled.end(), device_type) == f.disabled.end();
  if (was_enabled == enabled) return absl::OkStatus();
  if (g_local_created.load()) {
    return absl::FailedPreconditionError(absl::StrCat("this process's devices already exist; cannot turn ",
                                                      device_type, enabled ? " on" : " off"));
  }
  if (enabled) {
    f.disabled.erase(std::find(f.disabled.begin(), f.disabled.end(), device_type));
  } else {
    f.disabled.push_back(device_type);
  }
  return absl::OkStatus();
}

DeviceMgr::DeviceMgr(std::vector<std::unique_ptr<Device>> devices) : devices_(std::move(devices)) {}

absl::StatusOr<Device*> DeviceMgr::LookupDevice(absl::string_view name) const {
  std::vector<std::string> names;
  for (const auto& d : devices_) {
    if (d->name() == name) return d.get();
    names.push_back(d->name());
  }
  return absl::NotFoundError(
      absl::StrCat("unknown device '", name, "'; this process has: ", absl::StrJoin(names, ", ")));
}

void DeviceMgr::ClearContainers(const std::vector<std::string>& containers) {
  for (const auto& d : devices_) {
    std::vector<std::string> names = containers.empty() ? d->resource_manager()->Containers() : containers;
    for (const std::string& c : names) d->resource_manager()->Cleanup(c);
  }
}

}  // namespace sluice
