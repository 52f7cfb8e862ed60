// Registers the local GPU device factory: DeviceMgr::Local() gets GPU:0 when
// CUDA sees a GPU, and nothing (silently) when it does not. The environment
// variable SLUICE_GPU_MEMORY_MB caps the device memory the allocator takes
// (default: 90% of what is free); SLUICE_NO_GPU=1 skips the GPU (CUDA is not
// touched).
#include <cuda_runtime.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "engine/framework/device.h"
#include "engine/platform/logging.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {
namespace {

std::vector<std::unique_ptr<Device>> MakeLocalGpuDevices(const std::string& task) {
  std::vector<std::unique_ptr<Device>> devices;
  if (const char* off = std::getenv("SLUICE_NO_GPU"); off != nullptr && off[0] == '1') return devices;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0) {
    (void)cudaGetLastError();  // no driver or no GPU: a CPU-only process
    return devices;
  }
  GpuDeviceOptions options;
  options.ordinal = 0;
  if (const char* mb = std::getenv("SLUICE_GPU_MEMORY_MB")) {
    uint64_t v = 0;
    if (absl::SimpleAtoi(mb, &v) && v > 0) {
      options.memory_bytes = static_cast<size_t>(v) << 20;
    } else {
      LOG(WARNING) << "ignoring SLUICE_GPU_MEMORY_MB=" << mb << " (want a positive number of MiB)";
    }
  }
  auto device = GpuDevice::Create(task, options);
  if (!device.ok()) {
    LOG(WARNING) << "not using GPU 0: " << device.status().ToString();
    return devices;
  }
  devices.push_back(std::move(device).value());
  return devices;
}

const bool registered = [] {
  RegisterLocalDeviceFactory(kDeviceGpu, MakeLocalGpuDevices);
  return true;
}();

}  // namespace
}  // namespace gpu
}  // namespace sluice
