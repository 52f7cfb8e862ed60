// CheckPlacement: places an experiment's whole training graph on this
// process's devices before any work starts (also at --validate), so a
// placement conflict (a device no process has, colocation or reference edges
// that tie a node to two devices, no kernel on the requested device) is a
// config error at the layer or raw node it came from: "file:line:col: error:
// node 'fc2/kernel': ..." at the `device` field that asked for it (or the
// layer's or node's name when it asked for none).
// Thread safety: a pure function of its arguments.
#ifndef SLUICE_MODELS_PLACEMENT_CHECK_H_
#define SLUICE_MODELS_PLACEMENT_CHECK_H_

#include "configs/config_errors.h"
#include "configs/load.h"
#include "engine/framework/device_set.h"
#include "engine/graph/graph.h"

namespace sluice {
namespace models {

// Places `graph` (the validated training graph; its nodes get assigned
// devices) on `devices`. Conflicts go to `errors`, located in `loaded`;
// returns false when there was one.
bool CheckPlacement(const config::LoadedExperiment& loaded, const DeviceSet& devices, Graph* graph,
                    config::ConfigErrors* errors);

}  // namespace models
}  // namespace sluice

#endif  // SLUICE_MODELS_PLACEMENT_CHECK_H_
