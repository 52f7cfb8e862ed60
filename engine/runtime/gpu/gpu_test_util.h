// For GPU tests, which must pass on machines without a GPU (CI): HaveGpu()
// says whether CUDA sees one, and SLUICE_SKIP_WITHOUT_GPU() ends a test early
// with the "SKIP: no GPU" line tools/gpu_check.sh and CI logs show.
#ifndef SLUICE_ENGINE_RUNTIME_GPU_GPU_TEST_UTIL_H_
#define SLUICE_ENGINE_RUNTIME_GPU_GPU_TEST_UTIL_H_

#include <cuda_runtime.h>

#include <cstdio>

namespace sluice {
namespace gpu {

// Whether this process sees a CUDA GPU (clears the error CUDA records when
// there is no driver or device).
inline bool HaveGpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n > 0;
}

}  // namespace gpu
}  // namespace sluice

// Returns from the calling test (it passes) after printing "SKIP: no GPU"
// when there is no GPU.
#define SLUICE_SKIP_WITHOUT_GPU()               \
  do {                                          \
    if (!::sluice::gpu::HaveGpu()) {            \
      std::printf("SKIP: no GPU\n");            \
      return;                                   \
    }                                           \
  } while (0)

#endif  // SLUICE_ENGINE_RUNTIME_GPU_GPU_TEST_UTIL_H_
