// CheckPlacement (see placement_check.h).
#include "models/placement_check.h"

#include <string>

#include "absl/strings/str_split.h"
#include "engine/graph/placer.h"

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

bool CheckPlacement(const config::LoadedExperiment& loaded, const DeviceSet& devices, Graph* graph,
                    config::ConfigErrors* errors) {
  PlacementOptions options;
  options.devices = &devices;
  options.allow_soft_placement = loaded.experiment.devices().allow_soft_placement();
  PlacementConflict conflict;
  absl::Status s = Place(options, graph, &conflict);
  if (s.ok()) return true;
  // Every placement error about a node (a bad device, a conflict) names it in
  // `conflict`; Origin falls back to the model for any other.
  errors->Add(Origin(loaded, conflict.node), std::string(s.message()));
  return false;
}

}  // namespace models
}  // namespace sluice
