// The plan `train` prints before it trains (the experiment, devices and
// threads, variables, FLOPs, the memory estimate, inputs, optimizer and
// schedule), and the memory estimate's check against this machine.
// Thread safety: pure functions but for the output stream.
#ifndef SLUICE_CMD_TRAIN_PLAN_PRINTER_H_
#define SLUICE_CMD_TRAIN_PLAN_PRINTER_H_

#include <ostream>

#include "configs/config_errors.h"
#include "configs/load.h"
#include "models/training_graph.h"

namespace sluice {

// The plan's memory estimate, in bytes.
struct PlanMemory {
  double weights = 0;      // variables and optimizer state
  double activations = 0;  // activations and their gradients, kept for the backward pass
  double queue = 0;        // the training input's queue, full
  double total() const { return weights + activations + queue; }
};

PlanMemory EstimatePlanMemory(const config::Experiment& e, const models::TrainingGraph& tg);

// A plan whose estimate exceeds this machine's memory would be killed by the
// kernel minutes later (or abort on bad_alloc): a config error, located at
// the training batch size, which is what usually makes it so. False then.
bool CheckPlanFitsInMemory(const config::LoadedExperiment& loaded, const PlanMemory& m, config::ConfigErrors* errors);

// `inter_op`: inter-op threads; `shared_pool`: the executor's nodes run on the
// intra-op threads (SessionOptions::ops_on_intra_op_pool).
void PrintPlan(const config::LoadedExperiment& loaded, const models::TrainingGraph& tg, const PlanMemory& memory,
               int inter_op, bool shared_pool, std::ostream& out);

}  // namespace sluice

#endif  // SLUICE_CMD_TRAIN_PLAN_PRINTER_H_
