// Warm start: see warm_start.h.
#include "checkpoint/warm_start.h"

#include <atomic>

#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "engine/platform/status_macros.h"

namespace sluice {
namespace checkpoint {

absl::Status WarmStart(Session* session, const std::vector<SaveableVariable>& variables,
                       const WarmStartOptions& options) {
  std::string dir = options.from;
  if (options.env->IsDirectory(CheckpointsDir(options.from))) {
    SLUICE_ASSIGN_OR_RETURN(FoundCheckpoint found,
                            FindLatestValidCheckpoint(options.env, options.from, VerifyLevel::kOpen));
    dir = found.dir;
  }
  // Check names and dtypes up front for clear errors.
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> reader, CheckpointReader::Open(dir, options.env));
  std::vector<std::string> names;
  for (const SaveableVariable& v : variables) {
    const std::string own = v.name.empty() ? v.node : v.name;
    auto it = options.name_map.find(own);
    const std::string name = it == options.name_map.end() ? own : it->second;
    const TensorEntry* entry = nullptr;
    for (const TensorEntry& e : reader->manifest().tensors()) {
      if (e.full_name() == name) entry = &e;
    }
    if (entry == nullptr) {
      return absl::NotFoundError(absl::StrCat("warm start: checkpoint ", dir, " has no tensor '", name,
                                              "' for variable '", own, "'"));
    }
    if (entry->dtype() != v.dtype) {
      return absl::InvalidArgumentError(absl::StrCat("warm start: tensor '", name, "' in ", dir, " is ",
                                                     DataTypeString(entry->dtype()), ", variable '", own, "' is ",
                                                     DataTypeString(v.dtype)));
    }
    names.push_back(name);
  }
  static std::atomic<int> counter{0};
  const std::string scope = absl::StrCat("warm_start_", counter++);
  GraphDef graph;
  AddRestoreNodes(scope, variables, names, &graph);
  SLUICE_RETURN_IF_ERROR(session->Extend(graph));
  std::vector<Tensor> unused;
  return session->Run({{scope + "/filename", Tensor::Scalar<tstring>(dir)}}, {}, {scope + "/restore_all"}, &unused);
}

}  // namespace checkpoint
}  // namespace sluice
