// The operating-system side of the local cluster launcher (local_cluster.h):
// picking free loopback ports and starting one task as a child process whose
// stdout and stderr come back through pipes. No threads, no gRPC: the
// launcher forks only from a process that has never started gRPC
// (DESIGN.md "Distribution": don't fork after gRPC starts).
//
// Ownership: a TaskProcess's file descriptors belong to the caller, who
// closes them; its pid is the caller's child, which the caller must reap
// (waitpid).
// Thread safety: the functions may be called from any thread; StartTaskProcess
// blocks every signal in the calling thread for the moment of the fork.
#ifndef SLUICE_CMD_TRAIN_TASK_PROCESS_H_
#define SLUICE_CMD_TRAIN_TASK_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice {

// `count` distinct TCP ports on 127.0.0.1 that were free a moment ago, for
// the tasks to bind. They are drawn at random from [kLowestPickedPort, the
// kernel's ephemeral range) and each is bound, and held until all are picked
// (so they differ); then they are closed for the tasks to bind.
//
// Why below the ephemeral range (net.ipv4.ip_local_port_range, 32768-60999 by
// default): the kernel hands ports of that range to every outgoing connection
// and to bind(port 0), so a port picked with bind(0) and released can be taken
// by any client of the machine connecting anywhere (gRPC channels of other
// runs) before the task binds it. Below the range only a process binding that
// very port can take it in the short window before the task binds; a task
// that cannot bind fails and the run is started again. When the range leaves
// fewer than 1000 ports below it, the kernel's bind(0) picks instead. The
// sockets are never listened on, so nothing lingers in TIME_WAIT.
// Errors: Unavailable when the system refuses a socket or a bind.
absl::StatusOr<std::vector<int>> PickFreeLoopbackPorts(int count);
constexpr int kLowestPickedPort = 10000;

struct TaskProcessSpec {
  std::string program;            // path given to execve
  std::vector<std::string> argv;  // argv[0] first
  std::vector<std::string> env;   // "NAME=value" entries: the child's whole environment
};

struct TaskProcess {
  pid_t pid = -1;
  int stdout_fd = -1;  // read ends of the child's stdout and stderr pipes:
  int stderr_fd = -1;  // non-blocking and close-on-exec
};

// Starts `spec` as a child (fork + execve) and returns once execve has
// succeeded. The child gets /dev/null as stdin, pipes as stdout and stderr,
// a process group of its own (so a terminal's Ctrl-C reaches only the
// launcher, which forwards it once), default dispositions for SIGTERM, SIGINT
// and SIGCHLD, the caller's signal mask, and SIGKILL should the calling thread
// end before the child does (PR_SET_PDEATHSIG: no task outlives a launcher
// that was killed). Between fork and execve the child calls only
// async-signal-safe functions.
// Errors: Unavailable when a pipe or the fork fails; NotFound,
// PermissionDenied or FailedPrecondition (with the program and errno's text)
// when execve fails, in which case the child has been reaped.
absl::StatusOr<TaskProcess> StartTaskProcess(const TaskProcessSpec& spec);

}  // namespace sluice

#endif  // SLUICE_CMD_TRAIN_TASK_PROCESS_H_
