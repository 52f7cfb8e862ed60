// LoadCublas and the cuBLAS trampolines (see cublas_loader.h).
#include "engine/runtime/gpu/cublas_loader.h"

#include <dlfcn.h>

#include <mutex>

#include "absl/strings/str_cat.h"

// The exported names (cublas_v2.h maps cublasSgemm to cublasSgemm_v2 and so on).
#define SLUICE_CUBLAS_SYMBOLS(X)                                                                        \
  X(cublas, cublasCreate_v2)                                                                            \
  X(cublas, cublasDestroy_v2)                                                                           \
  X(cublas, cublasSetStream_v2)                                                                         \
  X(cublas, cublasGetStream_v2)                                                                         \
  X(cublas, cublasSetMathMode)                                                                          \
  X(cublas, cublasGetMathMode)                                                                          \
  X(cublas, cublasSetPointerMode_v2)                                                                    \
  X(cublas, cublasGetStatusString)                                                                      \
  X(cublas, cublasSgemm_v2)                                                                             \
  X(cublas, cublasSgemm_v2_64)                                                                          \
  X(cublas, cublasDgemm_v2)                                                                             \
  X(cublas, cublasDgemm_v2_64)                                                                          \
  X(cublas, cublasSgemmStridedBatched)                                                                  \
  X(cublas, cublasSgemmStridedBatched_64)                                                               \
  X(cublas, cublasDgemmStridedBatched)                                                                  \
  X(cublas, cublasDgemmStridedBatched_64)                                                               \
  X(cublas, cublasSgemmBatched)                                                                         \
  X(cublas, cublasSgemmBatched_64)                                                                      \
  X(cublas, cublasDgemmBatched)                                                                         \
  X(cublas, cublasDgemmBatched_64)                                                                      \
  X(cublasLt, cublasLtCreate)                                                                           \
  X(cublasLt, cublasLtDestroy)

// Each entry point: a pointer (hidden, so the jump is RIP-relative with no
// GOT) and a function that jumps through it with every argument register
// untouched.
#define SLUICE_CUBLAS_TRAMPOLINE(lib, sym)                                                  \
  extern "C" __attribute__((visibility("hidden"))) void* sluice_cublas_ptr_##sym;          \
  void* sluice_cublas_ptr_##sym = nullptr;                                                  \
  asm(".text\n"                                                                             \
      ".globl " #sym "\n"                                                                   \
      ".type " #sym ", @function\n" #sym ":\n"                                              \
      "  jmp *sluice_cublas_ptr_" #sym "(%rip)\n"                                           \
      ".size " #sym ", .-" #sym "\n");
SLUICE_CUBLAS_SYMBOLS(SLUICE_CUBLAS_TRAMPOLINE)

namespace sluice {
namespace gpu {

namespace {

absl::Status Load() {
  // cuBLASLt first: libcublas needs it, and it is found the same way.
  void* handles[2] = {nullptr, nullptr};
  const char* names[2] = {"libcublasLt.so.13", "libcublas.so.13"};
  for (int i = 0; i < 2; ++i) {
    handles[i] = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (handles[i] == nullptr) {
      const char* why = dlerror();
      return absl::UnavailableError(absl::StrCat("cannot load ", names[i], " (cuBLAS, needed by the GPU device): ",
                                                 why != nullptr ? why : "unknown error",
                                                 "; put CUDA's lib64 folder on LD_LIBRARY_PATH"));
    }
  }
  void* cublasLt = handles[0];
  void* cublas = handles[1];
#define SLUICE_CUBLAS_RESOLVE(lib, sym)                                                                      \
  sluice_cublas_ptr_##sym = dlsym(lib, #sym);                                                                \
  if (sluice_cublas_ptr_##sym == nullptr) {                                                                  \
    return absl::UnavailableError(absl::StrCat("lib" #lib ".so.13 has no " #sym ": is it CUDA 13's cuBLAS?")); \
  }
  SLUICE_CUBLAS_SYMBOLS(SLUICE_CUBLAS_RESOLVE)
#undef SLUICE_CUBLAS_RESOLVE
  return absl::OkStatus();
}

}  // namespace

absl::Status LoadCublas() {
  static std::once_flag once;
  static absl::Status* status = nullptr;
  std::call_once(once, [] { status = new absl::Status(Load()); });
  return *status;
}

}  // namespace gpu
}  // namespace sluice
