// Device: where kernels run. Owns its Allocator, its ResourceMgr (the
// containers of stateful resources) and, for the CPU, an Eigen thread pool for
// intra-op parallelism. Devices are named like
// "/job:localhost/replica:0/task:0/device:CPU:0".
// DeviceMgr::Local() holds this process's devices for its whole lifetime, so
// every session in the process shares their containers.
// Thread safety: all methods may be called concurrently.
#ifndef SLUICE_ENGINE_FRAMEWORK_DEVICE_H_
#define SLUICE_ENGINE_FRAMEWORK_DEVICE_H_

#define EIGEN_USE_THREADS

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/framework/allocator.h"
#include "engine/framework/resource_mgr.h"
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
  ResourceMgr* resource_manager() { return &resource_mgr_; }
  // For Eigen expressions: `out.device(*ctx->eigen_cpu_device()) = a + b;`.
  const Eigen::ThreadPoolDevice* eigen_cpu_device() const { return eigen_device_.get(); }
  Eigen::ThreadPoolInterface* intra_op_pool() const { return intra_op_pool_.get(); }
  int intra_op_threads() const { return intra_op_threads_; }

 private:
  std::string name_;
  std::string device_type_;
  Allocator* allocator_;
  ResourceMgr resource_mgr_;
  int intra_op_threads_;
  std::unique_ptr<Eigen::ThreadPool> intra_op_pool_;
  std::unique_ptr<Eigen::ThreadPoolDevice> eigen_device_;
};

class DeviceMgr {
 public:
  // The process's local devices (CPU:0 with the intra-op threads set by
  // SetLocalIntraOpThreads, else one per core); never destroyed.
  static DeviceMgr* Local();
  // Sets the intra-op thread count of the local CPU device (n >= 1). Call
  // before the first Local(); afterwards FailedPrecondition unless n matches.
  static absl::Status SetLocalIntraOpThreads(int n);

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

// The number of cores this process may use (at least 1).
int NumSchedulableCpus();

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_DEVICE_H_
