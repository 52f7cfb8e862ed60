// Warm start: see warm_start.h.
#include "checkpoint/warm_start.h"

#include <atomic>

#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/tensor_bundle_format.h"
#include "checkpoint/tensor_bundle_reader.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/platform/status_macros.h"

namespace sluice {
namespace checkpoint {
namespace {

std::string OwnName(const SaveableVariable& v) { return v.name.empty() ? v.node : v.name; }

std::string CheckpointName(const SaveableVariable& v, const WarmStartOptions& options) {
  auto it = options.name_map.find(OwnName(v));
  return it == options.name_map.end() ? OwnName(v) : it->second;
}

// Warm start from a TensorFlow checkpoint prefix: names, dtypes and slices
// checked up front with a BundleReader, then one RestoreV2 node feeding an
// Assign per variable (which checks shapes).
absl::Status WarmStartFromBundle(Session* session, const std::vector<SaveableVariable>& variables,
                                 const WarmStartOptions& options) {
  const std::string& prefix = options.from;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<BundleReader> reader, BundleReader::Open(prefix, options.env));
  std::vector<std::string> names;
  std::vector<DataType> dtypes;
  for (const SaveableVariable& v : variables) {
    const std::string name = CheckpointName(v, options);
    const BundleEntryProto* e = reader->Find(name);
    if (e == nullptr) {
      return absl::NotFoundError(absl::StrCat("warm start: TensorFlow checkpoint ", prefix, " has no tensor '", name,
                                              "' for variable '", OwnName(v), "'"));
    }
    if (!v.mod_parts.empty()) {
      return absl::UnimplementedError(absl::StrCat("warm start: variable '", OwnName(v), "' is partitioned; warm start "
                                                   "it from a Sluice checkpoint (ckpt convert turns a TensorFlow "
                                                   "checkpoint into one), not from a TensorFlow checkpoint prefix"));
    }
    if (!v.slice_spec.empty() || e->slices_size() > 0) {
      return absl::UnimplementedError(absl::StrCat("warm start: variable '", OwnName(v), "' from TensorFlow checkpoint ",
                                                   prefix, ": partitioned (sliced) tensors in a TensorFlow checkpoint "
                                                   "are not supported"));
    }
    if (e->dtype() != v.dtype) {
      return absl::InvalidArgumentError(absl::StrCat("warm start: tensor '", name, "' in ", prefix, " is ",
                                                     DataTypeString(e->dtype()), ", variable '", OwnName(v), "' is ",
                                                     DataTypeString(v.dtype)));
    }
    names.push_back(name);
    dtypes.push_back(v.dtype);
  }
  if (variables.empty()) return absl::OkStatus();
  static std::atomic<int> counter{0};
  const std::string scope = absl::StrCat("warm_start_tf_", counter++);
  GraphDefBuilder b;
  const std::string p = b.Placeholder(scope + "/prefix", DT_STRING);
  Tensor names_t(DT_STRING, TensorShape({static_cast<int64_t>(names.size())}));
  Tensor specs_t(DT_STRING, TensorShape({static_cast<int64_t>(names.size())}));
  for (size_t i = 0; i < names.size(); ++i) names_t.data<tstring>()[i] = names[i];
  const std::string restore =
      b.Node(scope + "/restore", "RestoreV2",
             {p, b.Const(scope + "/tensor_names", names_t), b.Const(scope + "/shape_and_slices", specs_t)},
             {{"dtypes", MakeAttr(dtypes)}});
  std::vector<std::string> assigns;
  for (size_t i = 0; i < variables.size(); ++i) {
    assigns.push_back(b.Assign(absl::StrCat(scope, "/assign_", i), variables[i].node, absl::StrCat(restore, ":", i),
                               variables[i].dtype));
  }
  b.NoOp(scope + "/restore_all", assigns);
  SLUICE_RETURN_IF_ERROR(session->Extend(b.graph()));
  std::vector<Tensor> unused;
  absl::Status s =
      session->Run({{scope + "/prefix", Tensor::Scalar<tstring>(prefix)}}, {}, {scope + "/restore_all"}, &unused);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("warm start from TensorFlow checkpoint ", prefix, ": ", s.message()));
  return s;
}

}  // namespace

absl::Status WarmStart(Session* session, const std::vector<SaveableVariable>& variables,
                       const WarmStartOptions& options) {
  if (IsTensorBundle(options.env, options.from)) return WarmStartFromBundle(session, variables, options);
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
