// CheckPlacement (see placement_check.h).
#include "models/placement_check.h"

#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/graph/algorithm.h"
#include "engine/graph/cost_model.h"
#include "engine/graph/optimizer_constant_folding.h"
#include "engine/platform/env.h"
#include "monitoring/trace_costs.h"

namespace sluice {
namespace models {
namespace {

// The config entry that built node `name`: the raw node of that name, or the
// layer whose scope holds it ("fc1/kernel", "eval/fc1/MatMul",
// "gradients/fc1/MatMul/...", "train/fc1/kernel/apply"); {0,0} when none.
config::Location Origin(const config::LoadedExperiment& loaded, const std::string& name) {
  const config::Experiment& e = loaded.experiment;
  for (const auto& node : e.model().node()) {
    if (node.name() == name) return loaded.Where(node, node.device().empty() ? "name" : "device");
  }
  for (absl::string_view part : absl::StrSplit(name, '/')) {
    for (const auto& layer : e.model().layer()) {
      if (layer.name() == part) return loaded.Where(layer, layer.device().empty() ? "name" : "device");
    }
  }
  return loaded.Where(e, "model");
}

}  // namespace

bool CheckPlacement(const config::LoadedExperiment& loaded, const PlacementOptions& options, Graph* graph,
                    config::ConfigErrors* errors) {
  PlacementConflict conflict;
  absl::Status s = Place(options, graph, &conflict);
  if (s.ok()) return true;
  // Every placement error about a node (a bad device, a conflict) names it in
  // `conflict`; Origin falls back to the model for any other.
  errors->Add(Origin(loaded, conflict.node), std::string(s.message()));
  return false;
}

bool PlaceTrainingGraph(const config::LoadedExperiment& loaded, const DeviceSet& devices, TrainingGraph* tg,
                        Graph* full, PlacementPlan* plan, config::ConfigErrors* errors) {
  const config::Experiment& e = loaded.experiment;
  const config::Devices& d = e.devices();
  CostModelOptions cost_options;
  cost_options.unknown_dim = std::max<int64_t>(1, e.input().train().batch_size());
  // Costs of the graph as the session runs it: folded constants make a
  // gradient's shapes known (fashion_logreg's kernel gradient was counted as
  // [784, batch] x batch, 34 times the step's FLOPs at batch 1024).
  std::unique_ptr<Graph> as_run = full->Clone();
  FoldConstants(ConstantFoldingOptions(), as_run.get());
  auto costs = CostModel::Estimate(*full, cost_options, as_run.get());
  if (!costs.ok()) {
    errors->Add(loaded.Where(e, "model"), absl::StrCat("estimating node costs: ", costs.status().message()));
    return false;
  }
  int measured = 0;
  if (!d.measured_costs().empty()) {
    auto trace = ReadTraceCosts(Env::Default(), d.measured_costs());
    if (!trace.ok()) {
      errors->Add(loaded.Where(d, "measured_costs"), std::string(trace.status().message()));
      return false;
    }
    std::vector<std::pair<std::string, double>> times;
    for (const MeasuredNodeCost& c : *trace) {
      // A node the trace shows as another op keeps its estimate: the session's
      // fused _FusedMatMul/_FusedConv2D carries the name of its chain's Relu or
      // BiasAdd but times the whole product (engine/graph/optimizer_fusion.h).
      const Node* node = full->FindNode(c.node);
      if (node != nullptr && !c.op.empty() && c.op != node->type_string()) continue;
      times.emplace_back(c.node, c.total_ns);
    }
    measured = costs->ApplyMeasured(*full, times);
    if (measured == 0) {
      errors->Add(loaded.Where(d, "measured_costs"),
                  absl::StrCat("the trace '", d.measured_costs(), "' times ", trace->size(),
                               " nodes, none of them in this experiment's graph as the same op (a trace of another model?)"));
      return false;
    }
  }
  const bool use_costs = d.placer() == config::Devices::COST_MODEL;
  const std::vector<std::string> roots = TrainingStepRoots(*tg);
  std::vector<int> device_of;
  PlacementOptions options;
  options.devices = &devices;
  options.allow_soft_placement = d.allow_soft_placement();
  options.cost_model = use_costs ? &*costs : nullptr;
  options.cost_roots = roots;
  options.device_indices = &device_of;
  if (!CheckPlacement(loaded, options, full, errors)) return false;
  if (use_costs) {
    for (NodeDef& node : *tg->graph.mutable_node()) {
      const Node* placed = full->FindNode(node.name());
      if (placed != nullptr) node.set_device(placed->assigned_device());
    }
  }
  std::vector<Node*> root_nodes;
  for (const std::string& name : roots) {
    if (Node* n = full->FindNode(name)) root_nodes.push_back(n);
  }
  *plan = PlanPlacement(*full, device_of, devices, *costs, ReverseReachable(*full, root_nodes));
  plan->placer = !use_costs ? "simple placer"
                 : measured > 0
                     ? absl::StrCat("cost model, measured times for ", measured, " nodes from ", d.measured_costs())
                     : "cost model, estimated from shapes";
  return true;
}

}  // namespace models
}  // namespace sluice
