// Stage and Unstage on a GPU (inputs/staging_kernels.h): the staged tuple is
// the device tensors that the staging Run's _Recv kernels copied to the GPU
// (int32 and string ones stay in host memory, as every GPU kernel here
// expects). The partitioner marks the _Recv kernels that feed only a Stage
// that orders their copies (kOrdersItsInputCopiesAttr, which AddBatch sets;
// engine/framework/op_kernel.h). Each such _Recv queues its copy on the
// device's staged-batch copy stream, behind the work already on the compute
// stream (the copy's buffer may have been another tensor's), and does not
// make the compute stream wait for it: that wait would put the copy (about
// 30 us for a fashion_mlp batch of 1024 over PCIe) into the compute stream's
// order in the middle of the step the staging runs beside. The Stage then
// records an event on that stream, after the copies of its tuple (its inputs'
// _Recv kernels queued them before they finished), and the tuple's fence
// makes the compute stream wait for the event when a later step's Unstage
// hands the tuple on: that step's kernels read the bytes after they arrived.
#include "engine/runtime/gpu/gpu_device.h"
#include "inputs/staging_kernels.h"

namespace sluice {
namespace gpu {
namespace {

class GpuStageOp : public StageOp {
 public:
  using StageOp::StageOp;

 protected:
  // Everything on the staged-batch copy stream so far (this Run's copies of
  // the tuple among it), waited for on this GPU's compute stream at the
  // Unstage. A _Recv that the partitioner did not mark (a Stage built
  // without kOrdersItsInputCopiesAttr) copied on the other stream and made
  // the compute stream wait for its copy already.
  absl::StatusOr<StagedTupleFence> Fence(OpKernelContext* ctx) override {
    GpuDevice* dev = GetGpuDevice(ctx);
    auto copies = dev->RecordEvent(dev->staged_host_to_device_stream());
    if (!copies.ok()) return copies.status();
    cudaStream_t compute = dev->compute_stream();
    return StagedTupleFence([compute, copies = *std::move(copies)](OpKernelContext*) {
      return CudaStatus(cudaStreamWaitEvent(compute, copies.get(), 0), "cudaStreamWaitEvent (the staged copies)");
    });
  }
};

REGISTER_KERNEL_BUILDER(Name("Stage").Device(kDeviceGpu), GpuStageOp);
REGISTER_KERNEL_BUILDER(Name("Unstage").Device(kDeviceGpu), UnstageOp);

}  // namespace
}  // namespace gpu
}  // namespace sluice
