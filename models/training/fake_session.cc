// FakeSession (see fake_session.h).
#include "models/training/fake_session.h"

#include <algorithm>

namespace sluice {
namespace training {

absl::Status FakeSession::Create(const GraphDef& graph) {
  absl::MutexLock l(&mu_);
  if (graph_.node_size() > 0) return absl::FailedPreconditionError("the session already has a graph");
  graph_ = graph;
  return absl::OkStatus();
}

absl::Status FakeSession::Extend(const GraphDef& graph) {
  absl::MutexLock l(&mu_);
  if (!extend_status_.ok()) return extend_status_;
  for (const NodeDef& n : graph.node()) *graph_.add_node() = n;
  return absl::OkStatus();
}

absl::Status FakeSession::Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                              const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                              std::vector<Tensor>* outputs, RunMetadata* metadata) {
  Call call{options, feeds, fetches, targets};
  Handler handler;
  std::vector<Tensor> values;
  {
    absl::MutexLock l(&mu_);
    if (closed_) return absl::CancelledError("the session is closed");
    calls_.push_back(call);
    handler = handler_;
    for (const std::string& f : fetches) {
      auto it = values_.find(f);
      values.push_back(it != values_.end() ? it->second : Tensor::Scalar<float>(0.0f));
    }
  }
  outputs->clear();
  if (handler) return handler(call, outputs, metadata);
  *outputs = std::move(values);
  return absl::OkStatus();
}

absl::Status FakeSession::Close() {
  absl::MutexLock l(&mu_);
  closed_ = true;
  return absl::OkStatus();
}

void FakeSession::SetValue(const std::string& fetch, const Tensor& value) {
  absl::MutexLock l(&mu_);
  values_[fetch] = value;
}

void FakeSession::SetHandler(Handler handler) {
  absl::MutexLock l(&mu_);
  handler_ = std::move(handler);
}

void FakeSession::SetExtendStatus(absl::Status s) {
  absl::MutexLock l(&mu_);
  extend_status_ = std::move(s);
}

std::vector<FakeSession::Call> FakeSession::calls() const {
  absl::MutexLock l(&mu_);
  return calls_;
}

std::vector<FakeSession::Call> FakeSession::CallsWithTarget(const std::string& target) const {
  absl::MutexLock l(&mu_);
  std::vector<Call> out;
  for (const Call& c : calls_) {
    if (std::find(c.targets.begin(), c.targets.end(), target) != c.targets.end()) out.push_back(c);
  }
  return out;
}

GraphDef FakeSession::graph() const {
  absl::MutexLock l(&mu_);
  return graph_;
}

}  // namespace training
}  // namespace sluice
