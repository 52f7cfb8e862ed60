// The names an evaluation reports its values by, as the eval line and eval.txt print them
// ("eval at step 3000: loss 0.3412 accuracy 0.8790 ...") and train.best_model.metric names
// them: "loss" first, "perplexity" for a model whose one loss is an unweighted sampled softmax
// (without L2 terms: that the graph checks), then each metric's name.
//
// Thread safety: pure functions.
#ifndef SLUICE_CONFIGS_EVAL_VALUES_H_
#define SLUICE_CONFIGS_EVAL_VALUES_H_

#include <string>
#include <vector>

#include "configs/experiment.pb.h"

namespace sluice {
namespace config {

// "accuracy", "top_5_accuracy".
std::string MetricName(const Metric& metric);

// Every value an evaluation of `e`'s model reports, in the eval line's order
// ("perplexity" also when L2 terms will leave it out).
std::vector<std::string> EvalValueNames(const Experiment& e);

// Whether a higher value of `name` is better: true for the metrics, false
// for "loss" and "perplexity".
bool HigherIsBetter(const std::string& name);

}  // namespace config
}  // namespace sluice

#endif  // SLUICE_CONFIGS_EVAL_VALUES_H_
