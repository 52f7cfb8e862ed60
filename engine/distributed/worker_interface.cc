// WorkerInterface's blocking forms, CallCancellation, and the status and task
// name helpers (see worker_interface.h).
#include "engine/distributed/worker_interface.h"

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "engine/framework/device_name.h"

namespace sluice {
namespace distributed {

void CallCancellation::StartCancel(absl::Status reason) {
  std::vector<std::pair<int64_t, std::function<void()>>> hooks;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return;
    cancelled_ = true;
    reason_ = reason.ok() ? absl::CancelledError("cancelled by its caller") : std::move(reason);
    hooks.swap(hooks_);
  }
  for (auto& [token, hook] : hooks) hook();
}

bool CallCancellation::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

absl::Status CallCancellation::reason() const {
  absl::MutexLock lock(&mu_);
  return reason_;
}

int64_t CallCancellation::Register(std::function<void()> hook) {
  {
    absl::MutexLock lock(&mu_);
    if (!cancelled_) {
      const int64_t token = next_token_++;
      hooks_.emplace_back(token, std::move(hook));
      return token;
    }
  }
  hook();
  return -1;
}

void CallCancellation::Deregister(int64_t token) {
  if (token < 0) return;
  absl::MutexLock lock(&mu_);
  for (auto it = hooks_.begin(); it != hooks_.end(); ++it) {
    if (it->first == token) {
      hooks_.erase(it);
      return;
    }
  }
}

namespace {
// Runs `start(done)` and waits for `done`.
template <typename Start>
absl::Status Wait(Start start) {
  absl::Notification finished;
  absl::Status result;
  start([&](const absl::Status& s) {
    result = s;
    finished.Notify();
  });
  finished.WaitForNotification();
  return result;
}
}  // namespace

absl::Status WorkerInterface::GetStatus(const GetStatusRequest& request, GetStatusResponse* response) {
  return Wait([&](StatusCallback done) { GetStatusAsync(&request, response, std::move(done)); });
}
absl::Status WorkerInterface::RegisterGraph(const RegisterGraphRequest& request, RegisterGraphResponse* response) {
  return Wait([&](StatusCallback done) { RegisterGraphAsync(&request, response, std::move(done)); });
}
absl::Status WorkerInterface::DeregisterGraph(const DeregisterGraphRequest& request,
                                              DeregisterGraphResponse* response) {
  return Wait([&](StatusCallback done) { DeregisterGraphAsync(&request, response, std::move(done)); });
}
absl::Status WorkerInterface::RunGraph(const RunGraphRequest& request, RunGraphResponse* response) {
  return Wait([&](StatusCallback done) { RunGraphAsync(&request, response, std::move(done), nullptr); });
}
absl::Status WorkerInterface::RecvTensor(const RecvTensorRequest& request, RecvTensorResult* response) {
  return Wait([&](StatusCallback done) { RecvTensorAsync(&request, response, std::move(done), nullptr); });
}
absl::Status WorkerInterface::CleanupGraph(const CleanupGraphRequest& request, CleanupGraphResponse* response) {
  return Wait([&](StatusCallback done) { CleanupGraphAsync(&request, response, std::move(done)); });
}
absl::Status WorkerInterface::CleanupAll(const CleanupAllRequest& request, CleanupAllResponse* response) {
  return Wait([&](StatusCallback done) { CleanupAllAsync(&request, response, std::move(done)); });
}
absl::Status WorkerInterface::Shutdown(const ShutdownRequest& request, ShutdownResponse* response) {
  return Wait([&](StatusCallback done) { ShutdownAsync(&request, response, std::move(done)); });
}

void StatusToProto(const absl::Status& status, StatusProto* proto) {
  proto->set_code(static_cast<int32_t>(status.code()));
  proto->set_message(std::string(status.message()));
}

absl::Status StatusFromProto(const StatusProto& proto) {
  if (proto.code() == 0) return absl::OkStatus();
  // A code outside absl's range (a corrupt or foreign peer) is Unknown.
  const int code = proto.code();
  const absl::StatusCode c =
      code > 0 && code <= static_cast<int>(absl::StatusCode::kUnauthenticated) ? static_cast<absl::StatusCode>(code)
                                                                                : absl::StatusCode::kUnknown;
  return absl::Status(c, proto.message().empty() ? "(no message)" : proto.message());
}

std::string TaskName(const std::string& job, int index) { return absl::StrCat("/job:", job, "/replica:0/task:", index); }

absl::StatusOr<std::string> TaskOfDevice(const std::string& device_name) {
  auto parsed = ParseDeviceName(device_name);
  if (!parsed.ok()) return parsed.status();
  if (!parsed->has_job || !parsed->has_replica || !parsed->has_task) {
    return absl::InvalidArgumentError(
        absl::StrCat("device '", device_name, "' does not name its job, replica and task"));
  }
  return absl::StrCat("/job:", parsed->job, "/replica:", parsed->replica, "/task:", parsed->task);
}

}  // namespace distributed
}  // namespace sluice
