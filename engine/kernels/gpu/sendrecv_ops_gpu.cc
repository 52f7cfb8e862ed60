// GPU kernels for _Send and _Recv: the transfers between a GPU and the CPU (or
// another task). A value stays where it is when it goes to or comes from this
// same GPU, or when its dtype lives in host memory on a GPU (int32). Otherwise
//   _Send copies device -> pinned host on the device-to-host stream (after the
//   compute stream's work that produced it) and sends the host copy once the
//   copy is done; it is async, and keeps the device tensor alive until then.
//   _Recv copies the received host value into a new device tensor on the
//   host-to-device stream (a pageable value through a pinned copy first, so
//   the host never waits for the GPU), makes the compute stream wait for the
//   copy, keeps the host value alive until the copy is done, and finishes at
//   once: stream order protects every consumer on the compute stream. A
//   _Recv with kConsumerOrdersCopyAttr (engine/framework/op_kernel.h: its only
//   consumers are staging nodes that make their users wait for the copy)
//   copies on the device's staged-batch stream, leaves the compute stream
//   alone, and keeps its device tensor alive too until the copy is done, so
//   that no buffer is reused under a pending copy.
#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "engine/framework/device_name.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/sendrecv_util.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {
namespace {

// Whether two full device names name the same device (a name that does not
// parse is never the same: the value then takes the safe path through host
// memory).
bool SameDevice(const std::string& a, const std::string& b) {
  auto x = ParseDeviceName(a);
  auto y = ParseDeviceName(b);
  if (!x.ok() || !y.ok() || !IsFullySpecified(*x) || !IsFullySpecified(*y)) return false;
  return x->job == y->job && x->replica == y->replica && x->task == y->task && x->type == y->type && x->id == y->id;
}

class GpuSendOp : public AsyncOpKernel {
 public:
  explicit GpuSendOp(OpKernelConstruction* ctx) : AsyncOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, attrs_.Read(ctx));
    to_this_device_ = SameDevice(attrs_.recv_device, ctx->device()->name());
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    Rendezvous* rendezvous = ctx->rendezvous();
    OP_REQUIRES_ASYNC(ctx, rendezvous != nullptr, absl::InternalError("_Send ran without a rendezvous"), done);
    std::string loop_key;
    std::string key = attrs_.Key(ctx, &loop_key);
    if (ctx->is_input_dead()) {
      ctx->SetStatus(rendezvous->Send(key, Tensor(), true));
      done();
      return;
    }
    const Tensor& in = ctx->input(0);
    GpuDevice* dev = GetGpuDevice(ctx);
    if (to_this_device_ || dev->HostMemory(in.dtype()) || in.TotalBytes() == 0) {
      ctx->SetStatus(rendezvous->Send(key, in, false));
      done();
      return;
    }
    auto host = Tensor::Allocate(dev->host_allocator(), in.dtype(), in.shape());
    OP_REQUIRES_OK_ASYNC(ctx, host.status(), done);
    cudaStream_t d2h = dev->device_to_host_stream();
    OP_REQUIRES_OK_ASYNC(ctx, dev->StreamWaitStream(d2h, dev->compute_stream()), done);
    OP_REQUIRES_OK_ASYNC(
        ctx,
        CudaStatus(cudaMemcpyAsync(host->raw_data(), in.raw_data(), in.TotalBytes(), cudaMemcpyDeviceToHost, d2h),
                   "cudaMemcpyAsync(device to host)"),
        done);
    dev->ThenRun(d2h, [ctx, rendezvous, key = std::move(key), host = std::move(host).value(), in,
                       done = std::move(done)](absl::Status s) {
      if (s.ok()) {
        ctx->SetStatus(rendezvous->Send(key, host, false));
      } else {
        ctx->SetStatus(s);
      }
      done();
    });
  }
  bool IsExpensive() const override { return false; }

 private:
  RendezvousAttrs attrs_;
  bool to_this_device_ = false;
};

class GpuRecvOp : public AsyncOpKernel {
 public:
  explicit GpuRecvOp(OpKernelConstruction* ctx) : AsyncOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, attrs_.Read(ctx));
    from_this_device_ = SameDevice(attrs_.send_device, ctx->device()->name());
    if (FindAttr(ctx->def(), kConsumerOrdersCopyAttr) != nullptr) {
      OP_REQUIRES_OK(ctx, ctx->GetAttr(kConsumerOrdersCopyAttr, &consumer_orders_copy_));
    }
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    RecvFromRendezvous(
        ctx, attrs_, output_type(0), [ctx, this](const Tensor& value) { return Deliver(ctx, value); },
        std::move(done));
  }
  bool IsExpensive() const override { return false; }

 private:
  // Sets the output: `value` itself, or a device copy of it.
  absl::Status Deliver(OpKernelContext* ctx, const Tensor& value) {
    GpuDevice* dev = GetGpuDevice(ctx);
    if (from_this_device_ || dev->HostMemory(value.dtype())) {
      ctx->set_output(0, value);
      return absl::OkStatus();
    }
    Tensor* out = nullptr;
    absl::Status s = ctx->allocate_output(0, value.shape(), &out);
    if (!s.ok() || value.TotalBytes() == 0) return s;
    // A copy from pageable memory starts with a synchronization of its
    // stream, and this stream waits for the compute stream (below): the host
    // would wait for the GPU to finish all the work queued before this copy
    // (the previous step's backward pass, say), and the GPU would then idle
    // while the host queues the next kernels. From pinned memory the copy is
    // asynchronous, so a pageable value (the CPU allocator's: an input batch)
    // is first copied to a pinned buffer on the host.
    const Tensor pinned = StagedInPinnedMemory(dev, value);
    // A staged batch's copy goes on its own stream: the step's other copies
    // (which the compute stream waits for) must not queue behind it.
    cudaStream_t h2d = consumer_orders_copy_ ? dev->staged_host_to_device_stream() : dev->host_to_device_stream();
    // The new buffer may have been freed by work still queued on the compute
    // stream: the copy waits for that work first.
    s = dev->StreamWaitStream(h2d, dev->compute_stream());
    if (s.ok()) {
      s = CudaStatus(cudaMemcpyAsync(out->raw_data(), pinned.raw_data(), pinned.TotalBytes(), cudaMemcpyHostToDevice, h2d),
                     "cudaMemcpyAsync(host to device)");
    }
    if (s.ok() && !consumer_orders_copy_) s = dev->StreamWaitStream(dev->compute_stream(), h2d);
    // The host value (and its pinned copy) must outlive the copy; so must the
    // device buffer when nothing on the compute stream waits for the copy.
    dev->ThenRun(h2d, [value, pinned, device_copy = consumer_orders_copy_ ? *out : Tensor()](absl::Status) {});
    return s;
  }

  // `value` when it is in page-locked memory already (or pinning fails: the
  // copy then goes from pageable memory, slower but correct); else a copy of
  // it in the device's pinned host memory.
  static Tensor StagedInPinnedMemory(GpuDevice* dev, const Tensor& value) {
    cudaPointerAttributes attributes;
    if (cudaPointerGetAttributes(&attributes, value.raw_data()) != cudaSuccess) {
      cudaGetLastError();  // clears the error this query left behind
      return value;
    }
    if (attributes.type != cudaMemoryTypeUnregistered) return value;
    absl::StatusOr<Tensor> pinned = Tensor::Allocate(dev->host_allocator(), value.dtype(), value.shape());
    if (!pinned.ok()) return value;
    std::memcpy(pinned->raw_data(), value.raw_data(), value.TotalBytes());
    return *std::move(pinned);
  }

  RendezvousAttrs attrs_;
  bool from_this_device_ = false;
  bool consumer_orders_copy_ = false;
};

REGISTER_KERNEL_BUILDER(Name("_Send").Device(kDeviceGpu), GpuSendOp);
REGISTER_KERNEL_BUILDER(Name("_Recv").Device(kDeviceGpu), GpuRecvOp);

}  // namespace
}  // namespace gpu
}  // namespace sluice
