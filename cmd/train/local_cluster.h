// `train CONFIG --local_cluster ps=1,worker=2`: the whole cluster of a run on
// this machine (DESIGN.md "Distribution"). The launcher picks a free
// 127.0.0.1 port per task, starts one `train` process per task with the same
// arguments and a TF_CONFIG naming the whole cluster and that task, prefixes
// every line the tasks print with "[job:index] ", forwards SIGTERM and SIGINT
// to the tasks, and exits with the chief's (worker 0's) code. It knows nothing
// of the distributed runtime: the tasks find one another through TF_CONFIG.
//
// Exit code of RunLocalCluster (DESIGN.md's table: 0 done, 1-127 permanent,
// >= 128 retryable):
//  - the chief's exit code; a task killed by signal S counts as 128 + S;
//  - but if another task exits with a permanent code (1-127) while the chief
//    still runs, the launcher says "task ps:0 exited with code N; stopping the
//    cluster", sends SIGTERM to the other tasks (SIGKILL after the grace
//    period), and returns that first permanent code;
//  - 2 when it refuses to start: TF_CONFIG or SLURM_PROCID already in the
//    environment, or --job/--task among the arguments;
//  - 1 (or 129 when the system is short of ports, pipes or processes) when a
//    task cannot be started; the tasks already started are killed.
// With restarts (LocalClusterShape::restarts) a task other than the chief
// that dies (a signal, a code >= 128) is started again; a task that dies and
// is not started again stops the cluster (SIGTERM to the others): nothing
// trains without a ps's variables, and a sync step waits for every worker.
// After the chief exits with 0 the other tasks get the grace period to exit
// by themselves (ps tasks and workers wait for the chief's Shutdown), then
// SIGTERM, then after `kill_delay` SIGKILL; after any other code they get
// SIGTERM at once (SIGKILL after the grace period). Every task is reaped before
// RunLocalCluster returns (in the rare case of a task that survives SIGKILL
// for `kill_delay` it says so and returns without it).
//
// Thread safety: one RunLocalCluster at a time per process (a second
// concurrent call returns 1 at once). While it runs it owns the process's
// SIGTERM, SIGINT and SIGCHLD handlers and restores the previous ones on
// return; every task is started from the calling thread, and a task is
// SIGKILLed if that thread ends first (task_process.h).
#ifndef SLUICE_CMD_TRAIN_LOCAL_CLUSTER_H_
#define SLUICE_CMD_TRAIN_LOCAL_CLUSTER_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace sluice {

// The most tasks of one job --local_cluster starts.
inline constexpr int kMaxLocalClusterTasksPerJob = 64;
inline constexpr int kMaxLocalClusterRestarts = 1000;

// How many tasks of each job.
struct LocalClusterShape {
  int num_ps = 0;
  int num_workers = 0;
  // "restarts=N": a task other than the chief that dies (a signal, or a
  // retryable exit code >= 128) while the chief runs is started again, with
  // the same address and TF_CONFIG, up to N times per task.
  int restarts = 0;
};

// Parses "ps=1,worker=2" (items in any order; blanks around items and '='
// allowed). Jobs are "ps" (0..64 tasks, may be left out) and "worker" (1..64,
// required; worker 0 is the chief); "restarts=N" (0..1000) is optional. Errors are InvalidArgument naming the
// item: an unknown job (with a did-you-mean), a job given twice, a count that
// is not a number in range, an item without '=', an empty spec or item.
absl::StatusOr<LocalClusterShape> ParseLocalClusterSpec(absl::string_view spec);

struct LocalClusterOptions {
  // What every task runs: execve(program, {argv0, args...}). The train binary
  // passes "/proc/self/exe" and its own argv[0]. An empty argv0 means program.
  std::string program;
  std::string argv0;
  // The arguments of every task: the launcher's own minus --local_cluster.
  std::vector<std::string> args;
  LocalClusterShape shape;
  // After the chief exits: how long the other tasks may take to exit by
  // themselves before SIGTERM. Also how long a cluster stopped because of a
  // failed task has between SIGTERM and SIGKILL.
  absl::Duration grace_period = absl::Seconds(10);
  // After a SIGTERM sent because the grace period ran out: how long until
  // SIGKILL. And after SIGKILL: how long to wait for the kernel to end the task.
  absl::Duration kill_delay = absl::Seconds(5);
  // The environment every task starts from ("NAME=value" entries), to which
  // TF_CONFIG is added; also what the refusals look at. nullopt: this
  // process's environment (tests inject their own).
  std::optional<std::vector<std::string>> environment;
};

// Runs the cluster until every task has ended; returns the exit code (above).
// `out` gets a first line naming the tasks and their addresses, then the
// tasks' stdout lines; `err` the tasks' stderr lines and the launcher's own
// messages (each starting "local_cluster: "). Lines are written whole.
int RunLocalCluster(const LocalClusterOptions& options, std::ostream& out, std::ostream& err);

}  // namespace sluice

#endif  // SLUICE_CMD_TRAIN_LOCAL_CLUSTER_H_
