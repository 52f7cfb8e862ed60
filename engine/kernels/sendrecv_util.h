// The device-neutral part of the _Send and _Recv kernels, shared by the CPU
// kernels (sendrecv_ops.cc) and the GPU kernels (gpu/sendrecv_ops_gpu.cc):
// the attrs and rendezvous key of a transfer, and _Recv's protocol with the
// step's rendezvous (cancellation, error messages, the dtype check). What a
// device does with the value (a copy to device memory) stays in its kernel.
// Thread safety: RendezvousAttrs is immutable after Read; RecvFromRendezvous
// may run concurrently for different kernels and steps.
#ifndef SLUICE_ENGINE_KERNELS_SENDRECV_UTIL_H_
#define SLUICE_ENGINE_KERNELS_SENDRECV_UTIL_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "engine/framework/op_kernel.h"

namespace sluice {

struct RendezvousAttrs {
  std::string tensor_name, send_device, recv_device;
  int64_t send_device_incarnation = 0;
  // The key in the root frame's first iteration (frame 0, iteration 0), where
  // every node outside a loop runs: built once here, not per execution.
  std::string root_key;

  absl::Status Read(OpKernelConstruction* ctx);
  std::string MakeKey(int64_t frame_id, int64_t iter_id) const;
  // root_key outside loops; inside a loop, a key built into `loop_key`.
  const std::string& Key(const OpKernelContext* ctx, std::string* loop_key) const;
};

// _Recv: registers with the step's cancellation manager and receives
// attrs.Key(ctx) from the step's rendezvous. On arrival: an error (named
// after the tensor) or a value whose dtype is not `expected` fails the
// kernel; a dead value sets nothing; otherwise the kernel's status is
// deliver(value). Then calls done(). REQUIRES: `attrs` outlives the receive
// (it is the kernel's own).
void RecvFromRendezvous(OpKernelContext* ctx, const RendezvousAttrs& attrs, DataType expected,
                        std::function<absl::Status(const Tensor&)> deliver, AsyncOpKernel::DoneCallback done);

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_SENDRECV_UTIL_H_
