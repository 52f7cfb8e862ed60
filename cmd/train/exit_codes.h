// The exit codes of `train`, for batch schedulers (DESIGN.md): 0 done,
// 1-127 permanent errors (2: bad config or usage), >= 128 retryable (143:
// stopped by SIGTERM/SIGINT after a checkpoint; 129: a transient failure).
#ifndef SLUICE_CMD_TRAIN_EXIT_CODES_H_
#define SLUICE_CMD_TRAIN_EXIT_CODES_H_

#include <cstdlib>

#include "absl/status/status.h"

namespace sluice {

constexpr int kExitDone = 0;
constexpr int kExitPermanentError = 1;
constexpr int kExitBadConfig = 2;
constexpr int kExitRetryable = 129;
constexpr int kExitPreempted = 143;

// Not an exit code: RunTrainer's answer when a task of a replicated run lost
// a peer and recovers by starting itself again (main execs the same command;
// the environment's SLUICE_RECOVERIES counts how often).
constexpr int kRestartThisTask = -1;
constexpr char kRecoveriesEnv[] = "SLUICE_RECOVERIES";

// How many times this task has restarted itself so far (0 at first).
inline int RecoveriesSoFar() {
  const char* count = std::getenv(kRecoveriesEnv);
  return count != nullptr ? std::atoi(count) : 0;
}

// The /metrics port this task serves when its config asks for a free one
// (metrics_port 0): the port it served before it restarted itself (main sets
// it for the restarted process), or the one --local_cluster picked for it.
// The same port across restarts keeps a scrape config working. 0 when none.
constexpr char kMetricsPortEnv[] = "SLUICE_METRICS_PORT";
inline int AssignedMetricsPort() {
  const char* port = std::getenv(kMetricsPortEnv);
  const int p = port != nullptr ? std::atoi(port) : 0;
  return p > 0 && p <= 65535 ? p : 0;
}

// Unavailable, Aborted, DeadlineExceeded and ResourceExhausted may pass on a
// retry; everything else is permanent.
inline int ExitCodeForStatus(const absl::Status& s) {
  if (s.ok()) return kExitDone;
  switch (s.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
      return kExitRetryable;
    default:
      return kExitPermanentError;
  }
}

}  // namespace sluice

#endif  // SLUICE_CMD_TRAIN_EXIT_CODES_H_
