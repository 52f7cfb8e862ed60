// The placement part of the plan that `train` prints before any work (and
// `train --dry-run` stops after): per device, the nodes placed there, the
// variables it holds, the FLOPs and tensor bytes of one training step, and,
// per pair of devices, the tensors and bytes that cross per step (one
// Send/Recv pair per (tensor, destination device), as the partitioner makes
// them). Sizes come from the cost model, with unknown dims (the batch) as it
// was told.
// Thread safety: pure functions.
#ifndef SLUICE_MODELS_PLACEMENT_PLAN_H_
#define SLUICE_MODELS_PLACEMENT_PLAN_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "engine/framework/device_set.h"
#include "engine/graph/cost_model.h"
#include "engine/graph/graph.h"
#include "models/training_graph.h"

namespace sluice {
namespace models {

struct DevicePlan {
  std::string device;          // full name
  int64_t nodes = 0;           // of the whole graph (init, eval and saving included)
  int64_t step_nodes = 0;      // of one training step
  int64_t variable_elements = 0;  // each variable once (the eval tower shares them)
  int64_t variable_bytes = 0;
  // Of the step's nodes, each counted once: a loop's body (an LSTM's time
  // steps) once, not per iteration (step_has_loops says there is one).
  double step_flops = 0;
  bool step_has_loops = false;
  // The outputs of the step's nodes here, each counted whole: an upper bound
  // on the step's working memory beside the variables.
  int64_t step_tensor_bytes = 0;
};

// What crosses from one device to another in one step.
struct DeviceLink {
  int from = 0;
  int to = 0;
  int64_t tensors = 0;  // data Send/Recv pairs
  int64_t bytes = 0;
  int64_t controls = 0;  // control edges carried by a dummy Send/Recv
};

struct PlacementPlan {
  std::string placer;  // "simple" or "cost model ..."
  std::vector<DevicePlan> devices;
  std::vector<DeviceLink> links;  // by (from, to)
};

// The nodes of one training step: what the loop's train op and loss need,
// which it fetches every step, and a staged input's stage op, which runs
// beside every step. The gradients' global norm and the training
// metrics are fetched on summary steps only (SummaryHook), so their nodes are
// not counted, unless the train op needs them (clip_global_norm). Counting
// them showed every gradient crossing from a GPU to the CPU "per step" (the
// norm's L2Loss had no GPU kernel then), 12.5 MiB for fashion_cnn, which a
// training step did not do.
std::vector<std::string> TrainingStepRoots(const TrainingGraph& tg);

// REQUIRES: `placed` placed on `devices` with `device_of` (by node id), and
// `costs` built from `placed`. `in_step` by node id (ReverseReachable of the
// step's roots).
PlacementPlan PlanPlacement(const Graph& placed, const std::vector<int>& device_of, const DeviceSet& devices,
                            const CostModel& costs, const std::vector<bool>& in_step);

// The plan as indented lines under "  placement".
void PrintPlacementPlan(const PlacementPlan& plan, const DeviceSet& devices, std::ostream& out);

}  // namespace models
}  // namespace sluice

#endif  // SLUICE_MODELS_PLACEMENT_PLAN_H_
