// Tests for local_cluster.h: the --local_cluster spec, and RunLocalCluster
// driving fake_task (a stand-in for `train` that does what its environment
// says) on 127.0.0.1: ports and TF_CONFIG, prefixed output, exit codes,
// stopping on a failed task, forwarded signals, SIGKILL after the grace
// period, and no task left running afterwards.
// Every run is bounded: RunLocalCluster runs on its own thread and the test
// fails (and SIGKILLs the fake tasks) if it has not returned in time; each
// fake task also dies of SIGALRM after 60 s.
// Thread safety: each test drives one cluster from its thread and the
// launcher's thread; the test thread only reads files and sends signals.
#include "cmd/train/local_cluster.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cmd/train/task_process.h"
#include "engine/distributed/cluster_spec.h"
#include "engine/platform/test_dirs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr auto kRunLimit = std::chrono::seconds(30);

// ---- ParseLocalClusterSpec ----

TEST(ParseLocalClusterSpecTest, AcceptsPsAndWorkerCounts) {
  struct Case {
    const char* spec;
    int ps, workers;
  };
  for (const Case& c : std::vector<Case>{{"ps=1,worker=2", 1, 2},
                                         {"worker=1", 0, 1},
                                         {"worker=3,ps=0", 0, 3},
                                         {" ps = 2 , worker = 64 ", 2, 64},
                                         {"ps=64,worker=5", 64, 5},
                                         {"ps=1,worker=2,restarts=3", 1, 2}}) {
    absl::StatusOr<LocalClusterShape> shape = ParseLocalClusterSpec(c.spec);
    ASSERT_TRUE(shape.ok()) << c.spec << ": " << shape.status();
    EXPECT_EQ(shape->num_ps, c.ps) << c.spec;
    EXPECT_EQ(shape->num_workers, c.workers) << c.spec;
    EXPECT_EQ(shape->restarts, absl::StrContains(c.spec, "restarts=3") ? 3 : 0) << c.spec;
  }
}

TEST(ParseLocalClusterSpecTest, RefusesBadSpecsWithAClearMessage) {
  struct Case {
    const char* spec;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"", "give the jobs and their task counts, e.g. ps=1,worker=2"},
           {"ps=1", "needs worker=N"},
           {"ps=1,worker=0", "the number of worker tasks must be 1..64, got '0'"},
           {"worker=65", "the number of worker tasks must be 1..64, got '65'"},
           {"ps=65,worker=1", "the number of ps tasks must be 0..64, got '65'"},
           {"worker=-1", "got '-1'"},
           {"worker=two", "got 'two'"},
           {"worker=99999999999999999999", "got '99999999999999999999'"},
           {"worker=", "got ''"},
           {"worker=2,worker=3", "job 'worker' is given twice"},
           {"ps=1,ps=1,worker=1", "job 'ps' is given twice"},
           {"wroker=2", "unknown job 'wroker' (did you mean 'worker'?)"},
           {"pss=1,worker=1", "unknown job 'pss' (did you mean 'ps'?)"},
           {"evaluator=1,worker=1", "unknown job 'evaluator'; the jobs are ps and worker"},
           {"chief=1,worker=1", "Sluice's chief is worker 0"},
           {"worker", "'worker' needs a task count, e.g. worker=2"},
           {"worker=2,", "empty item"},
           {"worker=1,restarts=-1", "restarts must be 0..1000, got '-1'"},
           {"worker=1,restarts=1001", "restarts must be 0..1000, got '1001'"},
           {"worker=1,restarts=1,restarts=2", "'restarts' is given twice"},
       }) {
    absl::StatusOr<LocalClusterShape> shape = ParseLocalClusterSpec(c.spec);
    ASSERT_FALSE(shape.ok()) << "'" << c.spec << "' was accepted";
    EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument) << c.spec;
    EXPECT_THAT(shape.status().message(), HasSubstr(c.message)) << c.spec;
    EXPECT_THAT(shape.status().message(), HasSubstr(absl::StrCat("--local_cluster '", c.spec, "'")));
  }
}

// ---- RunLocalCluster with fake_task ----

std::string FakeTaskPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir != nullptr ? srcdir : ".", "/", workspace != nullptr ? workspace : "sluice",
                      "/cmd/train/fake_task");
}

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The pids the fake tasks wrote to DIR/*.pid.
std::map<std::string, pid_t> TaskPids(const std::string& dir) {
  std::map<std::string, pid_t> pids;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return pids;
  while (dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (!absl::EndsWith(name, ".pid")) continue;
    int pid = 0;
    if (absl::SimpleAtoi(ReadFile(absl::StrCat(dir, "/", name)), &pid)) pids[name] = pid;
  }
  closedir(d);
  return pids;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

struct RunResult {
  int code = -1;
  std::string out, err;
  std::chrono::steady_clock::duration elapsed{};
};

// One fake cluster: its options, its record directory, and the run.
class FakeCluster {
 public:
  FakeCluster(absl::string_view test_name, LocalClusterShape shape) : dir_(FreshTestDir(test_name)) {
    options_.program = FakeTaskPath();
    options_.shape = shape;
    options_.environment = std::vector<std::string>{absl::StrCat("FAKE_TASK_DIR=", dir_)};
  }

  LocalClusterOptions& options() { return options_; }
  const std::string& dir() const { return dir_; }
  // Sets FAKE_TASK_<task> ("worker_1") or FAKE_TASK_ALL ("ALL") to `script`.
  void Script(absl::string_view task, absl::string_view script) {
    options_.environment->push_back(absl::StrCat("FAKE_TASK_", task, "=", script));
  }

  // Starts RunLocalCluster on its own thread.
  void Start() {
    start_ = std::chrono::steady_clock::now();
    future_ = std::async(std::launch::async, [this] {
      RunResult result;
      std::ostringstream out, err;
      result.code = RunLocalCluster(options_, out, err);
      result.out = out.str();
      result.err = err.str();
      return result;
    });
  }

  // Waits (bounded) for RunLocalCluster; on a timeout, fails the test and
  // SIGKILLs the fake tasks so the launcher can end.
  RunResult Finish() {
    if (future_.wait_for(kRunLimit) != std::future_status::ready) {
      ADD_FAILURE() << "RunLocalCluster did not return within " << kRunLimit.count() << " s";
      for (const auto& [file, pid] : TaskPids(dir_)) kill(pid, SIGKILL);
    }
    RunResult result = future_.get();
    result.elapsed = std::chrono::steady_clock::now() - start_;
    ExpectNoTaskRunning();
    return result;
  }

  RunResult Run() {
    Start();
    return Finish();
  }

  // Waits (bounded) until DIR/<file> exists.
  bool AwaitFile(const std::string& file) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!FileExists(absl::StrCat(dir_, "/", file))) {
      if (std::chrono::steady_clock::now() > limit) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

  bool Finished() { return future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

  std::string Signals(absl::string_view task) { return ReadFile(absl::StrCat(dir_, "/", task, ".signals")); }

  // Every task that started has been reaped: its pid is gone.
  void ExpectNoTaskRunning() {
    for (const auto& [file, pid] : TaskPids(dir_)) {
      errno = 0;
      EXPECT_EQ(kill(pid, 0), -1) << file << ": pid " << pid << " is still there";
      EXPECT_EQ(errno, ESRCH) << file << ": pid " << pid;
    }
  }

 private:
  std::string dir_;
  LocalClusterOptions options_;
  std::chrono::steady_clock::time_point start_;
  std::future<RunResult> future_;
};

// The lowest port of the kernel's ephemeral range, as the launcher reads it.
int EphemeralLow() {
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768;
  f >> low;
  return low;
}

TEST(PickFreeLoopbackPortsTest, DistinctFreePortsBelowTheEphemeralRange) {
  const int low = EphemeralLow();
  if (low - kLowestPickedPort < 1000) GTEST_SKIP() << "no room below the ephemeral range (" << low << ")";
  for (int round = 0; round < 20; ++round) {
    absl::StatusOr<std::vector<int>> ports = PickFreeLoopbackPorts(8);
    ASSERT_TRUE(ports.ok()) << ports.status();
    ASSERT_EQ(ports->size(), 8u);
    EXPECT_EQ(std::set<int>(ports->begin(), ports->end()).size(), 8u);
    for (int port : *ports) {
      EXPECT_GE(port, kLowestPickedPort);
      EXPECT_LT(port, low);  // never a port an outgoing connection can be given
      // Free: a task can bind it now.
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in address = {};
      address.sin_family = AF_INET;
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      address.sin_port = htons(static_cast<uint16_t>(port));
      EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << port;
      close(fd);
    }
  }
}

TEST(RunLocalClusterTest, EachTaskGetsItsOwnFreePortAndTfConfig) {
  FakeCluster cluster("tf_config", {2, 3});
  cluster.options().argv0 = "train-argv0";
  cluster.options().args = {"cfg.pbtxt", "--set", "train.steps=5"};
  cluster.options().environment->push_back("FAKE_MARK=inherited");
  cluster.Script("ALL", "tfconfig;argv;env:FAKE_MARK;bind");
  RunResult result = cluster.Run();
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(TaskPids(cluster.dir()).size(), 5u);

  std::vector<std::string> out = Lines(result.out);
  ASSERT_FALSE(out.empty());
  const std::string& first = out[0];
  EXPECT_THAT(first, testing::StartsWith("local_cluster: ps:0 127.0.0.1:"));
  EXPECT_THAT(first, HasSubstr(" (chief)"));

  std::map<std::string, distributed::TfConfig> configs;  // by task prefix
  for (const std::string& line : out) {
    const size_t at = line.find("] TF_CONFIG=");
    if (at == std::string::npos) continue;
    absl::StatusOr<distributed::TfConfig> config = distributed::ParseTfConfig(line.substr(at + 12));
    ASSERT_TRUE(config.ok()) << line << ": " << config.status();
    configs[line.substr(0, at + 2)] = *config;
  }
  ASSERT_EQ(configs.size(), 5u) << result.out;
  const distributed::ClusterSpec& cluster_spec = configs.begin()->second.cluster;
  EXPECT_EQ(cluster_spec.num_tasks("ps"), 2);
  EXPECT_EQ(cluster_spec.num_tasks("worker"), 3);
  std::set<std::string> ports;
  for (const auto& [prefix, config] : configs) {
    EXPECT_EQ(config.cluster, cluster_spec) << prefix << " sees another cluster";
    ASSERT_TRUE(config.task.has_value()) << prefix;
    EXPECT_EQ(prefix, absl::StrCat("[", config.task->ToString(), "] "));
    absl::StatusOr<std::string> address = config.cluster.Address(*config.task);
    ASSERT_TRUE(address.ok()) << address.status();
    ASSERT_TRUE(absl::StartsWith(*address, "127.0.0.1:")) << *address;
    ports.insert(address->substr(10));
    // The first line names every task with the address its TF_CONFIG gives it.
    EXPECT_THAT(first, HasSubstr(absl::StrCat(config.task->ToString(), " ", *address)));
    EXPECT_THAT(out, testing::Contains(prefix + "bind ok"));
    EXPECT_THAT(out, testing::Contains(prefix + "argv: train-argv0 cfg.pbtxt --set train.steps=5"));
    EXPECT_THAT(out, testing::Contains(prefix + "FAKE_MARK=inherited"));
  }
  EXPECT_EQ(ports.size(), 5u) << "ports are not distinct: " << first;
  EXPECT_THAT(first, HasSubstr(absl::StrCat("worker:0 ", *cluster_spec.Address("worker", 0), " (chief)")));
}

TEST(RunLocalClusterTest, WithoutPsTheClusterHasOnlyWorkers) {
  FakeCluster cluster("no_ps", {0, 2});
  cluster.Script("ALL", "tfconfig");
  RunResult result = cluster.Run();
  EXPECT_EQ(result.code, 0) << result.err;
  std::vector<std::string> out = Lines(result.out);
  int seen = 0;
  for (const std::string& line : out) {
    const size_t at = line.find("] TF_CONFIG=");
    if (at == std::string::npos) continue;
    ++seen;
    absl::StatusOr<distributed::TfConfig> config = distributed::ParseTfConfig(line.substr(at + 12));
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->cluster.num_tasks("ps"), 0);
    EXPECT_EQ(config->cluster.num_tasks("worker"), 2);
  }
  EXPECT_EQ(seen, 2);
}

TEST(RunLocalClusterTest, OutputLinesArePrefixedAndWhole) {
  constexpr int kLines = 300;
  constexpr int kBigLine = 200000;  // several pipe reads
  FakeCluster cluster("output", {1, 2});
  cluster.Script("ALL", absl::StrCat("slowline:alpha beta gamma;lines:", kLines, ";bigline:", kBigLine,
                                     ";err:to stderr;outpart:no newline at the end"));
  RunResult result = cluster.Run();
  EXPECT_EQ(result.code, 0) << result.err;

  std::map<std::string, int> lines_per_task;
  for (const std::string& line : Lines(result.out)) {
    if (absl::StartsWith(line, "local_cluster: ")) continue;
    const size_t close = line.find("] ");
    ASSERT_TRUE(absl::StartsWith(line, "[") && close != std::string::npos) << "not prefixed: " << line.substr(0, 80);
    const std::string task = line.substr(1, close - 1);
    ASSERT_TRUE(task == "ps:0" || task == "worker:0" || task == "worker:1") << line.substr(0, 80);
    const std::string text = line.substr(close + 2);
    int index = -1;
    const bool numbered = absl::StartsWith(text, "line ") && absl::EndsWith(text, " of " + task) &&
                          absl::SimpleAtoi(text.substr(5, text.size() - 5 - 4 - task.size()), &index) && index >= 0 &&
                          index < kLines;
    const bool known = numbered || text == "alpha beta gamma" || text == "no newline at the end" ||
                       text == absl::StrCat("big ", task, " ", std::string(kBigLine, 'x'));
    EXPECT_TRUE(known) << "mixed or broken line from " << task << ": " << text.substr(0, 80);
    ++lines_per_task[task];
  }
  for (const char* task : {"ps:0", "worker:0", "worker:1"}) {
    EXPECT_EQ(lines_per_task[task], kLines + 3) << task;
    EXPECT_THAT(result.out, HasSubstr(absl::StrCat("[", task, "] alpha beta gamma\n")));
    EXPECT_THAT(result.out, HasSubstr(absl::StrCat("[", task, "] no newline at the end\n")));
    EXPECT_THAT(result.err, HasSubstr(absl::StrCat("[", task, "] to stderr\n")));
    EXPECT_THAT(result.out, Not(HasSubstr(absl::StrCat("[", task, "] to stderr"))));
  }
}

TEST(RunLocalClusterTest, ExitCodeIsTheChiefs) {
  for (int code : {0, 7, 129}) {
    FakeCluster cluster(absl::StrCat("chief_code_", code), {1, 2});
    cluster.Script("ALL", "exit:0");
    cluster.Script("worker_0", absl::StrCat("sleep:100;exit:", code));
    RunResult result = cluster.Run();
    EXPECT_EQ(result.code, code) << result.err;
    EXPECT_THAT(result.err, Not(HasSubstr("stopping the cluster")));
  }
}

TEST(RunLocalClusterTest, AFailureAfterTheChiefEndedDoesNotChangeTheCode) {
  FakeCluster cluster("failure_after_chief", {1, 2});
  // The ps fails once the launcher has reaped the chief.
  cluster.Script("ps_0", "await_reaped:worker_0;exit:5");
  cluster.Script("worker_1", "exit:0");
  cluster.Script("worker_0", "exit:0");
  cluster.Start();
  RunResult result = cluster.Finish();
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("the chief (worker:0) exited with code 0"));
  EXPECT_THAT(result.err, Not(HasSubstr("stopping the cluster")));
}

TEST(RunLocalClusterTest, APermanentFailureOfAPsStopsTheCluster) {
  FakeCluster cluster("ps_fails", {1, 2});
  // Much output just before the end: some of it is still in the pipe when the ps is reaped.
  cluster.Script("ps_0", "await:worker_0.ready,worker_1.ready;errlines:20000;err:ps is failing;exit:3");
  cluster.Script("worker_0", "on_term:143;ready;wait");
  cluster.Script("worker_1", "on_term:0;ready;wait");
  RunResult result = cluster.Run();
  EXPECT_EQ(result.code, 3) << result.err;
  EXPECT_THAT(result.err, HasSubstr("local_cluster: task ps:0 exited with code 3; stopping the cluster\n"));
  // The failed task's own last words come first.
  ASSERT_NE(result.err.find("[ps:0] ps is failing\n"), std::string::npos);
  EXPECT_LT(result.err.find("[ps:0] ps is failing\n"), result.err.find("stopping the cluster"));
  EXPECT_LT(result.err.find("[ps:0] line 19999 of ps:0\n"), result.err.find("[ps:0] ps is failing\n"));
  EXPECT_EQ(cluster.Signals("worker_0"), "SIGTERM\n");
  EXPECT_EQ(cluster.Signals("worker_1"), "SIGTERM\n");
}

TEST(RunLocalClusterTest, AChiefKilledBySignalCountsAs128PlusTheSignal) {
  FakeCluster cluster("chief_signal", {1, 1});
  cluster.Script("ps_0", "exit:0");
  cluster.Script("worker_0", absl::StrCat("raise:", SIGUSR1));
  RunResult result = cluster.Run();
  EXPECT_EQ(result.code, 128 + SIGUSR1) << result.err;
}

// A ps or worker that died and is not started again stops the cluster at once
// (a sync chief would wait for its gradients for ever, and a recovering chief
// for every task until cluster.start_timeout_secs); the code stays the
// chief's, retryable.
TEST(RunLocalClusterTest, AKilledTaskThatIsNotStartedAgainStopsTheCluster) {
  for (const char* victim : {"ps_0", "worker_1"}) {
    FakeCluster cluster(absl::StrCat("signal_", victim), {1, 2});
    cluster.Script("ALL", "on_term:143;ready;wait");
    cluster.Script(victim, absl::StrCat("await:worker_0.ready,", victim == std::string("ps_0") ? "worker_1" : "ps_0",
                                        ".ready;raise:", SIGUSR1));
    RunResult result = cluster.Run();
    EXPECT_EQ(result.code, 143) << result.err;
    const std::string name = victim == std::string("ps_0") ? "ps:0" : "worker:1";
    EXPECT_THAT(result.err, HasSubstr(absl::StrCat("local_cluster: task ", name, " exited with code ", 128 + SIGUSR1,
                                                   " and is not started again (no restarts= given); stopping the "
                                                   "cluster (run the same command again to resume)")));
    EXPECT_EQ(cluster.Signals("worker_0"), "SIGTERM\n") << victim;
  }
}

TEST(RunLocalClusterTest, WithRestartsADeadTaskIsStartedAgainUpToTheLimit) {
  FakeCluster cluster("restarts", {1, 1});
  cluster.options().shape.restarts = 2;
  cluster.Script("ps_0", absl::StrCat("out:started;raise:", SIGUSR1));
  cluster.Script("worker_0", "on_term:143;sleep:1500;exit:0");
  RunResult result = cluster.Run();
  EXPECT_EQ(result.code, 143) << result.err;
  // The first start and two more; then it stays dead, and the cluster stops.
  size_t starts = 0;
  for (size_t at = result.out.find("[ps:0] started"); at != std::string::npos;
       at = result.out.find("[ps:0] started", at + 1)) {
    ++starts;
  }
  EXPECT_EQ(starts, 3u) << result.out;
  EXPECT_THAT(result.err, HasSubstr(absl::StrCat("task ps:0 exited with code ", 128 + SIGUSR1,
                                                 "; starting it again (2 of 2)")));
  EXPECT_THAT(result.err, HasSubstr("is not started again (all 2 restarts used); stopping the cluster"));
}

TEST(RunLocalClusterTest, APermanentFailureIsNotRestarted) {
  FakeCluster cluster("no_restart", {1, 1});
  cluster.options().shape.restarts = 2;
  cluster.Script("ps_0", "exit:3");
  cluster.Script("worker_0", "on_term:143;wait");
  RunResult result = cluster.Run();
  EXPECT_EQ(result.code, 3) << result.err;
  EXPECT_THAT(result.err, Not(HasSubstr("starting it again")));
}

// A task the chief stopped exits with the chief's code (cmd/train/trainer.cc),
// often a moment before the chief exits: the launcher waits for the chief's
// exit, which decides. The echo of a 143 or a 129 is not a dead task to start
// again, and the echo of a failure does not blame the task.
TEST(RunLocalClusterTest, ATaskEchoingTheChiefsCodeBeforeTheChiefExitsIsNotBlamedOrRestarted) {
  for (int code : {143, 129, 1}) {
    FakeCluster cluster(absl::StrCat("echo_", code), {1, 2});
    cluster.options().shape.restarts = 2;
    cluster.Script("ps_0", absl::StrCat("out:started;await:worker_0.ready;exit:", code));
    cluster.Script("worker_1", absl::StrCat("await:worker_0.ready;sleep:100;exit:", code));
    cluster.Script("worker_0", absl::StrCat("ready;sleep:500;exit:", code));
    RunResult result = cluster.Run();
    EXPECT_EQ(result.code, code) << result.err;
    EXPECT_THAT(result.err, Not(HasSubstr("starting it again"))) << code;
    EXPECT_THAT(result.err, Not(HasSubstr("task ps:0 exited"))) << code;
    EXPECT_THAT(result.err, Not(HasSubstr("task worker:1 exited"))) << code;
    EXPECT_EQ(result.out.find("[ps:0] started"), result.out.rfind("[ps:0] started")) << result.out;
  }
}

// SIGTERM or SIGINT sent to the launcher's process reaches every task once.
void ExpectSignalForwarded(int sig, const char* name) {
  FakeCluster cluster(absl::StrCat("forward_", name), {1, 2});
  cluster.Script("ALL", "on_term:0;ready;wait");
  cluster.Script("worker_0", absl::StrCat("on_term:", 128 + sig, ";ready;wait"));
  cluster.Start();
  bool all_ready = true;
  for (const char* task : {"ps_0", "worker_0", "worker_1"}) {
    all_ready = cluster.AwaitFile(absl::StrCat(task, ".ready")) && all_ready;
  }
  EXPECT_TRUE(all_ready);
  if (all_ready && !cluster.Finished()) {
    // A second launcher in the same process is refused while this one runs.
    std::ostringstream out, err;
    EXPECT_EQ(RunLocalCluster(cluster.options(), out, err), 1);
    EXPECT_THAT(err.str(), HasSubstr("already running"));
    kill(getpid(), sig);  // the launcher's handler owns `sig` until it returns
  }
  RunResult result = cluster.Finish();
  EXPECT_EQ(result.code, 128 + sig) << result.err;
  EXPECT_THAT(result.err, HasSubstr(absl::StrCat("got ", name, "; forwarding it to ps:0, worker:0, worker:1")));
  for (const char* task : {"ps_0", "worker_0", "worker_1"}) {
    EXPECT_EQ(cluster.Signals(task), absl::StrCat(name, "\n")) << task;
  }
}

TEST(RunLocalClusterTest, SigtermIsForwardedToEveryTask) { ExpectSignalForwarded(SIGTERM, "SIGTERM"); }

TEST(RunLocalClusterTest, SigintIsForwardedToEveryTask) { ExpectSignalForwarded(SIGINT, "SIGINT"); }

TEST(RunLocalClusterTest, TasksLeftAfterTheChiefGetSigtermThenSigkill) {
  FakeCluster cluster("escalation", {1, 2});
  cluster.options().grace_period = absl::Milliseconds(300);
  cluster.options().kill_delay = absl::Milliseconds(300);
  cluster.Script("ps_0", "ignore_term;ready;wait");         // needs SIGKILL
  cluster.Script("worker_1", "on_term:0;ready;wait");       // ends on SIGTERM
  cluster.Script("worker_0", "await:ps_0.ready,worker_1.ready;exit:0");
  RunResult result = cluster.Run();
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(cluster.Signals("ps_0"), "SIGTERM\n");
  EXPECT_EQ(cluster.Signals("worker_1"), "SIGTERM\n");
  EXPECT_THAT(result.err, HasSubstr("ps:0, worker:1 still running 300ms after the chief exited; sending SIGTERM"));
  EXPECT_THAT(result.err, HasSubstr("local_cluster: ps:0 did not exit after SIGTERM; sending SIGKILL"));
  EXPECT_LT(result.elapsed, std::chrono::seconds(30));
}

// A chief that failed (or was killed) leaves the others nothing to wait for:
// they get SIGTERM at once, not after the grace period.
TEST(RunLocalClusterTest, AChiefThatFailsStopsTheOthersAtOnce) {
  for (int code : {2, 128 + SIGUSR1}) {
    FakeCluster cluster(absl::StrCat("chief_fails_", code), {1, 2});
    cluster.options().grace_period = absl::Seconds(40);
    cluster.Script("ALL", "on_term:143;ready;wait");
    cluster.Script("worker_0", code == 2 ? "await:ps_0.ready,worker_1.ready;exit:2"
                                         : absl::StrCat("await:ps_0.ready,worker_1.ready;raise:", SIGUSR1));
    RunResult result = cluster.Run();
    EXPECT_EQ(result.code, code) << result.err;
    EXPECT_THAT(result.err, HasSubstr(absl::StrCat("the chief (worker:0) exited with code ", code,
                                                   "; stopping ps:0, worker:1")));
    EXPECT_EQ(cluster.Signals("ps_0"), "SIGTERM\n");
    EXPECT_EQ(cluster.Signals("worker_1"), "SIGTERM\n");
    EXPECT_LT(result.elapsed, std::chrono::seconds(30));
  }
}

TEST(RunLocalClusterTest, TasksMayExitByThemselvesWithinTheGracePeriod) {
  FakeCluster cluster("grace", {1, 1});
  cluster.options().grace_period = absl::Seconds(40);
  cluster.Script("ps_0", "on_term:0;ready;sleep:300;exit:0");
  cluster.Script("worker_0", "await:ps_0.ready;exit:0");
  RunResult result = cluster.Run();
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_FALSE(FileExists(absl::StrCat(cluster.dir(), "/ps_0.signals"))) << cluster.Signals("ps_0");
  EXPECT_THAT(result.err, Not(HasSubstr("sending SIGTERM")));
  // It returned when the ps exited, not at the end of the grace period.
  EXPECT_LT(result.elapsed, std::chrono::seconds(30));
}

// An environment or flags that name a task, or a flag a cluster cannot honour.
TEST(RunLocalClusterTest, RefusesAnEnvironmentOrFlagsItCannotHonour) {
  struct Case {
    std::vector<std::string> env;
    std::vector<std::string> args;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {{"TF_CONFIG={\"task\": {\"type\": \"worker\"}}"},
            {},
            "--local_cluster gives each task its own TF_CONFIG; unset TF_CONFIG"},
           {{"SLURM_PROCID=0"}, {}, "SLURM_PROCID=0 says this process is one task of a Slurm step"},
           {{}, {"cfg.pbtxt", "--job=worker"}, "drop --job"},
           {{}, {"cfg.pbtxt", "--task", "1"}, "drop --task"},
           {{}, {"cfg.pbtxt", "--trace_steps=2", "--trace_device_time"}, "--trace_device_time works in single-process"},
       }) {
    FakeCluster cluster("refusals", {1, 1});
    for (const std::string& entry : c.env) cluster.options().environment->push_back(entry);
    cluster.options().args = c.args;
    RunResult result = cluster.Run();
    EXPECT_EQ(result.code, 2) << c.message;
    EXPECT_THAT(result.err, HasSubstr(c.message));
    EXPECT_EQ(result.out, "") << "started anyway";
    EXPECT_TRUE(TaskPids(cluster.dir()).empty()) << "started anyway";
  }
}

TEST(RunLocalClusterTest, AnEmptyTfConfigIsNotRefusedAndIsReplaced) {
  FakeCluster cluster("empty_tf_config", {0, 1});
  cluster.options().environment->push_back("TF_CONFIG=");
  cluster.Script("ALL", "tfconfig");
  RunResult result = cluster.Run();
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("[worker:0] TF_CONFIG={\"cluster\""));
}

TEST(RunLocalClusterTest, AProgramThatCannotRunIsAnErrorAndStartsNothing) {
  FakeCluster cluster("no_program", {1, 1});
  cluster.options().program = absl::StrCat(cluster.dir(), "/no-such-train");
  RunResult result = cluster.Run();
  EXPECT_EQ(result.code, 1) << result.err;
  EXPECT_THAT(result.err, HasSubstr("cannot start task ps:0: cannot run "));
  EXPECT_THAT(result.err, HasSubstr("No such file or directory"));
}

}  // namespace
}  // namespace sluice
