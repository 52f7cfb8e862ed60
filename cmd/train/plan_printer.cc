// The plan `train` prints before it trains, and its memory estimate (see plan_printer.h).
#include "cmd/train/plan_printer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/framework/local_devices.h"
#include "models/model_builder.h"
#include "models/schedule.h"
#include "monitoring/progress.h"

namespace sluice {
namespace {

std::string OptimizerSummary(const config::Optimizer& o) {
  std::string name;
  switch (o.kind_case()) {
    case config::Optimizer::kSgd: name = "sgd"; break;
    case config::Optimizer::kMomentum:
      name = absl::StrCat(o.momentum().nesterov() ? "nesterov momentum " : "momentum ", o.momentum().momentum());
      break;
    case config::Optimizer::kAdagrad: name = "adagrad"; break;
    case config::Optimizer::kRmsprop: name = "rmsprop"; break;
    case config::Optimizer::kAdam: name = "adam"; break;
    default: name = "none";
  }
  std::string schedule = "constant";
  if (o.schedule().has_exponential_decay()) schedule = "exponential decay";
  if (o.schedule().has_piecewise()) schedule = "piecewise constant";
  if (o.schedule().has_warmup_cosine()) schedule = "warmup + cosine";
  return absl::StrCat(name, ", learning rate ", models::BaseLearningRate(o), " (", schedule, ")",
                      o.clip_global_norm() > 0 ? absl::StrCat(", gradients clipped to norm ", o.clip_global_norm()) : "");
}

}  // namespace

PlanMemory EstimatePlanMemory(const config::Experiment& e, const models::TrainingGraph& tg) {
  PlanMemory m;
  double elements = 0;
  for (const auto& v : tg.variables) elements += static_cast<double>(v.shape.num_elements());
  m.weights = 4.0 * elements;
  m.activations = 2.0 * 4.0 * static_cast<double>(tg.activation_elements_per_example) *
                  static_cast<double>(e.input().train().batch_size());
  m.queue = static_cast<double>(tg.train_input.queue_capacity) *
            static_cast<double>(tg.train_input.queue_bytes_per_example);
  return m;
}

bool CheckPlanFitsInMemory(const config::LoadedExperiment& loaded, const PlanMemory& m, config::ConfigErrors* errors) {
  const config::Experiment& e = loaded.experiment;
  const double machine = models::MachineMemoryBytes();
  if (machine <= 0 || m.total() <= machine) return true;
  errors->Add(loaded.Where(e.input().train(), "batch_size"),
              absl::StrCat("the plan's estimated peak memory, ", FormatBytes(m.total()), " (activations ",
                           FormatBytes(m.activations), " at batch_size ", e.input().train().batch_size(),
                           ", variables ", FormatBytes(m.weights), ", input queue ", FormatBytes(m.queue),
                           "), is more than this machine's ", FormatBytes(machine), " of memory"));
  return false;
}

void PrintPlan(const config::LoadedExperiment& loaded, const models::TrainingGraph& tg, const PlanMemory& memory,
               int inter_op, bool shared_pool, std::ostream& out) {
  const config::Experiment& e = loaded.experiment;
  out << "Experiment " << e.name() << " (" << loaded.path << ")\n";
  out << "  run directory  " << e.run_dir() << "\n";
  size_t num_devices = 0;  // CPU devices; others (a GPU) get a line each
  for (const auto& d : DeviceMgr::Local()->devices()) num_devices += d->device_type() == kDeviceCpu ? 1 : 0;
  out << (num_devices > 1 ? "  devices        " : "  device         ") << DeviceMgr::Local()->HostCpu()->name()
      << (num_devices > 1 ? absl::StrCat(" to CPU:", num_devices - 1, ", ", num_devices, " virtual CPUs on") : "")
      << " (" << CountOf(NumSchedulableCpus(), "core", "cores") << ", "
      << (!shared_pool
              ? absl::StrCat(CountOf(inter_op, "inter-op thread", "inter-op threads"), ", ",
                             CountOf(DeviceMgr::Local()->HostCpu()->intra_op_threads(), "intra-op thread", "intra-op threads"),
                             num_devices > 1 ? " per device" : "")
              : absl::StrCat(CountOf(DeviceMgr::Local()->HostCpu()->intra_op_threads(), "thread", "threads"),
                             " for ops and their parallel loops"))
      << ")\n";
  for (const auto& d : DeviceMgr::Local()->devices()) {
    if (d->device_type() != kDeviceCpu) out << "  accelerator    " << d->name() << "\n";
  }
  out << "  variables\n";
  size_t width = 0;
  for (const auto& v : tg.variables) width = std::max(width, v.name.size());
  int64_t trainable = 0, untrained = 0, state = 0;
  for (const auto& v : tg.variables) {
    if (v.slot) {
      state += v.shape.num_elements();
      continue;
    }
    out << "    " << v.name << std::string(width - v.name.size() + 2, ' ') << v.shape.DebugString() << "  "
        << FormatThousands(v.shape.num_elements()) << (v.trainable ? "" : "  (not trained)") << "\n";
    (v.trainable ? trainable : untrained) += v.shape.num_elements();
  }
  out << "    total trainable parameters " << FormatThousands(trainable);
  if (untrained > 0) out << "; not trained " << FormatThousands(untrained);
  out << "; optimizer state " << FormatThousands(state) << "\n";
  const int64_t batch = e.input().train().batch_size();
  // Backward is about twice the forward work.
  const double flops = 3.0 * static_cast<double>(tg.forward_flops_per_example) * static_cast<double>(batch);
  out << "  FLOPs per step " << absl::StrFormat("%.3g", flops) << " (batch " << batch << ", forward "
      << FormatThousands(tg.forward_flops_per_example) << " per example, x3 with gradients"
      << (e.model().node_size() > 0 ? "; raw nodes not counted: the placement's FLOPs/step below counts them" : "")
      << ")\n";
  out << "  estimated peak memory " << FormatBytes(memory.total()) << " (variables " << FormatBytes(memory.weights)
      << ", activations " << FormatBytes(memory.activations) << ", input queue " << FormatBytes(memory.queue) << ")\n";
  out << "  input train    " << tg.train_input.description << "\n";
  if (tg.has_eval) out << "  input eval     " << tg.eval_input.description << "\n";
  out << "  optimizer      " << OptimizerSummary(e.optimizer()) << "\n";
  out << "  schedule       " << e.train().steps() << " steps"
      << (e.train().eval_every_steps() > 0 ? absl::StrCat(", evaluate every ", e.train().eval_every_steps()) : "")
      << (e.checkpoint().every_steps() > 0 ? absl::StrCat(", checkpoint every ", e.checkpoint().every_steps(),
                                                          " (keep ", e.checkpoint().keep(), ")")
                                           : "")
      << "\n";
  out.flush();
}

}  // namespace sluice
