// Glue between our CPU kernels and oneDNN 2.6 (Debian's libdnnl, the library
// TensorFlow and PyTorch use on CPUs), for the kernels in this directory.
//
// Threading. Debian builds libdnnl with OpenMP. A primitive created and run
// on a thread whose OpenMP thread count is 1 runs inline on that thread and
// never starts an OpenMP team. Our oneDNN kernels always work that way: they
// cut their work into pieces (images of the batch), run the pieces on the
// device's intra-op pool with RunTasks as our own kernels do, and run one
// one-thread primitive per piece. So oneDNN uses exactly the configured
// intra-op threads, on the same pool, and no OpenMP thread ever exists to
// spin or oversubscribe the cores. RunPieces does this.
//
// Memory. Primitives read and write our NHWC / HWIO tensors through
// user-layout memory descriptors; where a primitive wants a blocked layout
// (nChw16c ...), the kernel reorders into and out of temp buffers within the
// same call. Scratchpads are ours too (scratchpad_mode::user), one per piece,
// so one primitive may run on several threads at once.
//
// Thread safety: CpuEngine() is safe from any thread; the rest are functions.
#ifndef SLUICE_ENGINE_KERNELS_ONEDNN_ONEDNN_UTIL_H_
#define SLUICE_ENGINE_KERNELS_ONEDNN_ONEDNN_UTIL_H_

#include <cstdint>
#include <string>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/run_tasks.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace sluice {
namespace onednn {

// The label of the oneDNN kernels (KernelDefBuilder::Label; a node's
// `_kernel` attr).
inline constexpr char kLabel[] = "onednn";

// The process's CPU engine.
const dnnl::engine& CpuEngine();

// Makes oneDNN run primitives inline on this thread (OpenMP thread count 1
// for regions this thread starts). Cheap after the first call per thread.
void RunInlineOnThisThread();

// A dnnl::error as an absl::Status (Internal, or ResourceExhausted for
// out-of-memory), prefixed with `what`.
absl::Status FromError(const dnnl::error& e, absl::string_view what);

// A dnnl memory descriptor for a float32 tensor of `dims` in `tag`'s layout.
dnnl::memory::desc FloatDesc(const dnnl::memory::dims& dims, dnnl::memory::format_tag tag);

// Our own kernel for the same node (the unlabeled registration), which a
// oneDNN kernel runs for what it does not take itself: bad inputs (so errors
// read the same), empty tensors, shapes oneDNN has no primitive for.
absl::StatusOr<std::unique_ptr<OpKernel>> MakeOwnKernel(OpKernelConstruction* ctx);

// A temp buffer of at least `bytes` bytes (64-byte aligned, as every tensor
// buffer is), or null for 0 bytes.
absl::Status AllocateBytes(OpKernelContext* ctx, size_t bytes, Tensor* holder, void** data);

// A primitive's arguments.
using Args = std::unordered_map<int, dnnl::memory>;

// Adds the scratchpad argument (`bytes` at `data`) when the primitive needs
// one (bytes > 0).
void AddScratchpad(size_t bytes, void* data, Args* args);

// How many pieces RunPieces has run in this process (tests check that a
// oneDNN kernel did not just hand every case to ours).
int64_t PrimitiveRuns();
void CountPrimitiveRuns(int64_t pieces);

// Runs fn(piece) for piece in [0, pieces) on the device's intra-op pool (the
// calling thread takes piece 0), each on a thread where oneDNN runs inline.
template <typename Fn>
void RunPieces(OpKernelContext* ctx, int64_t pieces, const Fn& fn) {
  RunInlineOnThisThread();
  CountPrimitiveRuns(pieces);
  RunTasks(ctx->eigen_cpu_device().getPool(), pieces, [&fn](int64_t p) {
    RunInlineOnThisThread();
    fn(p);
  });
}

// The first item of piece p when n items are cut into `pieces` contiguous
// ranges whose sizes differ by at most one.
inline int64_t PieceBegin(int64_t n, int64_t pieces, int64_t p) { return p * n / pieces; }

// A reorder between a user layout and a primitive's layout, or none when the
// two are the same. Made once per shape, with the primitive.
struct Relayout {
  dnnl::memory::desc user, inner;
  dnnl::reorder to_inner, to_user;  // empty when same()
  bool same() const { return user == inner; }
  static Relayout Make(const dnnl::memory::desc& user, const dnnl::memory::desc& inner, bool to_inner,
                       bool to_user);
};

// The buffer a primitive reads or writes for a user tensor at `user_data`:
// the tensor itself when the layouts agree, else `temp` (inner.get_size()
// bytes). Then In() copies user -> inner (before the primitive) and Out()
// inner -> user (after it). REQUIRES: RunInlineOnThisThread() on this thread.
class Staged {
 public:
  Staged(const Relayout& r, void* user_data, void* temp);
  const dnnl::memory& inner() const { return inner_; }
  void In(dnnl::stream& s);
  void Out(dnnl::stream& s);

 private:
  const Relayout& r_;
  dnnl::memory user_, inner_;
};

}  // namespace onednn
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_ONEDNN_ONEDNN_UTIL_H_
