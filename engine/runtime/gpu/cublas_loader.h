// cuBLAS and cuBLASLt, loaded when the first GPU device is made rather than
// when the process starts.
//
// Why: libcublas.so needs libcublasLt.so, which carries ~94 KiB of
// thread-local storage. A library linked into the program has its TLS carved
// out of every thread's stack, and the /metrics server (civetweb) starts its
// threads with a fixed 100 KiB stack, so with cuBLAS linked normally it could
// not start at all. Loaded with dlopen, the TLS is allocated on demand instead.
//
// How: every cuBLAS entry point that Sluice calls is defined here as a
// one-instruction trampoline (x86-64) that jumps through a pointer which
// LoadCublas fills from dlsym. Code includes cublas_v2.h / cublasLt.h and
// calls cuBLAS as usual; it must not run before LoadCublas succeeded
// (GpuDevice::Create calls it first). A cuBLAS function used without an entry
// in cublas_loader.cc fails to link, so the list cannot silently go stale.
//
// Thread safety: LoadCublas may be called concurrently; it loads once.
#ifndef SLUICE_ENGINE_RUNTIME_GPU_CUBLAS_LOADER_H_
#define SLUICE_ENGINE_RUNTIME_GPU_CUBLAS_LOADER_H_

#include "absl/status/status.h"

namespace sluice {
namespace gpu {

// Loads libcublasLt.so.13 and libcublas.so.13 (from LD_LIBRARY_PATH and the
// system's library path) and resolves every entry point. Unavailable, naming
// the library or symbol and dlerror's text, when that fails; the same result
// on every later call.
absl::Status LoadCublas();

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_RUNTIME_GPU_CUBLAS_LOADER_H_
