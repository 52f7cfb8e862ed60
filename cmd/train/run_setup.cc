// Loading an experiment for a run, and its checkpoint entries (run_setup.h).
#include "cmd/train/run_setup.h"

#include <map>

#include "cmd/train/exit_codes.h"
#include "configs/config_errors.h"

namespace sluice {

int LoadExperimentForRun(const TrainerOptions& options, std::ostream& err,
                         std::unique_ptr<config::LoadedExperiment>* loaded) {
  auto loaded_or = config::LoadExperimentFile(options.config_path);
  if (!loaded_or.ok()) {
    err << loaded_or.status().message() << "\n";
    return kExitBadConfig;
  }
  config::Experiment& e = (*loaded_or)->experiment;
  absl::Status s = config::ApplyOverrides(options.overrides, &e, &(*loaded_or)->overrides);
  if (!s.ok()) {
    err << "error: " << s.message() << "\n";
    return kExitBadConfig;
  }
  if (!options.run_dir.empty()) e.set_run_dir(options.run_dir);
  config::ApplyDefaults(&e);
  config::ConfigErrors errors(options.config_path);
  config::Validate(**loaded_or, &errors);
  if (!errors.empty()) {
    for (const std::string& line : errors.lines()) err << line << "\n";
    return kExitBadConfig;
  }
  *loaded = std::move(loaded_or).value();
  return kExitDone;
}

std::vector<checkpoint::SaveableVariable> SaveablesOf(const std::vector<models::VariableSummary>& variables,
                                                      const std::string& int64_variable, std::vector<bool>* model) {
  std::vector<checkpoint::SaveableVariable> out;
  std::map<std::string, size_t> logical_at;
  for (const auto& v : variables) {
    checkpoint::SaveableVariable sv;
    sv.dtype = v.name == int64_variable ? DT_INT64 : DT_FLOAT;
    if (v.num_parts <= 1) {
      sv.node = v.name;
      sv.name = v.name;
      sv.shape = v.shape;
    } else {
      auto [it, fresh] = logical_at.emplace(v.logical, out.size());
      if (!fresh) {
        checkpoint::SaveableVariable& whole = out[it->second];
        if (static_cast<int>(whole.mod_parts.size()) <= v.part) whole.mod_parts.resize(v.part + 1);
        whole.mod_parts[v.part] = v.name;
        continue;
      }
      sv.name = v.logical;
      sv.full_shape = v.logical_shape;
      sv.mod_parts.resize(v.num_parts);
      sv.mod_parts[v.part] = v.name;
    }
    out.push_back(sv);
    if (model != nullptr) model->push_back(!v.slot);
  }
  return out;
}

}  // namespace sluice
