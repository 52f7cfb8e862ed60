// Stage and Unstage on a GPU (inputs/staging_kernels.h): the staged tuple is
// the device tensors that the staging Run's _Recv kernels copied to the GPU
// (int32 and string ones stay in host memory, as every GPU kernel here
// expects). No kernel here touches the GPU. Ordering: each _Recv queues its
// copy on the host-to-device stream behind the work already on the compute
// stream, and the compute stream waits for the copy, so a later step's
// kernels read the bytes after they arrived. That also puts the copy itself
// (about 30 us for a fashion_mlp batch of 1024 over PCIe) in the compute
// stream's order in the middle of the step beside it: what overlaps the step
// is the dequeue and the copy into pinned memory on the host. An event per
// staged tuple, waited for by the Unstage, would move the copy out of the
// step too (not done: no GPU to measure it on).
#include "inputs/staging_kernels.h"

namespace sluice {
namespace gpu {
namespace {

REGISTER_KERNEL_BUILDER(Name("Stage").Device(kDeviceGpu), StageOp);
REGISTER_KERNEL_BUILDER(Name("Unstage").Device(kDeviceGpu), UnstageOp);

}  // namespace
}  // namespace gpu
}  // namespace sluice
