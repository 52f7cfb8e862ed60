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
  bool regularized = false;
  for (const Layer& l : m.layer()) regularized |= l.l2_weight() > 0;
  if (m.loss_size() == 1 && m.loss(0).has_sampled_softmax() && (!m.loss(0).has_weight() || m.loss(0).weight() == 1) && !regularized) {
    names.push_back("perplexity");
  }
  for (const Metric& metric : m.metric()) names.push_back(MetricName(metric));
  return names;
}

bool HigherIsBetter(const std::string& name) { return name != "loss" && name != "perplexity"; }

}  // namespace config
}  // namespace sluice
