// SavedModel of a frozen inference graph (see saved_model.h).
#include "models/saved_model.h"

#include <unistd.h>

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "engine/platform/logging.h"
#include "engine/platform/status_macros.h"

namespace sluice {
namespace models {
namespace {

TensorInfo InfoOf(const InferenceEndpoint& e) {
  TensorInfo info;
  info.set_name(absl::StrCat(e.node, ":0"));
  info.set_dtype(e.dtype);
  e.shape.AsProto(info.mutable_tensor_shape());
  return info;
}

}  // namespace

std::string SignatureKey(const std::string& node) {
  absl::string_view name = node;
  absl::ConsumePrefix(&name, "outputs/");
  return absl::StrReplaceAll(name, {{"/", "_"}});
}

absl::StatusOr<SavedModel> BuildSavedModel(const InferenceGraph& ig) {
  for (const NodeDef& n : ig.graph.node()) {
    if (n.op() == "VariableV2") {
      return absl::InvalidArgumentError(absl::StrCat("variable '", n.name(), "' is not frozen"));
    }
  }
  SavedModel model;
  model.set_saved_model_schema_version(1);
  MetaGraphDef* meta = model.add_meta_graphs();
  meta->mutable_meta_info_def()->add_tags(kServeTag);
  *meta->mutable_graph_def() = ig.graph;
  SignatureDef& signature = (*meta->mutable_signature_def())[kServingSignature];
  signature.set_method_name(kPredictMethod);
  std::set<std::string> keys;
  for (const InferenceEndpoint& input : ig.inputs) {
    const std::string key = SignatureKey(input.node);
    if (!keys.insert(key).second) {
      return absl::InvalidArgumentError(absl::StrCat("two inputs of the signature would be '", key, "'"));
    }
    (*signature.mutable_inputs())[key] = InfoOf(input);
  }
  keys.clear();
  for (const InferenceEndpoint& output : ig.outputs) {
    const std::string key = SignatureKey(output.node);
    if (!keys.insert(key).second) {
      return absl::InvalidArgumentError(absl::StrCat("two outputs of the signature would be '", key,
                                                     "' (an output's name with '/' as '_')"));
    }
    (*signature.mutable_outputs())[key] = InfoOf(output);
  }
  return model;
}

absl::Status WriteSavedModel(Env* env, const std::string& path, const SavedModel& model,
                             const std::vector<std::string>& vocabulary) {
  std::string dir = path;  // "model/" names "model"
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (env->FileExists(dir).ok()) {
    std::string problem = "is not a directory";
    if (env->IsDirectory(dir)) {
      auto children = env->GetChildren(dir);
      problem = !children.ok() ? absl::StrCat("cannot be listed (", children.status().message(), ")")
                : children->empty() ? ""
                                    : "is not empty";
    }
    if (!problem.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(dir, " exists and ", problem, ": an export never replaces one; export to a new directory "
                       "(TensorFlow Serving reads a model's versions as numbered directories: model/1, model/2, ...)"));
    }
  }
  std::string bytes;
  if (model.ByteSizeLong() >= (size_t{1} << 31) || !model.SerializeToString(&bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat("the SavedModel is over protobuf's 2 GiB limit (",
                                                     model.ByteSizeLong(),
                                                     " bytes); export fewer outputs with --export_outputs"));
  }
  // This process's own name: another export to `dir` at the same time writes its own, and
  // nothing of the user's is deleted. (A crashed export leaves its directory behind.)
  const std::string tmp = absl::StrCat(dir, ".tmp-", ::getpid());
  if (env->FileExists(tmp).ok()) {
    return absl::FailedPreconditionError(absl::StrCat(tmp, " exists: remove it (a crashed export's?) and export again"));
  }
  absl::Status s = env->CreateDirs(JoinPath(tmp, "variables"));
  if (s.ok()) s = WriteStringToFile(env, JoinPath(tmp, kSavedModelFile), bytes);
  if (s.ok() && !vocabulary.empty()) {
    s = env->CreateDirs(JoinPath(tmp, "assets"));
    if (s.ok()) {
      s = WriteStringToFile(env, JoinPath(tmp, "assets/vocab.txt"), VocabularyFileText(vocabulary));
    }
  }
  if (s.ok()) s = SyncTree(env, tmp);
  if (s.ok()) s = env->RenameFile(tmp, dir);
  if (!s.ok()) {
    env->DeleteRecursively(tmp).IgnoreError();
    return s;
  }
  // Written whole; only the rename's durability is in question now.
  if (absl::Status synced = env->SyncDir(Dirname(dir)); !synced.ok()) {
    LOG(WARNING) << "the SavedModel " << dir << " is written, but its directory entry may not be durable yet: "
                 << synced.message();
  }
  return absl::OkStatus();
}

}  // namespace models
}  // namespace sluice
