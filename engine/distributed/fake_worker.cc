// A recording, canned-answer WorkerInterface for transport tests (see
// fake_worker.h).
#include "engine/distributed/fake_worker.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace sluice {
namespace distributed {

// A kPendingKey RecvTensor: answered once, by its cancellation or the
// destructor, whichever comes first.
struct FakeWorker::Pending {
  absl::Mutex mu;
  StatusCallback done ABSL_GUARDED_BY(mu);
  CallCancellation* cancel = nullptr;
  int64_t token = -1;

  // The callback, or null when the call was answered before.
  StatusCallback Take() {
    absl::MutexLock lock(&mu);
    StatusCallback d = std::move(done);
    done = nullptr;
    return d;
  }
};

FakeWorker::~FakeWorker() {
  ReleaseHeld(absl::CancelledError("the fake worker is destroyed"));
  std::vector<std::shared_ptr<Pending>> pending;
  {
    absl::MutexLock lock(&mu_);
    pending.swap(pending_);
  }
  for (auto& p : pending) {
    StatusCallback done = p->Take();
    if (done == nullptr) continue;  // answered: its CallCancellation may be gone
    if (p->cancel != nullptr) p->cancel->Deregister(p->token);
    done(absl::CancelledError("the fake worker is destroyed"));
  }
}

void FakeWorker::SetGetStatusResponse(const GetStatusResponse& response) {
  absl::MutexLock lock(&mu_);
  get_status_response_ = response;
}

void FakeWorker::SetRegisterGraphResponse(const RegisterGraphResponse& response) {
  absl::MutexLock lock(&mu_);
  register_graph_response_ = response;
}

void FakeWorker::SetRunGraphResponse(const RunGraphResponse& response) {
  absl::MutexLock lock(&mu_);
  run_graph_response_ = response;
}

void FakeWorker::SetTensor(const std::string& key, const RecvTensorResult& result) {
  absl::MutexLock lock(&mu_);
  tensors_[key] = result;
}

void FakeWorker::SetError(const std::string& method, absl::Status status) {
  absl::MutexLock lock(&mu_);
  errors_[method] = std::move(status);
}

int FakeWorker::calls(const std::string& method) const {
  absl::MutexLock lock(&mu_);
  auto it = calls_.find(method);
  return it == calls_.end() ? 0 : it->second;
}

bool FakeWorker::LastRequest(const std::string& method, google::protobuf::Message* request) const {
  absl::MutexLock lock(&mu_);
  auto it = last_request_.find(method);
  return it != last_request_.end() && request->ParseFromString(it->second);
}

bool FakeWorker::WaitForPending(int n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return num_pending_ >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
}

bool FakeWorker::WaitForCancelled(int n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return num_cancelled_ >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
}

void FakeWorker::ReleaseHeld(const absl::Status& status, const RecvTensorResult& result) {
  std::vector<Held> held;
  GetStatusResponse status_response;
  {
    absl::MutexLock lock(&mu_);
    held.swap(held_);
    num_pending_ -= static_cast<int>(held.size());
    status_response = get_status_response_;
  }
  for (Held& h : held) {
    if (status.ok() && h.recv_result != nullptr) *h.recv_result = result;
    if (status.ok() && h.status_response != nullptr) *h.status_response = status_response;
    h.done(status);
  }
}

absl::Status FakeWorker::Record(const std::string& method, const google::protobuf::Message& request) {
  absl::MutexLock lock(&mu_);
  ++calls_[method];
  last_request_[method] = request.SerializeAsString();
  auto it = errors_.find(method);
  return it == errors_.end() ? absl::OkStatus() : it->second;
}

void FakeWorker::GetStatusAsync(const GetStatusRequest* request, GetStatusResponse* response, StatusCallback done) {
  absl::Status s = Record("GetStatus", *request);
  if (s.ok() && hold_get_status) {
    absl::MutexLock lock(&mu_);
    held_.push_back(Held{nullptr, response, std::move(done)});
    ++num_pending_;
    return;
  }
  if (s.ok()) {
    absl::MutexLock lock(&mu_);
    *response = get_status_response_;
  }
  done(s);
}

void FakeWorker::RegisterGraphAsync(const RegisterGraphRequest* request, RegisterGraphResponse* response,
                                    StatusCallback done) {
  absl::Status s = Record("RegisterGraph", *request);
  if (s.ok()) {
    absl::MutexLock lock(&mu_);
    *response = register_graph_response_;
  }
  done(s);
}

void FakeWorker::DeregisterGraphAsync(const DeregisterGraphRequest* request, DeregisterGraphResponse*,
                                      StatusCallback done) {
  done(Record("DeregisterGraph", *request));
}

void FakeWorker::RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response, StatusCallback done,
                               CallCancellation*) {
  absl::Status s = Record("RunGraph", *request);
  if (s.ok()) {
    absl::MutexLock lock(&mu_);
    *response = run_graph_response_;
  }
  done(s);
}

void FakeWorker::RecvTensorAsync(const RecvTensorRequest* request, RecvTensorResult* response, StatusCallback done,
                                 CallCancellation* cancel) {
  absl::Status s = Record("RecvTensor", *request);
  if (!s.ok()) {
    done(s);
    return;
  }
  const std::string& key = request->rendezvous_key();
  if (key == kHeldKey) {
    absl::MutexLock lock(&mu_);
    held_.push_back(Held{response, nullptr, std::move(done)});
    ++num_pending_;
    return;
  }
  if (key == kPendingKey || absl::EndsWith(key, absl::StrCat(";", kPendingKey))) {
    auto pending = std::make_shared<Pending>();
    {
      absl::MutexLock lock(&pending->mu);
      pending->done = std::move(done);
    }
    pending->cancel = cancel;
    {
      absl::MutexLock lock(&mu_);
      pending_.push_back(pending);
      ++num_pending_;
    }
    if (cancel != nullptr) {
      pending->token = cancel->Register([this, pending] {
        StatusCallback done = pending->Take();
        if (done == nullptr) return;
        {
          absl::MutexLock lock(&mu_);
          ++num_cancelled_;
          --num_pending_;
        }
        done(absl::CancelledError("RecvTensor: the step was cancelled"));
      });
    }
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = tensors_.find(key);
    if (it != tensors_.end()) *response = it->second;
    s = it == tensors_.end() ? absl::NotFoundError(absl::StrCat("no tensor '", key, "'")) : absl::OkStatus();
  }
  done(s);
}

void FakeWorker::CleanupGraphAsync(const CleanupGraphRequest* request, CleanupGraphResponse*, StatusCallback done) {
  done(Record("CleanupGraph", *request));
}

void FakeWorker::CleanupAllAsync(const CleanupAllRequest* request, CleanupAllResponse*, StatusCallback done) {
  done(Record("CleanupAll", *request));
}

void FakeWorker::ShutdownAsync(const ShutdownRequest* request, ShutdownResponse*, StatusCallback done) {
  done(Record("Shutdown", *request));
}

}  // namespace distributed
}  // namespace sluice
