// SignalRelay (signal_relay.h): SIGTERM, SIGINT and SIGCHLD as bytes on a pipe.
#include "cmd/train/signal_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

constexpr int kSignals[3] = {SIGTERM, SIGINT, SIGCHLD};

// The write end of the live relay's pipe, or -1. Lock-free, so the handler
// may read it.
std::atomic<int> g_relay_write_fd{-1};
std::atomic<bool> g_relay_installed{false};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free int");

void RelaySignal(int sig) {
  const int saved_errno = errno;
  const int fd = g_relay_write_fd.load();
  if (fd >= 0) {
    const unsigned char byte = static_cast<unsigned char>(sig);
    // A full pipe drops the byte: the loop is behind by 64 KiB of signals and
    // will look at the children anyway.
    ssize_t ignored = write(fd, &byte, 1);
    (void)ignored;
  }
  errno = saved_errno;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SignalRelay>> SignalRelay::Install() {
  if (g_relay_installed.exchange(true)) {
    return absl::FailedPreconditionError("a local cluster is already running in this process");
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int error = errno;
    g_relay_installed = false;
    return absl::UnavailableError(absl::StrCat("pipe2: ", std::strerror(error)));
  }
  return std::unique_ptr<SignalRelay>(new SignalRelay(fds[0], fds[1]));
}

SignalRelay::SignalRelay(int read_fd, int write_fd) : read_fd_(read_fd), write_fd_(write_fd) {
  g_relay_write_fd = write_fd_;
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = RelaySignal;
  sigfillset(&action.sa_mask);
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &action, &previous_[i]);
}

SignalRelay::~SignalRelay() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &previous_[i], nullptr);
  // A handler that started before the restore may still be about to write;
  // taking the fd away first keeps it from writing to a reused descriptor
  // in all but the narrowest of windows.
  g_relay_write_fd = -1;
  close(write_fd_);
  close(read_fd_);
  g_relay_installed = false;
}

std::vector<int> SignalRelay::TakeSignals() {
  std::vector<int> signals;
  unsigned char buffer[256];
  while (true) {
    const ssize_t n = read(read_fd_, buffer, sizeof(buffer));
    if (n > 0) {
      signals.insert(signals.end(), buffer, buffer + n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // empty (EAGAIN) or an error: nothing more to take now
    }
  }
  return signals;
}

}  // namespace sluice
