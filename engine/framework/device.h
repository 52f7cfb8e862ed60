// Device: where kernels run. Owns its Allocator, its ResourceMgr (the
// containers of stateful resources) and, for the CPU, a thread pool for
// intra-op parallelism (a SpinningThreadPool: spinning_thread_pool.h). Devices are named like
// "/job:localhost/replica:0/task:0/device:CPU:0".
// DeviceMgr::Local() holds this process's devices for its whole lifetime, so
// every session in the process shares their containers.
// Thread safety: all methods may be called concurrently.
#ifndef SLUICE_ENGINE_FRAMEWORK_DEVICE_H_
#define SLUICE_ENGINE_FRAMEWORK_DEVICE_H_

#define EIGEN_USE_THREADS

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/framework/allocator.h"
#include "engine/framework/resource_mgr.h"
#include "engine/framework/types.h"
#include "unsupported/Eigen/CXX11/Tensor"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace sluice {

class Device {
 public:
  Device(std::string name, std::string device_type, Allocator* allocator, int intra_op_threads);
  virtual ~Device();

  const std::string& name() const { return name_; }
  const std::string& device_type() const { return device_type_; }
  Allocator* allocator() const { return allocator_; }
  // Where a tensor of `dtype` produced on this device lives. The CPU: always
  // allocator(). A GPU keeps int32 tensors (shapes, axes, sizes) in host
  // memory, as TensorFlow does, and everything else in device memory.
  virtual Allocator* GetAllocator(DataType dtype) const { return allocator_; }
  // Whether tensors of `dtype` on this device are in host memory (readable by
  // the CPU): true for every dtype on a CPU device.
  virtual bool HostMemory(DataType dtype) const { return true; }
  // Waits until the work that kernels enqueued on this device is done (a
  // GPU's streams). A CPU kernel's work is done when Compute returns, so the
  // CPU returns at once. Used by traces that time device work
  // (RunOptions::step_stats_device_time).
  virtual absl::Status Synchronize() { return absl::OkStatus(); }
  ResourceMgr* resource_manager() { return &resource_mgr_; }
  // The intra-op pool and its thread count, for RunTasks / ParallelForRanges
  // (engine/kernels/run_tasks.h). Eigen expressions evaluated on this device
  // run on the calling thread when it is one of the pool's (device.cc), and
  // an Eigen contraction (.contract) must not be evaluated on it at all.
  const Eigen::ThreadPoolDevice* eigen_cpu_device() const { return eigen_device_.get(); }
  Eigen::ThreadPoolInterface* intra_op_pool() const { return intra_op_pool_.get(); }
  int intra_op_threads() const { return intra_op_threads_; }

 private:
  std::string name_;
  std::string device_type_;
  Allocator* allocator_;
  ResourceMgr resource_mgr_;
  int intra_op_threads_;
  std::unique_ptr<Eigen::ThreadPoolInterface> intra_op_pool_;
  std::unique_ptr<Eigen::ThreadPoolDevice> eigen_device_;
};

// The intra-op threads of the local CPU device: `requested` when > 0; else
// one per core (`cores`), but at most `beside_accelerator` (when > 0) if the
// process has an accelerator (a GPU). DeviceMgr::Local()'s policy.
int LocalIntraOpThreads(int requested, bool has_accelerator, int beside_accelerator, int cores);

class DeviceMgr {
 public:
  // The process's local devices (CPU:0 with LocalIntraOpThreads of what the
  // two setters below set), then the devices of the registered factories (a
  // GPU); never destroyed.
  static DeviceMgr* Local();
  // Sets the intra-op thread count of the local CPU device (n >= 1). Call
  // before the first Local(); afterwards FailedPrecondition unless n matches.
  static absl::Status SetLocalIntraOpThreads(int n);
  // When no count is set and a factory finds a device (a GPU): at most n
  // intra-op threads (n >= 0; 0, the default, means one per core as without
  // one). `train` sets 2 for a single process whose nodes and kernels' loops
  // share the pool (cmd/train/trainer.cc). Call before the first Local();
  // afterwards FailedPrecondition unless n matches.
  static absl::Status SetLocalIntraOpThreadsBesideAnAccelerator(int n);

  explicit DeviceMgr(std::vector<std::unique_ptr<Device>> devices);
  // NotFound listing the known devices.
  absl::StatusOr<Device*> LookupDevice(absl::string_view name) const;
  const std::vector<std::unique_ptr<Device>>& devices() const { return devices_; }
  Device* HostCpu() const { return devices_.front().get(); }
  // Clears `containers` (all containers when empty) on every device.
  void ClearContainers(const std::vector<std::string>& containers);

 private:
  std::vector<std::unique_ptr<Device>> devices_;
};

// Devices beyond the CPU (a GPU) come from factories that their libraries
// register at static initialization (the GPU device links only with
// --config=cuda). DeviceMgr::Local() calls each factory once, before making
// the CPU devices (whose default thread count depends on them), with this
// process's task name; a factory returns the devices it
// found (none when there is no GPU or it is turned off). HostCpu() stays the
// first device.
using LocalDeviceFactory = std::function<std::vector<std::unique_ptr<Device>>(const std::string& task)>;
void RegisterLocalDeviceFactory(std::string device_type, LocalDeviceFactory factory);
// Device types with a registered factory (e.g. {"GPU"} in a CUDA build).
std::vector<std::string> RegisteredLocalDeviceTypes();
// Turns a device type's factory off (`devices { gpu: false }`). Call before
// the first Local(); afterwards FailedPrecondition unless it changes nothing.
absl::Status SetLocalDeviceTypeEnabled(const std::string& device_type, bool enabled);

// The number of cores this process may use (at least 1).
int NumSchedulableCpus();

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_DEVICE_H_
