// Evaluation value names (see eval_values.h).
#include "configs/eval_values.h"

#include "absl/strings/str_cat.h"

namespace sluice {
namespace config {

std::string MetricName(const Metric& metric) {
  if (metric.has_top_k_accuracy()) return absl::StrCat("top_", metric.top_k_accuracy().k(), "_accuracy");
  return "accuracy";
}

std::vector<std::string> EvalValueNames(const Experiment& e) {
  std::vector<std::string> names = {"loss"};
  const Model& m = e.model();
  // The graph also leaves perplexity out when a layer adds L2 terms of its
  // kernel (models/training_graph.cc); which layers have one, the model
  // builder knows: the trainer checks the name against the graph's values.
  if (m.loss_size() == 1 && m.loss(0).has_sampled_softmax() &&
      (!m.loss(0).has_weight() || m.loss(0).weight() == 1)) {
    names.push_back("perplexity");
  }
  for (const Metric& metric : m.metric()) names.push_back(MetricName(metric));
  return names;
}

bool HigherIsBetter(const std::string& name) { return name != "loss" && name != "perplexity"; }

}  // namespace config
}  // namespace sluice
