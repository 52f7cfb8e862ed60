// A task of a cluster: its worker, server and channels (see cluster_task.h).
#include "cmd/train/cluster_task.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cmd/train/exit_codes.h"
#include "engine/distributed/distributed_session.h"
#include "engine/framework/local_devices.h"

namespace sluice {

std::string ThisTaskName(const distributed::ResolvedIdentity& identity) {
  return distributed::TaskName(identity.task.job, identity.task.index);
}

std::vector<std::string> ClusterTaskNames(const distributed::ResolvedIdentity& identity) {
  std::vector<std::string> tasks = {ThisTaskName(identity)};
  for (const distributed::ClusterJob& job : identity.cluster.jobs()) {
    for (int i = 0; i < static_cast<int>(job.tasks.size()); ++i) {
      std::string name = distributed::TaskName(job.name, i);
      if (name != tasks[0]) tasks.push_back(std::move(name));
    }
  }
  return tasks;
}

bool IsChief(const distributed::ResolvedIdentity& identity) {
  return identity.task.job == "worker" && identity.task.index == 0;
}

ClusterDevices::ClusterDevices(const distributed::ResolvedIdentity& identity, int cpu_devices,
                               bool with_other_workers) {
  std::vector<Device*> devices;
  for (const auto& device : DeviceMgr::Local()->devices()) devices.push_back(device.get());
  const std::vector<std::string> tasks = ClusterTaskNames(identity);
  for (size_t t = 1; t < tasks.size(); ++t) {
    if (!with_other_workers && absl::StartsWith(tasks[t], "/job:worker/")) continue;
    for (int i = 0; i < std::max(1, cpu_devices); ++i) {
      remote_.push_back(
          std::make_unique<Device>(absl::StrCat(tasks[t], "/device:CPU:", i), kDeviceCpu, CpuAllocator(), 1));
      devices.push_back(remote_.back().get());
    }
  }
  devices_ = std::make_unique<DeviceSet>(std::move(devices));
}

namespace {
distributed::TlsOptions TlsFromConfig(const config::Cluster& cluster) {
  distributed::TlsOptions tls;
  tls.cert_file = cluster.tls().cert_file();
  tls.key_file = cluster.tls().key_file();
  tls.ca_file = cluster.tls().ca_file();
  return tls;
}
}  // namespace

ClusterRuntime::ClusterRuntime(const ClusterTaskOptions& options)
    : options_(options), task_(ThisTaskName(options.identity)) {}

absl::StatusOr<std::unique_ptr<ClusterRuntime>> ClusterRuntime::Start(const ClusterTaskOptions& options,
                                                                      std::ostream& err) {
  std::unique_ptr<ClusterRuntime> runtime(new ClusterRuntime(options));
  ClusterRuntime* r = runtime.get();
  distributed::WorkerOptions wo;
  wo.task = r->task_;
  wo.inter_op_threads = r->options_.inter_op_threads;
  wo.config_hash = r->options_.config_hash;
  // The chief's own steps fail to the chief's session, which reports them;
  // another task's failed step is worth a line in that task's log.
  wo.log = IsChief(r->options_.identity) ? nullptr : &err;
  wo.on_shutdown = [r](const std::string& reason, int exit_code) {
    {
      absl::MutexLock lock(&r->mu_);
      r->shutdown_reason_ = reason;
      r->shutdown_exit_code_ = exit_code;
    }
    if (!r->shutdown_.HasBeenNotified()) r->shutdown_.Notify();
  };
  const std::vector<std::string> tasks = ClusterTaskNames(r->options_.identity);
  wo.on_config_mismatch = [r, tasks](const std::string& caller, const std::string& message) {
    // Only a task of this cluster (not any client that calls) ends this one.
    if (std::find(tasks.begin(), tasks.end(), caller) == tasks.end()) return;
    absl::MutexLock lock(&r->mu_);
    if (r->config_mismatch_.empty()) r->config_mismatch_ = message;
  };
  r->worker_ = std::make_unique<distributed::Worker>(wo);
  auto address = r->options_.identity.cluster.Address(r->options_.identity.task);
  if (!address.ok()) return address.status();
  distributed::GrpcServerOptions so;
  so.address = *address;
  so.tls = TlsFromConfig(r->options_.cluster_config);
  distributed::GrpcChannelOptions co;
  co.tls = so.tls;
  // Tensors over TCP beside gRPC unless asked otherwise; with TLS they stay
  // on gRPC (the TCP transport has no encryption). Started first, so that
  // every GetStatus this task answers announces it.
  co.tcp_tensors = r->options_.cluster_config.tensor_transport() != config::Cluster::GRPC && !so.tls.enabled();
  if (co.tcp_tensors) {
    auto tensor_server =
        distributed::TcpTensorServer::Start(distributed::HostOfAddress(*address), 0, r->worker_.get());
    if (!tensor_server.ok()) {
      return absl::Status(tensor_server.status().code(), absl::StrCat("task ", r->task_, ": ",
                                                                      tensor_server.status().message()));
    }
    r->tensor_server_ = std::move(tensor_server).value();
    r->worker_->set_tensor_address(r->tensor_server_->address());
  }
  auto server = distributed::GrpcWorkerServer::Start(so, r->worker_.get());
  if (!server.ok()) {
    return absl::Status(server.status().code(),
                        absl::StrCat("task ", r->task_, " cannot serve at ", *address, ": ", server.status().message()));
  }
  r->server_ = std::move(server).value();
  r->workers_ = std::make_unique<distributed::GrpcWorkerCache>(r->options_.identity.cluster, r->task_, r->worker_.get(), co);
  r->worker_->set_worker_cache(r->workers_.get());
  return runtime;
}

void ClusterRuntime::StartHealthChecks(absl::Duration interval, std::ostream* log, std::atomic<int>* stop) {
  if (health_.joinable()) return;
  health_ = std::thread([this, interval, log, stop] {
    bool stop_asked = false;  // a peer's stop signal was passed on
    std::vector<std::string> peers = ClusterTaskNames(options_.identity);
    peers.erase(peers.begin());  // this task
    const std::string chief = distributed::TaskName("worker", 0);
    const auto chief_at = std::find(peers.begin(), peers.end(), chief) - peers.begin();
    int chief_failures = 0;  // rounds in a row
    std::string chief_lost;  // why, once the watched chief is lost
    // When each peer stopped answering (InfiniteFuture: it answers), and
    // whether that was reported.
    std::vector<absl::Time> silent_since(peers.size(), absl::InfiniteFuture());
    std::vector<bool> reported(peers.size(), false);
    do {
      struct Round {
        absl::Mutex mu;
        int pending ABSL_GUARDED_BY(mu) = 0;
        int alive ABSL_GUARDED_BY(mu) = 0;
        std::vector<distributed::GetStatusRequest> requests;
        std::vector<distributed::GetStatusResponse> responses;
        std::vector<absl::Status> statuses;  // written before `pending` drops
      };
      auto round = std::make_shared<Round>();
      round->requests.resize(peers.size());
      round->responses.resize(peers.size());
      round->statuses.resize(peers.size(), absl::UnavailableError("no worker for the task"));
      {
        absl::MutexLock lock(&round->mu);
        round->pending = static_cast<int>(peers.size());
      }
      for (size_t i = 0; i < peers.size(); ++i) {
        distributed::WorkerInterface* worker = workers_->GetWorker(peers[i]);
        if (worker == nullptr) {
          absl::MutexLock lock(&round->mu);
          --round->pending;
          continue;
        }
        round->requests[i].set_caller_task(task_);
        round->requests[i].set_config_hash(options_.config_hash);
        worker->GetStatusAsync(&round->requests[i], &round->responses[i], [round, i](const absl::Status& s) {
          absl::MutexLock lock(&round->mu);
          round->statuses[i] = s;
          if (s.ok() || absl::IsFailedPrecondition(s)) ++round->alive;
          --round->pending;
        });
      }
      {
        absl::MutexLock lock(&round->mu);
        round->mu.Await(absl::Condition(+[](int* n) { return *n == 0; }, &round->pending));
        peers_alive_.store(round->alive);
      }
      for (size_t i = 0; log != nullptr && i < peers.size(); ++i) {
        const absl::Status& s = round->statuses[i];
        const absl::Time now = absl::Now();
        std::string line;
        if (s.ok() || absl::IsFailedPrecondition(s)) {
          if (reported[i]) line = absl::StrCat("task ", peers[i], " answers again\n");
          silent_since[i] = absl::InfiniteFuture();
          reported[i] = false;
        } else {
          if (silent_since[i] == absl::InfiniteFuture()) silent_since[i] = now;
          if (!reported[i] && now - silent_since[i] >= kPeerSilenceWarning) {
            reported[i] = true;
            line = absl::StrCat("warning: task ", peers[i], " has not answered for ",
                                absl::FormatDuration(absl::Trunc(now - silent_since[i], absl::Seconds(1))), " (",
                                s.message(), "); steps that need it wait until it is started again\n");
          }
        }
        // One write per line: the training loop prints beside this thread.
        if (!line.empty()) *log << line << std::flush;
      }
      for (size_t i = 0; stop != nullptr && !stop_asked && i < peers.size(); ++i) {
        if (!round->statuses[i].ok() || !round->responses[i].stopping()) continue;
        stop_asked = true;
        if (log != nullptr) {
          *log << "task " << peers[i] << " got a stop signal: stopping the run after this step (a checkpoint, exit 143)\n"
               << std::flush;
        }
        stop->fetch_add(1);
      }
      const uint64_t watched = watched_chief_.load();
      if (watched != 0 && chief_lost.empty() && chief_at < static_cast<std::ptrdiff_t>(peers.size())) {
        const absl::Status& s = round->statuses[chief_at];
        // A refusal for another config carries no incarnation; the chief is there.
        chief_failures = s.ok() || absl::IsFailedPrecondition(s) ? 0 : chief_failures + 1;
        if (s.ok() && round->responses[chief_at].incarnation() != watched) {
          chief_lost = absl::StrCat("the chief (", chief, ") restarted");
        } else if (chief_failures >= 2) {
          chief_lost = absl::StrCat("the chief (", chief, ") does not answer: ", s.message());
        }
        if (!chief_lost.empty()) {
          absl::MutexLock lock(&mu_);
          chief_lost_ = chief_lost;
        }
      }
      // Every round: a step that starts after the first abort must not wait
      // for the lost chief's tokens either.
      if (!chief_lost.empty()) worker_->steps()->CleanupAll(absl::UnavailableError(chief_lost));
    } while (!stop_health_.WaitForNotificationWithTimeout(interval));
  });
}

ClusterRuntime::~ClusterRuntime() {
  if (health_.joinable()) {
    stop_health_.Notify();
    health_.join();
  }
  if (IsChief(options_.identity) && workers_ != nullptr && stop_peers_on_exit_) {
    // Every other task serves until told; one that is gone is not waited for
    // longer than the call's deadline. Workers first: a replica whose step
    // fails because its ps stopped then already knows why.
    std::vector<std::string> tasks = ClusterTaskNames(options_.identity);
    std::stable_partition(tasks.begin(), tasks.end(),
                          [](const std::string& t) { return absl::StartsWith(t, "/job:worker/"); });
    for (const std::string& task : tasks) {
      if (task == task_) continue;
      distributed::WorkerInterface* worker = workers_->GetWorker(task);
      if (worker == nullptr) continue;
      distributed::ShutdownRequest request;
      request.set_reason(exit_reason_);
      request.set_exit_code(exit_code_);
      distributed::ShutdownResponse response;
      worker->Shutdown(request, &response).IgnoreError();
    }
  }
  if (server_ != nullptr) server_->Shutdown();
  if (tensor_server_ != nullptr) tensor_server_->Shutdown();
  // The worker first: it aborts its steps and cancels their calls.
  worker_.reset();
  server_.reset();
  // The channels are left to the process's exit on purpose: a call that ends
  // late (a fire-and-forget CleanupGraph to a task that died) would otherwise
  // drop the last reference to its channel inside gRPC's own callback, which
  // gRPC 1.51 answers with an assertion failure (seen about once in 80 kills).
  (void)workers_.release();
}

absl::StatusOr<std::vector<distributed::DeviceAttributes>> ClusterRuntime::Connect(
    std::ostream& progress, const std::atomic<int>* stop_signals) {
  const int secs = options_.cluster_config.start_timeout_secs();
  auto mismatch = [this] {
    absl::MutexLock lock(&mu_);
    return config_mismatch_;
  };
  auto devices = distributed::ConnectToCluster(
      workers_.get(), ClusterTaskNames(options_.identity), task_, options_.config_hash,
      absl::Seconds(secs > 0 ? secs : 300), &progress,
      [stop_signals, &mismatch] { return stop_signals->load() > 0 || !mismatch().empty(); },
      /*require_peers_ready=*/IsChief(options_.identity));
  if (absl::IsCancelled(devices.status()) && !mismatch().empty()) {
    return absl::FailedPreconditionError(mismatch());
  }
  if (devices.ok()) worker_->set_peers_ready();
  return devices;
}

absl::StatusOr<std::unique_ptr<Session>> ClusterRuntime::NewSession(std::vector<distributed::DeviceAttributes> devices,
                                                                   const SessionOptions& session_options) {
  distributed::DistributedSessionOptions o;
  o.session = session_options;
  o.local_worker = worker_.get();
  o.workers = workers_.get();
  o.devices = std::move(devices);
  o.lossy_transfer = options_.cluster_config.lossy_transfer();
  return distributed::NewDistributedSession(std::move(o));
}

int ClusterRuntime::ServeUntilShutdown(const std::atomic<int>* stop_signals, std::ostream& out, std::ostream& err,
                                       absl::Duration restart_after_freeze) {
  // A signal (a scheduler stopping the whole cluster) does not end this task
  // at once: the chief, stopping too, still needs it for its last step and
  // checkpoint, and says stop when done. A second signal exits at once
  // (main.cc); kStopGrace bounds the wait for a chief that never says stop.
  constexpr absl::Duration kStopGrace = absl::Seconds(30);
  absl::Time signalled = absl::InfiniteFuture();
  absl::Time last_look = absl::Now();
  while (!shutdown_.WaitForNotificationWithTimeout(absl::Milliseconds(100))) {
    const absl::Time now = absl::Now();
    if (now - last_look > restart_after_freeze) {
      err << "task " << task_ << " was frozen for " << absl::FormatDuration(absl::Trunc(now - last_look, absl::Seconds(1)))
          << ": its peers have given up on it; restarting this task\n";
      err.flush();
      return kRestartThisTask;
    }
    last_look = now;
    {
      absl::MutexLock lock(&mu_);
      if (!config_mismatch_.empty()) {
        err << "error: " << config_mismatch_ << "\n";
        return 2;
      }
    }
    if (stop_signals->load() > 0 && signalled == absl::InfiniteFuture()) {
      signalled = absl::Now();
      worker_->set_stopping();  // a replicated run's chief stops when it sees this
      out << "task " << task_ << " got a stop signal: serving until the chief stops (at most "
          << absl::FormatDuration(kStopGrace) << "; a second signal stops it now)\n";
      out.flush();
    }
    if (signalled != absl::InfiniteFuture() && !ChiefAlive()) {
      out << "task " << task_ << " stopped by a signal (the chief is gone)\n";
      out.flush();
      return 143;
    }
    if (absl::Now() - signalled > kStopGrace) {
      out << "task " << task_ << " stopped by a signal\n";
      out.flush();
      return 143;
    }
  }
  // The run's outcome, whether or not this task got a signal meanwhile.
  const int code = shutdown_exit_code();
  out << "task " << task_ << " stopping: " << shutdown_reason() << (code != 0 ? absl::StrCat(" (exit ", code, ")") : "")
      << "\n";
  out.flush();
  return code;
}

absl::Status ClusterRuntime::AskChief(const distributed::GetStatusRequest& request,
                                      distributed::GetStatusResponse* response) {
  distributed::WorkerInterface* chief = workers_->GetWorker(distributed::TaskName("worker", 0));
  if (chief == nullptr) return absl::InternalError("no worker for the chief");
  return chief->GetStatus(request, response);
}

absl::StatusOr<uint64_t> ClusterRuntime::ChiefReadyIncarnation() {
  distributed::GetStatusRequest request;
  request.set_caller_task(task_);
  request.set_config_hash(options_.config_hash);
  distributed::GetStatusResponse response;
  const absl::Status s = AskChief(request, &response);
  if (!s.ok()) return s;
  return response.replica_ready() ? response.incarnation() : 0;
}

bool ClusterRuntime::ChiefAlive() {
  distributed::GetStatusResponse response;
  // A refusal (another config) still means it is there.
  const absl::Status s = AskChief(distributed::GetStatusRequest(), &response);
  return s.ok() || absl::IsFailedPrecondition(s);
}

std::string ClusterRuntime::chief_lost() const {
  absl::MutexLock lock(&mu_);
  return chief_lost_;
}

std::string ClusterRuntime::shutdown_reason() const {
  absl::MutexLock lock(&mu_);
  return shutdown_reason_;
}

int ClusterRuntime::shutdown_exit_code() const {
  absl::MutexLock lock(&mu_);
  return shutdown_exit_code_;
}

}  // namespace sluice
