// SignalRelay: the self-pipe trick for the local cluster launcher
// (local_cluster.h). While a SignalRelay lives, SIGTERM, SIGINT and SIGCHLD
// are caught by a handler that only writes the signal's number (one byte) to
// a non-blocking pipe; the launcher's poll loop watches the pipe's read end
// and acts on the signals in ordinary code (forwarding SIGTERM/SIGINT to the
// tasks, reaping on SIGCHLD). The handler calls nothing but write(2) and
// touches only an atomic int, so it is async-signal-safe.
//
// Ownership: the relay owns its pipe; destroying it restores the handlers
// that were there before and closes the pipe.
// Thread safety: at most one SignalRelay per process (Install refuses a
// second). The signals may arrive on any thread. TakeSignals is for one
// thread at a time.
#ifndef SLUICE_CMD_TRAIN_SIGNAL_RELAY_H_
#define SLUICE_CMD_TRAIN_SIGNAL_RELAY_H_

#include <signal.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice {

class SignalRelay {
 public:
  // Creates the pipe and installs the handlers. FailedPrecondition when a
  // SignalRelay already exists; Unavailable when the pipe cannot be made.
  static absl::StatusOr<std::unique_ptr<SignalRelay>> Install();
  ~SignalRelay();

  SignalRelay(const SignalRelay&) = delete;
  SignalRelay& operator=(const SignalRelay&) = delete;

  // Becomes readable when a signal has arrived.
  int read_fd() const { return read_fd_; }
  // The signals that arrived since the last call, in order; never blocks.
  std::vector<int> TakeSignals();

 private:
  SignalRelay(int read_fd, int write_fd);

  int read_fd_;
  int write_fd_;
  struct sigaction previous_[3];
};

}  // namespace sluice

#endif  // SLUICE_CMD_TRAIN_SIGNAL_RELAY_H_
