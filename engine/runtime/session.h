// Session: the client interface of whitepaper §2 and §4.2. Create/Extend
// build up a GraphDef; Run(feeds, fetches, targets) rewrites the graph with
// feed and fetch nodes, prunes it to what the fetches and targets need,
// eliminates common subexpressions, folds constants, removes Identity
// chains, fuses bias + activation chains, and caches the resulting executor per
// (feeds, fetches, targets) signature, so repeated steps skip all of that.
// Variables live in the process's device containers (DeviceMgr::Local()),
// shared by every session; Session::Reset clears containers.
//
// Thread safety: Run may be called from many threads at once (concurrent
// steps, §7); Create/Extend/Close serialize with each other.
#ifndef SLUICE_ENGINE_RUNTIME_SESSION_H_
#define SLUICE_ENGINE_RUNTIME_SESSION_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/framework/graph.pb.h"
#include "engine/framework/tensor.h"
#include "engine/runtime/step_stats.h"

namespace sluice {

class DeviceMgr;

struct SessionOptions {
  // Threads of the inter-op pool; 0 means one per schedulable core.
  int inter_op_threads = 0;
  // Run the executor's nodes on the host CPU device's intra-op pool (its
  // intra_op_threads), not on a pool of inter_op_threads of the session's
  // own: one set of threads runs nodes and kernels' parallel loops alike.
  // With two pools, their threads outnumber the cores of a small machine and
  // a kernel's woken helper can wait behind a running thread for most of the
  // kernel (docs/PERFORMANCE.md, "One thread pool"). inter_op_threads is then
  // unused. Off by default; `train` turns it on unless
  // `devices { separate_inter_op_pool: true }`.
  bool ops_on_intra_op_pool = false;
  // Common subexpression elimination on each pruned graph.
  bool enable_cse = true;
  // Constant folding on each pruned graph: nodes computable from constants
  // and static shapes are evaluated once and become Consts
  // (engine/graph/optimizer_constant_folding.h); then Reshapes, Sums and the
  // like that static shapes prove to be no-ops become Identities
  // (engine/graph/optimizer_shape_noops.h).
  bool enable_constant_folding = true;
  // Identity nodes that only forward a tensor on one device are removed
  // (engine/graph/optimizer_identity.h).
  bool enable_identity_removal = true;
  // MatMul / Conv2D + BiasAdd (+ Relu) chains on a CPU (or a GPU, when its
  // fused kernels are linked) fused into one node each (engine/graph/optimizer_fusion.h), after CSE; so are their
  // backward MaxPoolGrad + ReluGrad (+ BiasAddGrad) chains
  // (engine/graph/optimizer_pool_grad_fusion.h).
  bool fuse_bias_activation = true;
  // FusedBatchNormV3 (+ AddN) + Relu and ReluGrad + FusedBatchNormGradV3
  // chains fused into _FusedBatchNormEx and _FusedBatchNormGradEx nodes
  // (engine/graph/optimizer_batch_norm_fusion.h), after the bias fusions.
  bool fuse_batch_norm = true;
  // Nodes that have a oneDNN kernel (float32 CPU Conv2D, its backprops and
  // _FusedConv2D; engine/kernels/onednn) run it instead of ours, after the
  // other rewrites. Off by default; `train { kernels { onednn: true } }`
  // turns it on.
  bool onednn_kernels = false;
  // float32 5x5 stride-1 convolutions with enough channels run Winograd
  // kernels (engine/kernels/winograd_conv.h; other shapes keep the kernel they
  // would have had), selected before the oneDNN ones; on a GPU, float32
  // convolutions with cuDNN's FFT and Winograd algorithms among their
  // candidates (each checked against an exact algorithm before it is kept). Off by default; `train { kernels { winograd } }`
  // (unset: on) sets it.
  bool winograd_kernels = false;
  // The devices the graph is placed on; null: this process's (DeviceMgr::Local()).
  // Borrowed: must outlive the session.
  DeviceMgr* device_mgr = nullptr;
  // A node that requests a device type no device offers (or with no kernel
  // there) is placed elsewhere instead of failing.
  bool allow_soft_placement = false;
};

struct RunOptions {
  bool collect_step_stats = false;
  // With collect_step_stats: every synchronous kernel waits for the work it
  // enqueued on its device (a GPU's streams) before its record ends, so a
  // node's duration is its device time too, not only the host's time to
  // enqueue it. The step runs slower (no overlap of host and device); local
  // sessions only (a distributed step ignores it).
  bool step_stats_device_time = false;
};

struct RunMetadata {
  // Every device's records, in completion order per device.
  std::vector<NodeExecStats> step_stats;
  // The same records by device (one entry per device that ran part of the step).
  std::vector<DeviceStepStats> device_step_stats;
  // Nodes in the executed (pruned, rewritten) graph.
  int executed_graph_nodes = 0;
};

class Session {
 public:
  virtual ~Session() = default;

  // Replaces nothing: REQUIRES no graph yet (FailedPrecondition otherwise).
  // The graph is validated in full; InvalidArgument names the bad node.
  virtual absl::Status Create(const GraphDef& graph) = 0;
  // Adds nodes (which may reference existing ones); validated like Create.
  virtual absl::Status Extend(const GraphDef& graph) = 0;
  virtual absl::Status Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                           const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                           std::vector<Tensor>* outputs, RunMetadata* metadata) = 0;
  absl::Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
                   const std::vector<std::string>& targets, std::vector<Tensor>* outputs) {
    return Run(RunOptions(), feeds, fetches, targets, outputs, nullptr);
  }
  // Later Runs fail with Cancelled.
  virtual absl::Status Close() = 0;

  // Clears the named containers ("" for the default one) on this process's
  // devices; with no names, clears all. Variables there become uninitialized
  // for every session.
  static void Reset(const std::vector<std::string>& containers);
};

absl::StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_ENGINE_RUNTIME_SESSION_H_
