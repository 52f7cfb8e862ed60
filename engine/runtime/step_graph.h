// The session steps shared by every Session implementation (the local one and
// the distributed one in engine/distributed/): placing a session's whole graph
// (earlier nodes keep their devices), building one Run signature's graph
// (feeds and fetches rewritten, pruned, every node on its device, CSE,
// constant folding, Identity-chain removal, bias + activation fusion), and
// cutting a placed graph into one partition per device.
//
// Thread safety: free functions over the caller's objects; no shared state.
#ifndef SLUICE_ENGINE_RUNTIME_STEP_GRAPH_H_
#define SLUICE_ENGINE_RUNTIME_STEP_GRAPH_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/framework/device_set.h"
#include "engine/framework/graph.pb.h"
#include "engine/framework/shape_inference.h"
#include "engine/framework/tensor.h"
#include "engine/graph/graph.h"
#include "engine/runtime/session.h"
#include "engine/runtime/step_stats.h"

namespace sluice {

// What a fed tensor must be: its placeholder's dtype and declared shape, and
// the rendezvous key the value goes in under.
struct FeedInfo {
  DataType dtype = DT_INVALID;
  PartialShape shape;  // the placeholder's declared shape, or unknown
  std::string key;
};

// The graph after Session::Extend: `graph`'s nodes, then `more`'s (which may
// reference them); `more`'s versions replace `graph`'s when it has them.
GraphDef ExtendedGraph(const GraphDef& graph, const GraphDef& more);

// Fills `metadata` (when not null) from a step's per-device records.
void FillRunMetadata(std::vector<DeviceStepStats> device_stats, int executed_graph_nodes, RunMetadata* metadata);

// InvalidArgument naming the feed when `value` does not fit `info`.
absl::Status CheckFeedValue(const std::string& feed_name, const FeedInfo& info, const Tensor& value);

// Places `graph` on `devices` (nodes in `pinned` keep their device index) and
// returns every node's device index.
absl::StatusOr<absl::flat_hash_map<std::string, int>> PlaceSessionGraph(
    const GraphDef& graph, const DeviceSet& devices, bool allow_soft_placement,
    const absl::flat_hash_map<std::string, int>* pinned);

struct StepGraphOptions {
  // Several devices: every node goes on placement[node] (else devices.name(0))
  // and feed/fetch nodes follow their tensors; one device: all on device 0.
  const DeviceSet* devices = nullptr;
  const absl::flat_hash_map<std::string, int>* placement = nullptr;  // several devices only
  bool enable_cse = true;
  // Constant folding (engine/graph/optimizer_constant_folding.h) after CSE,
  // then shape no-ops to Identities (engine/graph/optimizer_shape_noops.h).
  // (Then, always: NCHW convolution and pooling nodes, as TensorFlow graphs
  // written for GPUs have them, become NHWC ones, which every device's
  // kernels take, between Transposes: engine/graph/optimizer_layout.h; when
  // it converted any, folding runs again for its permutes of static shapes.)
  bool enable_constant_folding = true;
  // Identity-chain removal (engine/graph/optimizer_identity.h).
  bool enable_identity_removal = true;
  // FuseBiasActivation, then FuseMaxPoolReluGrad (nodes on devices that have
  // the fused ops' kernels: CPUs, and GPUs in a --config=cuda build).
  bool fuse_bias_activation = true;
  // Then FuseBatchNormRelu (engine/graph/optimizer_batch_norm_fusion.h:
  // batch norm [+ AddN] + Relu forward, ReluGrad + its gradient backward).
  bool fuse_batch_norm = true;
  // Last: nodes with a Winograd kernel (engine/kernels/winograd_conv_ops.cc)
  // get it, then nodes with a oneDNN kernel (engine/kernels/onednn) get that
  // (SelectLabeledKernels, engine/graph/kernel_selection.h); a Winograd node
  // falls back to oneDNN's kernel when both are on. winograd_kernels also
  // labels GPU nodes that have a "winograd" kernel (cuDNN's transforms among
  // the candidates: engine/kernels/gpu/conv_ops_gpu.cc).
  bool winograd_kernels = false;
  bool onednn_kernels = false;
};

struct StepGraph {
  std::unique_ptr<Graph> graph;
  std::vector<FeedInfo> feeds;  // parallel to the feeds passed in
  std::vector<std::string> fetch_keys;
  int num_nodes = 0;
};

// The graph of one Run signature: feeds, fetches and targets rewritten into
// _Recv/_Send nodes on devices.name(0) (the client), pruned, CSE'd, its
// constants folded, its Identity chains removed and its bias + activation
// chains fused (each pass as `options` say; targets are never folded or
// removed).
absl::StatusOr<StepGraph> BuildStepGraph(const StepGraphOptions& options, const GraphDef& graph_def,
                                         const std::vector<std::string>& feeds,
                                         const std::vector<std::string>& fetches,
                                         const std::vector<std::string>& targets);

// Cuts a placed step graph into one partition per device of `devices`
// (nullptr for a device with no nodes); `incarnations[i]` is device i's.
// `should_cast`: the lossy-transfer hook of PartitionOptions (may be empty).
absl::Status PartitionStepGraph(const Graph& graph, const DeviceSet& devices, const std::vector<uint64_t>& incarnations,
                                std::function<bool(const Edge*)> should_cast,
                                std::vector<std::unique_ptr<Graph>>* partitions);

}  // namespace sluice

#endif  // SLUICE_ENGINE_RUNTIME_STEP_GRAPH_H_
