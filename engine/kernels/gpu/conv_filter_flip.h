// The turned filter of Conv2DBackpropInput computed as a forward convolution
// (conv_cudnn_shape.h, InputGradientAsForward): plain index arithmetic for
// the CUDA kernel that builds it (cudnn_util_kernels.cu, LaunchFlipFilter)
// and for the host test that checks the identity (conv_cudnn_shape_test.cc).
// No dependencies, so nvcc and the host compiler both include it.
// Thread safety: a pure function.
#ifndef SLUICE_ENGINE_KERNELS_GPU_CONV_FILTER_FLIP_H_
#define SLUICE_ENGINE_KERNELS_GPU_CONV_FILTER_FLIP_H_

#include <cstdint>

#if defined(__CUDACC__)
#define SLUICE_HOST_DEVICE __host__ __device__
#else
#define SLUICE_HOST_DEVICE
#endif

namespace sluice {
namespace gpu {

// The index into the HWIO filter w [kh, kw, c, o] of element `index` of the
// turned filter that InputGradientAsForward's convolution takes, in cuDNN's
// layout for it: KCRS (nchw: [c][o][kh][kw]) or KRSC (NHWC: [c][kh][kw][o]);
// the turned filter's element (i, j) is w's (kh-1-i, kw-1-j).
SLUICE_HOST_DEVICE inline int64_t FlippedFilterSource(int64_t index, int64_t kh, int64_t kw, int64_t c, int64_t o,
                                                      bool nchw) {
  int64_t i, j, cc, oo;
  if (nchw) {
    j = index % kw;
    index /= kw;
    i = index % kh;
    index /= kh;
    oo = index % o;
    cc = index / o;
  } else {
    oo = index % o;
    index /= o;
    j = index % kw;
    index /= kw;
    i = index % kh;
    cc = index / kh;
  }
  return (((kh - 1 - i) * kw + (kw - 1 - j)) * c + cc) * o + oo;
}

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_CONV_FILTER_FLIP_H_
