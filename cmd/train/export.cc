// `train CONFIG --export PATH` (export.h).
#include "cmd/train/export.h"

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "checkpoint/saver.h"
#include "cmd/train/exit_codes.h"
#include "cmd/train/line_diff.h"
#include "cmd/train/run_setup.h"
#include "configs/config_errors.h"
#include "engine/framework/device_set.h"
#include "engine/platform/env.h"
#include "engine/runtime/session.h"
#include "google/protobuf/text_format.h"
#include "models/inference_graph.h"
#include "models/saved_model.h"

namespace sluice {
namespace {

// A batch of one: unknown dims become 1.
absl::StatusOr<Tensor> ZerosFor(const models::InferenceEndpoint& input) {
  if (!input.shape.rank_known()) {
    return absl::InvalidArgumentError(absl::StrCat("input '", input.node, "' has an unknown rank"));
  }
  std::vector<int64_t> dims;
  for (int64_t d : input.shape.dims()) dims.push_back(d < 0 ? 1 : d);
  auto shape = TensorShape::Build(dims);
  if (!shape.ok()) return shape.status();
  Tensor t(input.dtype, *shape);  // strings start empty
  if (input.dtype != DT_STRING && t.TotalBytes() > 0) std::memset(t.raw_data(), 0, t.TotalBytes());
  return t;
}

// The parts of the experiment that decide the exported graph: the model, and
// how the input scales images.
std::string ModelText(const config::Experiment& e) {
  config::Experiment part;
  *part.mutable_model() = e.model();
  part.mutable_input()->mutable_train()->set_scale_to_unit(e.input().train().scale_to_unit());
  std::string text;
  google::protobuf::TextFormat::PrintToString(part, &text);
  return text;
}

// A checkpoint restores into any model with the same variables; the export
// must be of the model that trained them. The run directory's config.pbtxt
// (when there is one) is that model: a different model section is an error
// unless `allow_drift`.
int CheckModelMatchesRun(const config::Experiment& e, bool allow_drift, std::ostream& err) {
  const std::string path = JoinPath(e.run_dir(), "config.pbtxt");
  auto previous = ReadRegularFile(Env::Default(), path, 64 << 20);
  config::Experiment trained;
  if (!previous.ok() || !google::protobuf::TextFormat::ParseFromString(*previous, &trained)) return kExitDone;
  const std::string then = ModelText(trained), now = ModelText(e);
  if (then == now || allow_drift) return kExitDone;
  err << path << ": error: the run was trained with another model; export with its config (or pass --allow-drift "
      << "to export this one with its variables). Differences:\n"
      << LineDiff(then, now);
  return kExitBadConfig;
}

// The checkpoint --export_checkpoint names: "best" (the state file's best, kept by
// train.best_model) or a step the state file retains. InvalidArgument for
// anything else; NotFound when the run has no such checkpoint.
absl::StatusOr<checkpoint::FoundCheckpoint> ChosenCheckpoint(const std::string& which, const checkpoint::Saver& saver,
                                                             const std::string& run_dir) {
  const std::string ckpts = checkpoint::CheckpointsDir(run_dir);
  if (which == "best") {
    if (!saver.best().has_value()) {
      return absl::NotFoundError(absl::StrCat("the run in ", run_dir, " has no best checkpoint (",
                                              checkpoint::kStateFileName, " records one when the experiment sets "
                                              "train.best_model)"));
    }
    return checkpoint::FoundCheckpoint{JoinPath(ckpts, saver.best()->dir()), saver.best()->step()};
  }
  int64_t step = -1;
  if (!absl::SimpleAtoi(which, &step) || step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--export_checkpoint takes latest, best or a step number, got '", which, "'"));
  }
  auto state = checkpoint::ReadCheckpointState(Env::Default(), ckpts);
  std::vector<std::string> retained;
  if (state.ok()) {
    for (const checkpoint::CheckpointRecord& r : state->checkpoints()) {
      if (r.step() == step) return checkpoint::FoundCheckpoint{JoinPath(ckpts, r.dir()), step};
      retained.push_back(absl::StrCat(r.step()));
    }
  }
  return absl::NotFoundError(absl::StrCat("the run in ", run_dir, " retains no checkpoint of step ", step,
                                          retained.empty() ? "" : absl::StrCat(" (it retains ",
                                                                                absl::StrJoin(retained, ", "), ")")));
}

}  // namespace

int RunExport(const TrainerOptions& options, std::ostream& out, std::ostream& err) {
  std::unique_ptr<config::LoadedExperiment> loaded;
  int code = LoadExperimentForRun(options, err, &loaded);
  if (code != kExitDone) return code;
  const config::Experiment& e = loaded->experiment;
  code = CheckModelMatchesRun(e, options.allow_drift, err);
  if (code != kExitDone) return code;
  // The export's few runs need no GPU, and its values are the same on any device.
  absl::Status s = SetLocalDeviceTypeEnabled(kDeviceGpu, false);
  if (!s.ok()) {
    err << "error: " << s.message() << "\n";
    return kExitPermanentError;
  }
  config::ConfigErrors errors(options.config_path);
  models::InferenceOptions io;
  io.outputs = options.export_outputs;
  models::InferenceGraph ig;
  s = models::BuildInferenceGraph(*loaded, io, &ig, &errors);
  if (!errors.empty()) {
    for (const std::string& line : errors.lines()) err << line << "\n";
    return kExitBadConfig;
  }
  if (absl::IsInvalidArgument(s)) {
    err << "error: " << s.message() << "\n";
    return kExitBadConfig;
  }
  if (!s.ok()) {
    err << "error: building the inference graph: " << s.message() << "\n";
    return kExitPermanentError;
  }

  // The variables' values: the trainer's restore of the newest valid checkpoint.
  std::map<std::string, Tensor> values;
  std::string restored_dir;
  int64_t restored_step = 0;
  {
    auto session = NewSession();
    if (session.ok()) s = (*session)->Create(ig.graph);
    if (!session.ok() || !s.ok()) {
      err << "error: the inference graph: " << (session.ok() ? s : session.status()).message() << "\n";
      return kExitPermanentError;
    }
    checkpoint::SaverOptions so;
    so.run_dir = e.run_dir();
    so.background = false;
    std::vector<checkpoint::SaveableVariable> saveables = SaveablesOf(ig.variables, "", nullptr);
    if (saveables.empty()) {
      err << "error: the exported outputs read no variable; there is nothing of the run to export\n";
      return kExitBadConfig;
    }
    auto saver = checkpoint::Saver::Create(so, saveables);
    if (saver.ok()) s = (*saver)->Extend(session->get());
    if (!saver.ok() || !s.ok()) {
      err << "error: restore nodes: " << (saver.ok() ? s : saver.status()).message() << "\n";
      return kExitPermanentError;
    }
    absl::StatusOr<int64_t> step;
    if (options.export_checkpoint.empty() || options.export_checkpoint == "latest") {
      step = (*saver)->RestoreLatest(session->get(), checkpoint::VerifyLevel::kFull, &restored_dir);
    } else {
      auto chosen = ChosenCheckpoint(options.export_checkpoint, **saver, e.run_dir());
      if (!chosen.ok()) {
        err << "error: " << chosen.status().message() << "\n";
        return absl::IsInvalidArgument(chosen.status()) ? kExitBadConfig : kExitPermanentError;
      }
      restored_dir = chosen->dir;
      step = chosen->step;
      s = (*saver)->RestoreVerified(session->get(), restored_dir, checkpoint::VerifyLevel::kFull);
      if (!s.ok()) {
        err << "error: " << s.message() << "\n";
        return absl::IsNotFound(s) ? kExitPermanentError : ExitCodeForStatus(s);
      }
    }
    if (absl::IsNotFound(step.status())) {
      err << "error: no checkpoint to export in " << checkpoint::CheckpointsDir(e.run_dir())
          << "; train first, or name the run with --run_dir\n";
      return kExitPermanentError;
    }
    if (!step.ok()) {
      err << "error: " << step.status().message() << "\n";
      return ExitCodeForStatus(step.status());
    }
    restored_step = *step;
    std::vector<std::string> names;
    for (const auto& v : ig.variables) names.push_back(v.name);
    std::vector<Tensor> fetched;
    s = (*session)->Run({}, names, {}, &fetched);
    if (!s.ok()) {
      err << "error: reading the restored variables: " << s.message() << "\n";
      return kExitPermanentError;
    }
    for (size_t i = 0; i < names.size(); ++i) values[names[i]] = fetched[i];
  }
  s = models::FreezeVariables(values, &ig.graph);
  if (!s.ok()) {
    err << "error: freezing the variables: " << s.message() << "\n";
    return kExitPermanentError;
  }

  // The frozen graph runs, or it is not written.
  {
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (const auto& input : ig.inputs) {
      auto zeros = ZerosFor(input);
      if (!zeros.ok()) {
        err << "error: " << zeros.status().message() << "\n";
        return kExitPermanentError;
      }
      feeds.push_back({input.node, *std::move(zeros)});
    }
    std::vector<std::string> fetches;
    for (const auto& output : ig.outputs) fetches.push_back(output.node);
    auto session = NewSession();
    if (session.ok()) s = (*session)->Create(ig.graph);
    std::vector<Tensor> fetched;
    if (session.ok() && s.ok()) s = (*session)->Run(feeds, fetches, {}, &fetched);
    if (!session.ok() || !s.ok()) {
      err << "error: the frozen graph does not run on a batch of zeros, so it was not written: "
          << (session.ok() ? s : session.status()).message() << "\n";
      return kExitPermanentError;
    }
  }

  // .pbtxt: a text GraphDef; .pb: a binary one; anything else: a SavedModel directory.
  const bool text = absl::EndsWithIgnoreCase(options.export_path, ".pbtxt");
  const bool saved_model = !text && !absl::EndsWithIgnoreCase(options.export_path, ".pb");
  std::string vocabulary_path;
  uint64_t written_bytes = 0;
  if (saved_model) {
    auto model = models::BuildSavedModel(ig);
    if (model.ok()) {
      written_bytes = model->ByteSizeLong();
      s = models::WriteSavedModel(Env::Default(), options.export_path, *model, ig.vocabulary);
    }
    if (!model.ok() || !s.ok()) {
      err << "error: writing the SavedModel " << options.export_path << ": "
          << (model.ok() ? s : model.status()).message()
          << (absl::IsFailedPrecondition(s) ? " (a PATH ending in .pb or .pbtxt writes a GraphDef file instead)" : "")
          << "\n";
      return kExitPermanentError;
    }
    vocabulary_path = JoinPath(options.export_path, "assets/vocab.txt");
  } else {
    std::string bytes;
    if (text) {
      google::protobuf::TextFormat::PrintToString(ig.graph, &bytes);
    } else if (ig.graph.ByteSizeLong() >= (size_t{1} << 31) || !ig.graph.SerializeToString(&bytes)) {
      err << "error: the frozen graph is over protobuf's 2 GiB limit (" << ig.graph.ByteSizeLong()
          << " bytes); export fewer outputs with --export_outputs\n";
      return kExitPermanentError;
    }
    // A text input's ids mean words: the vocabulary goes beside the graph
    // (first, so that a written graph always has it).
    vocabulary_path = absl::StrCat(options.export_path, ".vocab.txt");
    if (!ig.vocabulary.empty()) {
      s = WriteFileAtomically(Env::Default(), vocabulary_path, models::VocabularyFileText(ig.vocabulary));
      if (!s.ok()) {
        err << "error: writing " << vocabulary_path << ": " << s.message() << "\n";
        return kExitPermanentError;
      }
    }
    s = WriteFileAtomically(Env::Default(), options.export_path, bytes);
    if (!s.ok()) {
      err << "error: writing " << options.export_path << ": " << s.message() << "\n";
      return kExitPermanentError;
    }
    written_bytes = bytes.size();
  }
  int64_t weights = 0;
  for (const auto& [name, t] : values) weights += t.NumElements();
  out << "exported step " << restored_step << " (" << restored_dir << ") to " << options.export_path
      << (saved_model ? absl::StrCat(" (a SavedModel: tag '", models::kServeTag, "', signature '",
                                     models::kServingSignature, "')")
                      : "")
      << ": " << ig.graph.node_size() << " nodes, " << weights << " weights, "
      << absl::StrFormat("%.1f MB", static_cast<double>(written_bytes) / 1e6) << (text ? " of text" : "") << "\n";
  // With a SavedModel, each tensor's key in the signature too.
  auto key = [saved_model](const models::InferenceEndpoint& e) {
    return saved_model ? absl::StrCat("  key '", models::SignatureKey(e.node), "'") : std::string();
  };
  for (const auto& input : ig.inputs) {
    out << "  input   " << input.node << ":0  " << DataTypeString(input.dtype) << " " << input.shape.DebugString()
        << key(input) << "  (" << input.what << ")\n";
  }
  for (const auto& output : ig.outputs) {
    out << "  output  " << output.node << ":0  " << DataTypeString(output.dtype) << " " << output.shape.DebugString()
        << key(output) << "  (" << output.what << ")\n";
  }
  if (!ig.vocabulary.empty()) {
    out << "  vocabulary  " << vocabulary_path << "  (" << ig.vocabulary.size()
        << " words, a line each: a word's id is its line's index from 0)\n";
  }
  return kExitDone;
}

}  // namespace sluice
