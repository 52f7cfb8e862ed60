// A frozen inference graph (inference_graph.h) as a TensorFlow SavedModel: the format
// tf.saved_model.load, TensorFlow Serving and saved_model_cli read. One MetaGraphDef tagged
// "serve" holds the graph and one signature, "serving_default" (method
// tensorflow/serving/predict): its inputs are the feature Placeholders, keyed by their names
// ("image"), its outputs the exported tensors, keyed by their names less "outputs/" with '/'
// as '_' ("logits", "logits_probabilities", "logits_classes"). The variables are constants
// already, so variables/ is empty; a text input's vocabulary goes to assets/vocab.txt (a word a
// line, a word's id its line's index), which the signature does not reference.
//
// Thread safety: pure functions; WriteSavedModel writes only `dir` and its own temporary
// sibling.
#ifndef SLUICE_MODELS_SAVED_MODEL_H_
#define SLUICE_MODELS_SAVED_MODEL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/framework/meta_graph.pb.h"
#include "engine/platform/env.h"
#include "models/inference_graph.h"

namespace sluice {
namespace models {

inline constexpr char kServeTag[] = "serve";
inline constexpr char kServingSignature[] = "serving_default";
inline constexpr char kPredictMethod[] = "tensorflow/serving/predict";
inline constexpr char kSavedModelFile[] = "saved_model.pb";

// "outputs/logits/classes" -> "logits_classes".
std::string SignatureKey(const std::string& node);

// The SavedModel of `ig`, whose variables must be frozen. InvalidArgument
// when two endpoints would share a signature key.
absl::StatusOr<SavedModel> BuildSavedModel(const InferenceGraph& ig);

// Writes the directory `dir` (a trailing '/' is dropped; missing parents are
// created): saved_model.pb (`model` serialized), an empty variables/, and
// assets/vocab.txt when `vocabulary` is not empty. It is written under
// `dir`.tmp-<pid>, synced, and renamed into place, so after a crash `dir` is
// whole, or as it was (absent, or the empty directory it was), and the
// temporary directory may be left. FailedPrecondition when `dir` exists and
// is not an empty directory (an export never replaces one: TensorFlow Serving
// reads a model's versions as numbered directories, so export to the next
// one), or when the temporary name is taken.
absl::Status WriteSavedModel(Env* env, const std::string& dir, const SavedModel& model,
                             const std::vector<std::string>& vocabulary);

}  // namespace models
}  // namespace sluice

#endif  // SLUICE_MODELS_SAVED_MODEL_H_
