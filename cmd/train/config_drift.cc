// ConfigForDriftCheck (see config_drift.h).
#include "cmd/train/config_drift.h"

#include "configs/experiment.pb.h"
#include "google/protobuf/text_format.h"

namespace sluice {

std::string ConfigForDriftCheck(const std::string& config_text) {
  config::Experiment e;
  google::protobuf::TextFormat::Parser parser;
  parser.AllowPartialMessage(true);
  if (!parser.ParseFromString(config_text, &e)) return config_text;
  if (!e.has_cluster()) return config_text;
  config::Cluster* cluster = e.mutable_cluster();
  for (config::Cluster::Job& job : *cluster->mutable_job()) {
    for (std::string& address : *job.mutable_task()) address = "<address>";
  }
  cluster->clear_tls();
  cluster->clear_start_timeout_secs();
  if (cluster->ByteSizeLong() == 0) e.clear_cluster();
  std::string out;
  google::protobuf::TextFormat::PrintToString(e, &out);
  return out;
}

}  // namespace sluice
