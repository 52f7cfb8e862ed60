// The local cluster launcher (local_cluster.h): spec parsing, TF_CONFIG for
// each task, and the poll loop that relays output, forwards signals, reaps
// the tasks and decides the exit code.
#include "cmd/train/local_cluster.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cmd/train/exit_codes.h"
#include "cmd/train/line_prefixer.h"
#include "cmd/train/signal_relay.h"
#include "cmd/train/task_process.h"
#include "engine/framework/op_def.h"  // ClosestMatch

extern char** environ;

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kLog[] = "local_cluster: ";
// The longest poll() sleeps, so that a lost wake-up costs at most this much.
constexpr auto kMaxPollWait = std::chrono::milliseconds(200);
// After the last task has been reaped: how long its pipes may stay open (a
// process the task started may hold them) before the launcher stops reading.
constexpr auto kOutputDrainLimit = std::chrono::seconds(1);
// Bytes read from one pipe per wake-up, and at most when draining a task
// that has just exited.
constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kExitDrainLimit = 4 * 1024 * 1024;
// How long a task's exit with a nonzero code waits for the chief's (see
// ReapExited): a task the chief stopped exits with the chief's code.
constexpr absl::Duration kChiefExitWait = absl::Seconds(2);

absl::Status SpecError(absl::string_view spec, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("--local_cluster '", spec, "': ", what));
}

const char* SignalName(int sig) {
  switch (sig) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGKILL:
      return "SIGKILL";
    default:
      return "a signal";
  }
}

// 128 + S for a task killed by signal S, as a shell reports it.
int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return kExitPermanentError;
}

bool IsPermanentFailure(int code) { return code >= 1 && code <= 127; }

// `d` from now, with d taken as 0..1 day (an infinite grace period must not
// overflow the clock).
Clock::time_point After(absl::Duration d) {
  d = std::min(std::max(d, absl::ZeroDuration()), absl::Hours(24));
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(absl::ToChronoNanoseconds(d));
}

struct TaskIdentity {
  std::string job;
  int index = 0;
  std::string name() const { return absl::StrCat(job, ":", index); }
};

// {"cluster": {"ps": [...], "worker": [...]}, "task": {"type": "worker", "index": 1}}.
// The addresses are "127.0.0.1:<port>": nothing in them needs JSON escaping.
std::string MakeTfConfig(const std::vector<std::string>& ps, const std::vector<std::string>& workers,
                         const TaskIdentity& task) {
  auto quoted = [](const std::vector<std::string>& addresses) {
    return absl::StrCat("[\"", absl::StrJoin(addresses, "\", \""), "\"]");
  };
  std::string cluster = absl::StrCat("\"worker\": ", quoted(workers));
  if (!ps.empty()) cluster = absl::StrCat("\"ps\": ", quoted(ps), ", ", cluster);
  return absl::StrCat("{\"cluster\": {", cluster, "}, \"task\": {\"type\": \"", task.job, "\", \"index\": ", task.index,
                      "}}");
}

// The value of NAME in "NAME=value" entries; nullopt when absent.
std::optional<std::string> FindEnv(const std::vector<std::string>& env, absl::string_view name) {
  for (const std::string& entry : env) {
    if (entry.size() > name.size() && entry[name.size()] == '=' && absl::StartsWith(entry, name)) {
      return entry.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

// Why the launcher will not start, or "".
std::string Refusal(const std::vector<std::string>& env, const std::vector<std::string>& args) {
  std::optional<std::string> tf_config = FindEnv(env, "TF_CONFIG");
  if (tf_config.has_value() && !tf_config->empty()) {
    return absl::StrCat("--local_cluster gives each task its own TF_CONFIG; unset TF_CONFIG (it is '", *tf_config,
                        "')");
  }
  std::optional<std::string> slurm_proc_id = FindEnv(env, "SLURM_PROCID");
  if (slurm_proc_id.has_value() && !slurm_proc_id->empty()) {
    return absl::StrCat("--local_cluster gives each task its own TF_CONFIG, but SLURM_PROCID=", *slurm_proc_id,
                        " says this process is one task of a Slurm step; under srun, run train without "
                        "--local_cluster (one task per Slurm task), or unset SLURM_PROCID");
  }
  for (const std::string& arg : args) {
    if (arg == "--trace_device_time" || arg == "--trace-device-time") {
      return "--trace_device_time works in single-process runs only (a cluster's steps do not wait for each "
             "kernel's device); drop it";
    }
    for (const char* flag : {"--job", "--task"}) {
      if (arg == flag || absl::StartsWith(arg, absl::StrCat(flag, "="))) {
        return absl::StrCat("--local_cluster starts every task itself; drop ", flag,
                            " (each task's --job/--task come from its TF_CONFIG)");
      }
    }
  }
  return "";
}

// One task of the running cluster.
struct Task {
  TaskIdentity id;
  std::string address;
  pid_t pid = -1;
  bool running = false;
  std::string tf_config;  // its TF_CONFIG entry, to start it again
  // Its SLUICE_METRICS_PORT entry (exit_codes.h): the /metrics port it serves
  // if its config asks for a free one, the same after a restart.
  std::string metrics_port;
  int restarts = 0;       // times the launcher started it again
  // Its stdout and stderr: read ends (-1 once closed) and their line writers.
  int fds[2] = {-1, -1};
  std::unique_ptr<LinePrefixer> lines[2];
};

// The cluster from the first task started to the last one reaped.
class ClusterRun {
 public:
  ClusterRun(const LocalClusterOptions& options, std::ostream& out, std::ostream& err, SignalRelay* relay)
      : options_(options), out_(out), err_(err), relay_(relay) {}

  ~ClusterRun() {
    for (Task& task : tasks_) {
      for (int stream = 0; stream < 2; ++stream) CloseStream(task, stream);
    }
  }

  // Picks the ports and prints the first line. On error nothing has started.
  absl::Status Plan();
  // Starts every task. On error the tasks already started are killed and reaped.
  absl::Status Start(const std::vector<std::string>& base_env);
  // Starts `task` (again): its process, pipes and line writers.
  absl::Status StartTask(Task& task);
  // Runs until every task has been reaped; returns the exit code.
  int Wait();

 private:
  void Log(absl::string_view message) { err_ << kLog << message << '\n' << std::flush; }
  std::vector<Task*> Running();
  std::string Names(const std::vector<Task*>& tasks);
  void SignalRunning(int sig);
  // Says `why`, sends SIGTERM to every running task now and SIGKILL after the
  // grace period, and starts no task again.
  void StopTheOthers(const std::string& why);
  void ReapExited();
  void OnTaskExit(Task& task, int code);
  void ActOnSignals();
  void ActOnDeadlines();
  // Waits (bounded by `until` and kMaxPollWait) for output or a signal, and
  // relays the output that is there.
  void PollOnce(Clock::time_point until);
  // Reads what `stream` of `task` has now; false once it has ended.
  bool ReadStream(Task& task, int stream, size_t limit);
  void CloseStream(Task& task, int stream);
  Clock::time_point NextDeadline() const;

  const LocalClusterOptions& options_;
  std::ostream& out_;
  std::ostream& err_;
  SignalRelay* relay_;
  std::vector<Task> tasks_;  // ps tasks, then workers; tasks_[num_ps] is the chief
  Task* chief_ = nullptr;
  // What every task runs; the last two env entries are its SLUICE_METRICS_PORT and TF_CONFIG.
  TaskProcessSpec spec_;

  std::optional<int> chief_code_;
  std::optional<int> first_permanent_;  // of a task other than the chief, before the chief ended
  // The escalation still to come, when set.
  std::optional<Clock::time_point> sigterm_at_, sigkill_at_, give_up_at_;
  bool gave_up_ = false;
  bool stopping_ = false;  // a stop signal came, or the launcher stops the cluster: restart nothing
};

absl::Status ClusterRun::Plan() {
  const LocalClusterShape& shape = options_.shape;
  const int num_tasks = shape.num_ps + shape.num_workers;
  // Each task's gRPC port, then its /metrics port.
  auto ports = PickFreeLoopbackPorts(2 * num_tasks);
  if (!ports.ok()) return ports.status();
  for (int i = 0; i < num_tasks; ++i) {
    Task task;
    task.id = i < shape.num_ps ? TaskIdentity{"ps", i} : TaskIdentity{"worker", i - shape.num_ps};
    task.address = absl::StrCat("127.0.0.1:", (*ports)[i]);
    task.metrics_port = absl::StrCat(kMetricsPortEnv, "=", (*ports)[num_tasks + i]);
    tasks_.push_back(std::move(task));
  }
  chief_ = &tasks_[shape.num_ps];
  std::vector<std::string> listed;
  for (const Task& task : tasks_) {
    listed.push_back(absl::StrCat(task.id.name(), " ", task.address, &task == chief_ ? " (chief)" : ""));
  }
  out_ << kLog << absl::StrJoin(listed, ", ") << '\n' << std::flush;
  return absl::OkStatus();
}

absl::Status ClusterRun::Start(const std::vector<std::string>& base_env) {
  std::vector<std::string> ps, workers;
  for (const Task& task : tasks_) (task.id.job == "ps" ? ps : workers).push_back(task.address);
  TaskProcessSpec& spec = spec_;
  spec.program = options_.program;
  spec.argv.push_back(options_.argv0.empty() ? options_.program : options_.argv0);
  spec.argv.insert(spec.argv.end(), options_.args.begin(), options_.args.end());
  for (const std::string& entry : base_env) {
    if (!absl::StartsWith(entry, "TF_CONFIG=") && !absl::StartsWith(entry, "SLURM_PROCID=") &&
        !absl::StartsWith(entry, absl::StrCat(kMetricsPortEnv, "="))) {
      spec.env.push_back(entry);
    }
  }
  spec.env.emplace_back();  // this task's SLUICE_METRICS_PORT
  spec.env.emplace_back();  // this task's TF_CONFIG
  for (Task& task : tasks_) {
    task.tf_config = absl::StrCat("TF_CONFIG=", MakeTfConfig(ps, workers, task.id));
    const absl::Status started = StartTask(task);
    if (!started.ok()) {
      const absl::Status& error = started;
      SignalRunning(SIGKILL);
      for (Task* started : Running()) {
        int status;
        while (waitpid(started->pid, &status, 0) < 0 && errno == EINTR) {
        }
        started->running = false;
      }
      return error;
    }
  }
  return absl::OkStatus();
}

absl::Status ClusterRun::StartTask(Task& task) {
  spec_.env[spec_.env.size() - 2] = task.metrics_port;
  spec_.env.back() = task.tf_config;
  absl::StatusOr<TaskProcess> process = StartTaskProcess(spec_);
  if (!process.ok()) {
    return absl::Status(process.status().code(),
                        absl::StrCat("cannot start task ", task.id.name(), ": ", process.status().message()));
  }
  for (int stream = 0; stream < 2; ++stream) CloseStream(task, stream);
  task.pid = process->pid;
  task.running = true;
  task.fds[0] = process->stdout_fd;
  task.fds[1] = process->stderr_fd;
  const std::string prefix = absl::StrCat("[", task.id.name(), "] ");
  task.lines[0] = std::make_unique<LinePrefixer>(prefix, &out_);
  task.lines[1] = std::make_unique<LinePrefixer>(prefix, &err_);
  return absl::OkStatus();
}

int ClusterRun::Wait() {
  while (true) {
    ActOnSignals();
    ReapExited();
    ActOnDeadlines();
    if (Running().empty() || gave_up_) break;
    PollOnce(NextDeadline());
  }
  // Every task has ended; read the rest of their output.
  const Clock::time_point drain_until = Clock::now() + kOutputDrainLimit;
  while (Clock::now() < drain_until &&
         std::any_of(tasks_.begin(), tasks_.end(), [](const Task& t) { return t.fds[0] >= 0 || t.fds[1] >= 0; })) {
    relay_->TakeSignals();  // nothing left to forward them to; keeps the pipe from waking poll
    PollOnce(drain_until);
  }
  for (Task& task : tasks_) {
    for (int stream = 0; stream < 2; ++stream) CloseStream(task, stream);
  }
  if (first_permanent_.has_value()) return *first_permanent_;
  return chief_code_.value_or(128 + SIGKILL);  // no code: the chief outlived SIGKILL
}

std::vector<Task*> ClusterRun::Running() {
  std::vector<Task*> running;
  for (Task& task : tasks_) {
    if (task.running) running.push_back(&task);
  }
  return running;
}

std::string ClusterRun::Names(const std::vector<Task*>& tasks) {
  std::vector<std::string> names;
  for (const Task* task : tasks) names.push_back(task->id.name());
  return absl::StrJoin(names, ", ");
}

void ClusterRun::SignalRunning(int sig) {
  // A running task has not been reaped, so its pid cannot have been reused.
  for (Task* task : Running()) kill(task->pid, sig);
}

void ClusterRun::ReapExited() {
  struct Exit {
    Task* task;
    int code;
    bool by_itself;  // exit() rather than a signal
  };
  std::vector<Exit> exited;
  // Reaps `task` if it has exited; false if it still runs.
  auto reap = [&exited](Task* task) {
    int status = 0;
    pid_t pid;
    do {
      pid = waitpid(task->pid, &status, WNOHANG);
    } while (pid < 0 && errno == EINTR);
    if (pid == task->pid) {
      exited.push_back({task, ExitCodeOf(status), WIFEXITED(status) != 0});
    } else if (pid < 0) {  // ECHILD: someone else reaped it; its code is lost
      exited.push_back({task, kExitPermanentError, true});
    }
    return pid != 0;
  };
  for (Task* task : Running()) reap(task);
  auto found = [&exited](const Task* task) {
    return std::find_if(exited.begin(), exited.end(), [task](const Exit& e) { return e.task == task; });
  };
  // A task the chief stopped exits with the chief's code (143 when a signal
  // stopped the chief), often a moment before the chief itself exits: the
  // chief's exit, not its echo, decides what happens (nothing is started
  // again). So a task that exits by itself with a nonzero code while the
  // chief runs gets up to kChiefExitWait for the chief to exit too.
  const bool echo_possible = std::any_of(exited.begin(), exited.end(), [this](const Exit& e) {
    return e.task != chief_ && e.by_itself && e.code != 0;
  });
  if (echo_possible && chief_->running && found(chief_) == exited.end()) {
    const Clock::time_point until = After(kChiefExitWait);
    while (!reap(chief_) && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  const auto chief_exit = found(chief_);
  const std::optional<int> chief_code =
      chief_exit != exited.end() ? std::optional<int>(chief_exit->code) : std::nullopt;
  // Tasks that ended together: a failed task before the chief (the chief's
  // failure is then most likely its consequence), unless the chief succeeded
  // or the task's code is the chief's (its echo: after the chief).
  std::stable_sort(exited.begin(), exited.end(), [this, chief_code](const Exit& a, const Exit& b) {
    auto rank = [this, chief_code](const Exit& e) {
      if (e.task == chief_) return e.code == 0 ? 0 : 2;
      return e.by_itself && chief_code.has_value() && e.code == *chief_code ? 3 : 1;
    };
    return rank(a) < rank(b);
  });
  for (const Exit& e : exited) e.task->running = false;
  for (const Exit& e : exited) OnTaskExit(*e.task, e.code);
}

void ClusterRun::StopTheOthers(const std::string& why) {
  Log(why);
  stopping_ = true;
  SignalRunning(SIGTERM);
  sigterm_at_.reset();
  sigkill_at_ = After(options_.grace_period);
}

void ClusterRun::OnTaskExit(Task& task, int code) {
  task.running = false;
  // Its output comes before what the launcher says about its end.
  for (int stream = 0; stream < 2; ++stream) ReadStream(task, stream, kExitDrainLimit);
  if (&task == chief_) {
    chief_code_ = code;
    std::vector<Task*> running = Running();
    if (running.empty() || first_permanent_.has_value()) return;
    const std::string exited = absl::StrCat("the chief (", task.id.name(), ") exited with code ", code);
    if (code != 0 && !stopping_) {
      // A chief that failed or was killed tells nobody to stop (or not
      // everybody), and nothing starts it again here: the others would only
      // wait for it.
      StopTheOthers(absl::StrCat(exited, "; stopping ", Names(running)));
    } else {
      Log(absl::StrCat(exited, "; waiting up to ", absl::FormatDuration(options_.grace_period), " for ",
                       Names(running)));
      sigterm_at_ = After(options_.grace_period);
    }
    return;
  }
  // The chief still runs and nobody is stopping the cluster.
  const bool running_on = !chief_code_.has_value() && !first_permanent_.has_value() && !sigterm_at_.has_value() &&
                          !sigkill_at_.has_value() && !stopping_;
  // A task that died (a signal, a retryable code) while the chief runs is
  // started again, as a cluster manager would: the run recovers by itself.
  if (running_on && code >= 128 && task.restarts < options_.shape.restarts) {
    ++task.restarts;
    Log(absl::StrCat("task ", task.id.name(), " exited with code ", code, "; starting it again (", task.restarts, " of ",
                     options_.shape.restarts, ")"));
    const absl::Status started = StartTask(task);
    if (started.ok()) return;
    Log(std::string(started.message()));
    code = ExitCodeForStatus(started);
  }
  if (!chief_code_.has_value() && !first_permanent_.has_value() && IsPermanentFailure(code)) {
    first_permanent_ = code;
    StopTheOthers(absl::StrCat("task ", task.id.name(), " exited with code ", code, "; stopping the cluster"));
    return;
  }
  // A task that died and is not started again (no restarts left): nothing
  // trains without a ps's variables, a sync step waits for every worker's
  // gradients, and the chief's recovery waits for every task (until
  // cluster.start_timeout_secs). SIGTERM lets the chief checkpoint and exit
  // 143; the same command resumes.
  if (running_on && code >= 128) {
    StopTheOthers(absl::StrCat("task ", task.id.name(), " exited with code ", code, " and is not started again (",
                               options_.shape.restarts == 0
                                   ? "no restarts= given"
                                   : absl::StrCat("all ", options_.shape.restarts, " restarts used"),
                               "); stopping the cluster (run the same command again to resume)"));
  }
}

void ClusterRun::ActOnSignals() {
  for (int sig : relay_->TakeSignals()) {
    if (sig != SIGTERM && sig != SIGINT) continue;  // SIGCHLD: ReapExited looks at every task anyway
    std::vector<Task*> running = Running();
    if (running.empty()) continue;
    stopping_ = true;  // no task is started again after this
    Log(absl::StrCat("got ", SignalName(sig), "; forwarding it to ", Names(running)));
    SignalRunning(sig);
  }
}

void ClusterRun::ActOnDeadlines() {
  const Clock::time_point now = Clock::now();
  if (sigterm_at_.has_value() && now >= *sigterm_at_) {
    sigterm_at_.reset();
    std::vector<Task*> running = Running();
    if (!running.empty()) {
      Log(absl::StrCat(Names(running), " still running ", absl::FormatDuration(options_.grace_period),
                       " after the chief exited; sending SIGTERM"));
      SignalRunning(SIGTERM);
      sigkill_at_ = After(options_.kill_delay);
    }
  }
  if (sigkill_at_.has_value() && now >= *sigkill_at_) {
    sigkill_at_.reset();
    std::vector<Task*> running = Running();
    if (!running.empty()) {
      Log(absl::StrCat(Names(running), " did not exit after SIGTERM; sending SIGKILL"));
      SignalRunning(SIGKILL);
      give_up_at_ = After(options_.kill_delay);
    }
  }
  if (give_up_at_.has_value() && now >= *give_up_at_) {
    give_up_at_.reset();
    std::vector<Task*> running = Running();
    if (!running.empty()) {
      Log(absl::StrCat(Names(running), " still there ", absl::FormatDuration(options_.kill_delay),
                       " after SIGKILL; giving up on them"));
      gave_up_ = true;
    }
  }
}

Clock::time_point ClusterRun::NextDeadline() const {
  Clock::time_point next = Clock::time_point::max();
  for (const auto& deadline : {sigterm_at_, sigkill_at_, give_up_at_}) {
    if (deadline.has_value()) next = std::min(next, *deadline);
  }
  return next;
}

void ClusterRun::PollOnce(Clock::time_point until) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Task*, int>> owners;  // of fds[1...]
  fds.push_back({relay_->read_fd(), POLLIN, 0});
  for (Task& task : tasks_) {
    for (int stream = 0; stream < 2; ++stream) {
      if (task.fds[stream] < 0) continue;
      fds.push_back({task.fds[stream], POLLIN, 0});
      owners.emplace_back(&task, stream);
    }
  }
  const Clock::time_point now = Clock::now();
  const auto wait = until <= now ? Clock::duration::zero() : std::min<Clock::duration>(until - now, kMaxPollWait);
  // Round up, so that poll does not return just before the deadline.
  const int timeout_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count());
  const int ready = poll(fds.data(), fds.size(), timeout_ms);
  if (ready <= 0) return;  // timeout, or EINTR: the caller looks again
  for (size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].revents != 0) ReadStream(*owners[i - 1].first, owners[i - 1].second, kReadChunk);
  }
}

bool ClusterRun::ReadStream(Task& task, int stream, size_t limit) {
  char buffer[kReadChunk];
  size_t total = 0;
  while (task.fds[stream] >= 0 && total < limit) {
    const ssize_t n = read(task.fds[stream], buffer, std::min(sizeof(buffer), limit - total));
    if (n > 0) {
      task.lines[stream]->Append(absl::string_view(buffer, static_cast<size_t>(n)));
      total += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return true;
    } else {  // EOF, or an error that will not go away
      CloseStream(task, stream);
    }
  }
  return task.fds[stream] >= 0;
}

void ClusterRun::CloseStream(Task& task, int stream) {
  if (task.fds[stream] < 0) return;
  close(task.fds[stream]);
  task.fds[stream] = -1;
  if (task.lines[stream] != nullptr) task.lines[stream]->Finish();
}

}  // namespace

absl::StatusOr<LocalClusterShape> ParseLocalClusterSpec(absl::string_view spec) {
  const absl::string_view text = absl::StripAsciiWhitespace(spec);
  if (text.empty()) return SpecError(spec, "give the jobs and their task counts, e.g. ps=1,worker=2");
  std::optional<int> ps, workers, restarts;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (item.empty()) return SpecError(spec, "empty item (items are job=count, separated by ',')");
    const size_t equals = item.find('=');
    const absl::string_view job = absl::StripAsciiWhitespace(item.substr(0, equals));
    if (equals == absl::string_view::npos) {
      return SpecError(spec, absl::StrCat("'", item, "' needs a task count, e.g. ", job == "ps" ? "ps=1" : "worker=2"));
    }
    const absl::string_view count_text = absl::StripAsciiWhitespace(item.substr(equals + 1));
    std::optional<int>* slot = job == "ps" ? &ps : job == "worker" ? &workers : job == "restarts" ? &restarts : nullptr;
    if (slot == nullptr) {
      if (job == "chief") {
        return SpecError(spec, "there is no 'chief' job: Sluice's chief is worker 0 (give worker=N)");
      }
      const std::string suggestion = ClosestMatch(job, {"ps", "worker", "restarts"});
      return SpecError(spec, absl::StrCat("unknown job '", job, "'",
                                          suggestion.empty() ? "" : absl::StrCat(" (did you mean '", suggestion, "'?)"),
                                          "; the jobs are ps and worker (and restarts=N)"));
    }
    if (slot->has_value()) {
      return SpecError(spec, absl::StrCat(job == "restarts" ? "'" : "job '", job, "' is given twice"));
    }
    const int low = job == "worker" ? 1 : 0;
    const int high = job == "restarts" ? kMaxLocalClusterRestarts : kMaxLocalClusterTasksPerJob;
    int count = -1;
    const bool digits = !count_text.empty() && std::all_of(count_text.begin(), count_text.end(), absl::ascii_isdigit);
    if (!digits || !absl::SimpleAtoi(count_text, &count) || count < low || count > high) {
      return SpecError(spec, job == "restarts"
                                 ? absl::StrCat("restarts must be 0..", high, ", got '", count_text, "'")
                                 : absl::StrCat("the number of ", job, " tasks must be ", low, "..", high, ", got '",
                                                count_text, "'"));
    }
    *slot = count;
  }
  if (!workers.has_value()) {
    return SpecError(spec, "needs worker=N (N >= 1; worker 0 is the chief), e.g. ps=1,worker=2");
  }
  LocalClusterShape shape;
  shape.num_ps = ps.value_or(0);
  shape.num_workers = *workers;
  shape.restarts = restarts.value_or(0);
  return shape;
}

int RunLocalCluster(const LocalClusterOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<std::string> env;
  if (options.environment.has_value()) {
    env = *options.environment;
  } else {
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) env.emplace_back(*entry);
  }
  const std::string refusal = Refusal(env, options.args);
  if (!refusal.empty()) {
    err << "error: " << refusal << '\n';
    return kExitBadConfig;
  }
  const LocalClusterShape& shape = options.shape;
  if (shape.num_workers < 1 || shape.num_ps < 0 || shape.num_workers > kMaxLocalClusterTasksPerJob ||
      shape.num_ps > kMaxLocalClusterTasksPerJob) {
    err << "error: a local cluster needs 1.." << kMaxLocalClusterTasksPerJob << " workers and 0.."
        << kMaxLocalClusterTasksPerJob << " ps tasks\n";
    return kExitBadConfig;
  }
  absl::StatusOr<std::unique_ptr<SignalRelay>> relay = SignalRelay::Install();
  if (!relay.ok()) {
    err << "error: " << relay.status().message() << '\n';
    return ExitCodeForStatus(relay.status());
  }
  ClusterRun run(options, out, err, relay->get());
  absl::Status started = run.Plan();
  if (started.ok()) started = run.Start(env);
  if (!started.ok()) {
    err << "error: " << kLog << started.message() << '\n';
    return ExitCodeForStatus(started);
  }
  return run.Wait();
}

}  // namespace sluice
