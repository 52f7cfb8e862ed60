// PlanPlacement and its printout (see placement_plan.h).
#include "models/placement_plan.h"

#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/framework/device_name.h"
#include "engine/framework/node_def_util.h"
#include "engine/graph/control_flow.h"
#include "monitoring/progress.h"

namespace sluice {
namespace models {
namespace {

// The node of a tensor name ("x:0", "^x", "x"); "" when it is malformed.
std::string NodeOf(const std::string& tensor) {
  auto id = ParseTensorName(tensor);
  return id.ok() ? id->node : "";
}

// "CPU:1" when every device shares job, replica and task; else the full name.
std::vector<std::string> ShortNames(const DeviceSet& devices) {
  std::vector<std::string> names;
  bool one_task = true;
  for (int d = 0; d < devices.num_devices(); ++d) {
    const DeviceName& a = devices.parsed_name(d);
    const DeviceName& b = devices.parsed_name(0);
    if (a.job != b.job || a.replica != b.replica || a.task != b.task) one_task = false;
  }
  for (int d = 0; d < devices.num_devices(); ++d) {
    const DeviceName& n = devices.parsed_name(d);
    names.push_back(one_task ? absl::StrCat(n.type, ":", n.id) : devices.name(d));
  }
  return names;
}

// The resource a variable node names (the eval tower's copy shares it).
std::string VariableKey(const Node* node) {
  std::string container, shared;
  GetNodeAttr(node->def(), "container", &container).IgnoreError();
  GetNodeAttr(node->def(), "shared_name", &shared).IgnoreError();
  return absl::StrCat(container, "|", shared.empty() ? node->name() : shared);
}

}  // namespace

std::vector<std::string> TrainingStepRoots(const TrainingGraph& tg) {
  std::vector<std::string> roots;
  // A staged batch crosses to its device in the Run beside the step: one per step too.
  for (const std::string* tensor : {&tg.train_op, &tg.loss, &tg.train_input.stage_op}) {
    if (!tensor->empty() && !NodeOf(*tensor).empty()) roots.push_back(NodeOf(*tensor));
  }
  return roots;
}

PlacementPlan PlanPlacement(const Graph& placed, const std::vector<int>& device_of, const DeviceSet& devices,
                            const CostModel& costs, const std::vector<bool>& in_step) {
  PlacementPlan plan;
  plan.devices.resize(devices.num_devices());
  for (int d = 0; d < devices.num_devices(); ++d) plan.devices[d].device = devices.name(d);
  absl::flat_hash_set<std::string> variables_seen;
  std::map<std::pair<int, int>, DeviceLink> links;
  std::set<std::tuple<int, int, int>> sent;   // (src id, src output, dst device)
  std::set<std::pair<int, int>> controls;     // (src id, dst device)
  // Nodes in a loop's frame run once per iteration; the plan counts them once.
  std::vector<ControlFlowInfo> frames;
  if (!BuildControlFlowInfo(placed, &frames).ok()) frames.clear();
  for (int id = 0; id < placed.num_node_ids(); ++id) {
    const Node* node = placed.FindNodeId(id);
    if (node == nullptr) continue;
    const int d = device_of[id];
    DevicePlan& dp = plan.devices[d];
    ++dp.nodes;
    if (costs.VariableElements(node) > 0 && variables_seen.insert(VariableKey(node)).second) {
      dp.variable_elements += costs.VariableElements(node);
      dp.variable_bytes += costs.OutputBytes(node, 0);
    }
    if (!in_step[id]) continue;
    ++dp.step_nodes;
    dp.step_flops += costs.Flops(node);
    if (static_cast<size_t>(id) < frames.size() && !frames[id].frame_name.empty()) dp.step_has_loops = true;
    for (int port = 0; port < node->num_outputs(); ++port) {
      if (!IsRefType(node->output_type(port))) dp.step_tensor_bytes += costs.OutputBytes(node, port);
    }
    for (const Edge* e : node->in_edges()) {
      const int from = device_of[e->src->id()];
      if (from == d) continue;
      DeviceLink& link = links[{from, d}];
      link.from = from;
      link.to = d;
      if (e->IsControlEdge()) {
        if (controls.insert({e->src->id(), d}).second) ++link.controls;
      } else if (sent.insert({e->src->id(), e->src_output, d}).second) {
        ++link.tensors;
        link.bytes += costs.OutputBytes(e->src, e->src_output);
      }
    }
  }
  for (auto& [key, link] : links) plan.links.push_back(link);
  return plan;
}

void PrintPlacementPlan(const PlacementPlan& plan, const DeviceSet& devices, std::ostream& out) {
  const std::vector<std::string> names = ShortNames(devices);
  size_t width = 0;
  for (const std::string& n : names) width = std::max(width, n.size());
  out << "  placement      " << plan.placer << "\n";
  for (size_t d = 0; d < plan.devices.size(); ++d) {
    const DevicePlan& dp = plan.devices[d];
    out << "    " << names[d] << std::string(width - names[d].size() + 2, ' ') << "nodes " << FormatThousands(dp.nodes)
        << " (step " << FormatThousands(dp.step_nodes) << ")  variables " << FormatThousands(dp.variable_elements)
        << "  FLOPs/step " << absl::StrFormat("%.3g", dp.step_flops)
        << (dp.step_has_loops ? " (a loop's body counted once)" : "") << "  memory <= "
        << FormatBytes(static_cast<double>(dp.variable_bytes + dp.step_tensor_bytes)) << " (variables " << FormatBytes(static_cast<double>(dp.variable_bytes)) << ")\n";
  }
  if (plan.devices.size() > 1 && plan.links.empty()) out << "    nothing crosses devices in a step\n";
  for (const DeviceLink& link : plan.links) {
    out << "    " << names[link.from] << " -> " << names[link.to] << "  " << FormatThousands(link.tensors)
        << (link.tensors == 1 ? " tensor, " : " tensors, ") << FormatBytes(static_cast<double>(link.bytes)) << " per step";
    if (link.controls > 0) out << " (+" << link.controls << " control)";
    // Between a GPU and a CPU the bytes cross PCIe (int32 tensors excepted:
    // a GPU keeps those in host memory).
    const std::string& from_type = devices.device(link.from)->device_type();
    const std::string& to_type = devices.device(link.to)->device_type();
    if ((from_type == kDeviceGpu) != (to_type == kDeviceGpu)) out << " over PCIe";
    out << "\n";
  }
}

}  // namespace models
}  // namespace sluice
