// Stage and Unstage on a GPU (inputs/staging_kernels.h): the staged tuple is
// the device tensors that the staging Run's _Recv kernels copied to the GPU
// (int32 ones stay in host memory, as every GPU kernel here expects). The
// copy was queued on the host-to-device stream and the compute stream waits
// for it, so the kernels of a later step that read an unstaged tensor run
// after its bytes arrived; no kernel here touches the GPU.
#include "inputs/staging_kernels.h"

namespace sluice {
namespace gpu {
namespace {

REGISTER_KERNEL_BUILDER(Name("Stage").Device(kDeviceGpu), StageOp);
REGISTER_KERNEL_BUILDER(Name("Unstage").Device(kDeviceGpu), UnstageOp);

}  // namespace
}  // namespace gpu
}  // namespace sluice
