// ConfigForDriftCheck: the resolved config as `train` compares it with the
// config.pbtxt of the run directory it resumes.
// Thread safety: a pure function.
#ifndef SLUICE_CMD_TRAIN_CONFIG_DRIFT_H_
#define SLUICE_CMD_TRAIN_CONFIG_DRIFT_H_

#include <string>

namespace sluice {

// `config_text` (an Experiment in text format) without what may change
// between a run and its restart while the run stays the same: the cluster's
// task addresses (a scheduler places the tasks anew; how many tasks each job
// has still counts), its TLS files and its start timeout. Text that does not
// parse as an Experiment (a copy written by another version) is returned as
// it is.
std::string ConfigForDriftCheck(const std::string& config_text);

}  // namespace sluice

#endif  // SLUICE_CMD_TRAIN_CONFIG_DRIFT_H_
