// Session steps shared by the local and distributed sessions (see step_graph.h).
#include "engine/runtime/step_graph.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/kernel_selection.h"
#include "engine/graph/optimizer_batch_norm_fusion.h"
#include "engine/graph/optimizer_constant_folding.h"
#include "engine/graph/optimizer_cse.h"
#include "engine/graph/optimizer_fusion.h"
#include "engine/graph/optimizer_pool_grad_fusion.h"
#include "engine/graph/optimizer_identity.h"
#include "engine/graph/optimizer_layout.h"
#include "engine/graph/optimizer_shape_noops.h"
#include "engine/graph/partition.h"
#include "engine/graph/placer.h"
#include "engine/graph/subgraph.h"

namespace sluice {

GraphDef ExtendedGraph(const GraphDef& graph, const GraphDef& more) {
  GraphDef combined = graph;
  for (const NodeDef& n : more.node()) *combined.add_node() = n;
  if (more.has_versions()) *combined.mutable_versions() = more.versions();
  return combined;
}

void FillRunMetadata(std::vector<DeviceStepStats> device_stats, int executed_graph_nodes, RunMetadata* metadata) {
  if (metadata == nullptr) return;
  metadata->step_stats.clear();
  for (const DeviceStepStats& d : device_stats) {
    metadata->step_stats.insert(metadata->step_stats.end(), d.nodes.begin(), d.nodes.end());
  }
  metadata->device_step_stats = std::move(device_stats);
  metadata->executed_graph_nodes = executed_graph_nodes;
}

absl::Status CheckFeedValue(const std::string& feed_name, const FeedInfo& info, const Tensor& value) {
  if (value.dtype() != info.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("feed '", feed_name, "' has type ", DataTypeString(value.dtype()),
                                                   " but the graph expects ", DataTypeString(info.dtype)));
  }
  if (!info.shape.IsCompatibleWith(value.shape())) {
    return absl::InvalidArgumentError(absl::StrCat("feed '", feed_name, "' has shape ", value.shape().DebugString(),
                                                   " but the placeholder's shape is ", info.shape.DebugString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::flat_hash_map<std::string, int>> PlaceSessionGraph(
    const GraphDef& graph, const DeviceSet& devices, bool allow_soft_placement,
    const absl::flat_hash_map<std::string, int>* pinned) {
  auto g = GraphFromGraphDef(graph);
  if (!g.ok()) return g.status();
  PlacementOptions place;
  place.devices = &devices;
  place.allow_soft_placement = allow_soft_placement;
  place.pinned = pinned;
  absl::Status s = Place(place, g->get());
  if (!s.ok()) return s;
  absl::flat_hash_map<std::string, int> placement;
  for (Node* n : (*g)->nodes()) {
    const int index = devices.IndexOf(n->assigned_device());
    if (index < 0) {
      return absl::InternalError(
          absl::StrCat("node '", n->name(), "' was placed on unknown device '", n->assigned_device(), "'"));
    }
    placement[n->name()] = index;
  }
  return placement;
}

absl::StatusOr<StepGraph> BuildStepGraph(const StepGraphOptions& options, const GraphDef& graph_def,
                                         const std::vector<std::string>& feeds,
                                         const std::vector<std::string>& fetches,
                                         const std::vector<std::string>& targets) {
  const DeviceSet& devices = *options.devices;
  const bool multi_device = options.placement != nullptr;
  auto graph_or = GraphFromGraphDef(graph_def);
  if (!graph_or.ok()) return graph_or.status();
  StepGraph result;
  result.graph = std::move(graph_or).value();
  Graph* graph = result.graph.get();
  for (const std::string& f : feeds) {
    auto id = ParseTensorName(f);
    FeedInfo info;
    if (id.ok()) {
      if (Node* n = graph->FindNode(id->node); n != nullptr && id->index >= 0 && id->index < n->num_outputs()) {
        info.dtype = BaseType(n->output_type(id->index));
        TensorShapeProto shape;
        const bool placeholder = n->type_string() == "Placeholder" || n->type_string() == "PlaceholderWithDefault";
        if (placeholder && GetNodeAttr(n->def(), "shape", &shape).ok()) {
          auto ps = PartialShape::FromProto(shape);
          if (ps.ok()) info.shape = *ps;
        }
      }
    }
    result.feeds.push_back(info);
  }
  // Every node on its device (CSE then merges only nodes of one device).
  const std::string& client = devices.name(0);
  for (Node* n : graph->nodes()) {
    if (!multi_device) {
      n->set_assigned_device(client);
      continue;
    }
    auto it = options.placement->find(n->name());
    n->set_assigned_device(it != options.placement->end() ? devices.name(it->second) : client);
  }
  RewriteOptions rewrite;
  rewrite.device_name = client;
  rewrite.client_device = client;
  rewrite.use_assigned_devices = multi_device;
  RewriteResult keys;
  absl::Status s = RewriteGraphForExecution(rewrite, feeds, fetches, targets, graph, &keys);
  if (!s.ok()) return s;
  for (size_t i = 0; i < feeds.size(); ++i) {
    result.feeds[i].key = keys.feed_keys[i];
    // Every fed value is checked against the placeholder's shape (Run calls
    // CheckFeedValue), so the step graph's passes may rely on it.
    Node* recv = graph->FindNode(keys.feed_nodes[i]);
    if (recv != nullptr && result.feeds[i].shape.rank_known()) {
      TensorShapeProto shape;
      result.feeds[i].shape.AsProto(&shape);
      (*recv->mutable_def()->mutable_attr())["shape"] = MakeAttr(shape);
    }
  }
  result.fetch_keys = keys.fetch_keys;
  if (options.enable_cse) EliminateCommonSubexpressions(CseOptions(), graph);
  // A target is run for its own sake, by name: neither folded nor removed.
  const absl::flat_hash_set<std::string> target_set(targets.begin(), targets.end());
  auto is_target = [&target_set](const Node* n) { return target_set.contains(n->name()); };
  ConstantFoldingOptions fold;
  fold.keep = is_target;
  // Folding first turns a gradient's computed permutations (the inverse of a
  // user's Transpose) into Consts, which the layout pass recognizes; its own
  // permutations and shape permutes fold in a second round.
  if (options.enable_constant_folding) {
    FoldConstants(fold, graph);
    ShapeNoOpOptions noops;
    noops.keep = is_target;
    ReplaceShapeNoOpsWithIdentities(noops, graph);
  }
  LayoutOptions layout;
  layout.keep = is_target;
  const LayoutResult converted = ConvertDataFormats(layout, graph);
  if (options.enable_constant_folding && converted.converted_nodes > 0) FoldConstants(fold, graph);
  if (options.enable_identity_removal) {
    IdentityRemovalOptions identity;
    identity.keep = is_target;
    RemoveIdentityChains(identity, graph);
  }
  // After the fetch rewrite: a fetched intermediate has a _Send/_Retval
  // consumer, which keeps its chain from fusing.
  if (options.fuse_bias_activation) {
    FuseBiasActivation(FusionOptions(), graph);
    PoolGradFusionOptions pool_grad;
    pool_grad.keep = is_target;
    FuseMaxPoolReluGrad(pool_grad, graph);
  }
  if (options.fuse_batch_norm) {
    BatchNormFusionOptions batch_norm;
    batch_norm.keep = is_target;
    FuseBatchNormRelu(batch_norm, graph);
  }
  if (options.winograd_kernels) {
    KernelSelectionOptions select;
    select.label = "winograd";
    if (options.onednn_kernels) select.fallback_label = "onednn";
    SelectLabeledKernels(select, graph);
    // A GPU's float32 convolutions with cuDNN's FFT and Winograd transforms
    // among the algorithms they time (engine/kernels/gpu/conv_ops_gpu.cc).
    KernelSelectionOptions gpu_select;
    gpu_select.label = "winograd";
    gpu_select.device_type = kDeviceGpu;
    SelectLabeledKernels(gpu_select, graph);
  }
  if (options.onednn_kernels) {
    KernelSelectionOptions select;
    select.label = "onednn";
    SelectLabeledKernels(select, graph);
  }
  result.num_nodes = graph->num_nodes();
  return result;
}

absl::Status PartitionStepGraph(const Graph& graph, const DeviceSet& devices, const std::vector<uint64_t>& incarnations,
                                std::function<bool(const Edge*)> should_cast,
                                std::vector<std::unique_ptr<Graph>>* partitions) {
  PartitionOptions popts;
  for (int i = 0; i < devices.num_devices(); ++i) popts.device_names.push_back(devices.name(i));
  popts.incarnations = incarnations;
  popts.should_cast = std::move(should_cast);
  popts.node_device.assign(graph.num_node_ids(), -1);
  for (Node* n : graph.nodes()) {
    const int index = devices.IndexOf(n->assigned_device());
    if (index < 0) return absl::InternalError(absl::StrCat("node '", n->name(), "' has no device"));
    popts.node_device[n->id()] = index;
  }
  PartitionStats stats;
  return Partition(popts, graph, partitions, &stats);
}

}  // namespace sluice
