// BatchStager (see batch_stager.h).
#include "models/training/batch_stager.h"

#include <utility>
#include <vector>

#include "engine/platform/logging.h"

namespace sluice {
namespace training {

BatchStager::BatchStager(Session* session, std::string stage_op)
    : session_(session), stage_op_(std::move(stage_op)) {}

BatchStager::~BatchStager() {
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &BatchStager::Idle));
    exiting_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

absl::Status BatchStager::StageNow() {
  std::vector<Tensor> none;
  return session_->Run({}, {}, {stage_op_}, &none);
}

void BatchStager::Start() {
  absl::MutexLock lock(&mu_);
  CHECK(!requested_) << "BatchStager::Start with a Run in flight";
  requested_ = true;
  result_ = absl::OkStatus();
  if (!thread_.joinable()) thread_ = std::thread([this] { Serve(); });
}

absl::Status BatchStager::Wait() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &BatchStager::Idle));
  return std::exchange(result_, absl::OkStatus());
}

void BatchStager::Serve() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      // A Run asked for (requested_ and no result yet) or the end.
      mu_.Await(absl::Condition(this, &BatchStager::HasWork));
      if (exiting_) return;
    }
    absl::Status s = StageNow();
    absl::MutexLock lock(&mu_);
    result_ = std::move(s);
    requested_ = false;
  }
}

}  // namespace training
}  // namespace sluice
