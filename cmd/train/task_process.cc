// task_process.h: free loopback ports, and fork + execve of one task.
#include "cmd/train/task_process.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

std::string ErrnoText(int error) { return std::strerror(error); }

// Closes the descriptor it holds when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

absl::Status MakePipe(Fd* read_end, Fd* write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::UnavailableError(absl::StrCat("pipe2: ", ErrnoText(errno)));
  }
  read_end->Reset(fds[0]);
  write_end->Reset(fds[1]);
  return absl::OkStatus();
}

absl::Status ExecError(const std::string& program, int error) {
  std::string message = absl::StrCat("cannot run ", program, ": ", ErrnoText(error));
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::FailedPreconditionError(message);
  }
}

// The child, between fork and execve: async-signal-safe calls only.
[[noreturn]] void ExecChild(const char* program, char* const* argv, char* const* envp, int stdin_fd, int stdout_fd,
                            int stderr_fd, int status_fd, pid_t parent, const sigset_t& caller_mask) {
  struct sigaction default_action;
  std::memset(&default_action, 0, sizeof(default_action));
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGCHLD}) sigaction(sig, &default_action, nullptr);
  int error = 0;
  if (setpgid(0, 0) != 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) error = errno;
  // The launcher may have ended before PR_SET_PDEATHSIG took hold.
  if (error == 0 && getppid() != parent) _exit(127);
  if (error == 0 && (dup2(stdin_fd, STDIN_FILENO) < 0 || dup2(stdout_fd, STDOUT_FILENO) < 0 ||
                     dup2(stderr_fd, STDERR_FILENO) < 0)) {
    error = errno;
  }
  if (error == 0) {
    sigprocmask(SIG_SETMASK, &caller_mask, nullptr);
    execve(program, argv, envp);
    error = errno;
  }
  // Tell the parent why; the status pipe closes on a successful execve instead.
  ssize_t ignored = write(status_fd, &error, sizeof(error));
  (void)ignored;
  _exit(127);
}

// The lowest port of the kernel's ephemeral range (32768 when it cannot be read).
int EphemeralRangeLow() {
  int low = 32768;
  FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  if (f != nullptr) {
    if (std::fscanf(f, "%d", &low) != 1) low = 32768;
    std::fclose(f);
  }
  return low;
}

// Binds `socket_fd` to 127.0.0.1:port (0: the kernel picks) and returns the
// port bound, or -1 with errno set.
int BindLoopback(int socket_fd, int port) {
  sockaddr_in address;
  std::memset(&address, 0, sizeof(address));
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) return -1;
  socklen_t length = sizeof(address);
  if (getsockname(socket_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return -1;
  return ntohs(address.sin_port);
}

}  // namespace

absl::StatusOr<std::vector<int>> PickFreeLoopbackPorts(int count) {
  std::vector<std::unique_ptr<Fd>> sockets;  // held until all are picked, so the ports differ
  std::vector<int> ports;
  const int high = EphemeralRangeLow() - 1;
  std::mt19937 rng(static_cast<uint32_t>(std::random_device{}()) ^ static_cast<uint32_t>(getpid()));
  std::uniform_int_distribution<int> below_range(kLowestPickedPort, high);
  const int tries = high - kLowestPickedPort >= 1000 ? 200 * count : 0;
  for (int i = 0; i < tries && static_cast<int>(ports.size()) < count; ++i) {
    const int port = below_range(rng);
    if (std::find(ports.begin(), ports.end(), port) != ports.end()) continue;
    Fd socket_fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (socket_fd.get() < 0) return absl::UnavailableError(absl::StrCat("socket: ", ErrnoText(errno)));
    if (BindLoopback(socket_fd.get(), port) != port) continue;  // taken
    ports.push_back(port);
    sockets.push_back(std::make_unique<Fd>(socket_fd.Release()));
  }
  while (static_cast<int>(ports.size()) < count) {  // no room below the range: the kernel's pick
    Fd socket_fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (socket_fd.get() < 0) return absl::UnavailableError(absl::StrCat("socket: ", ErrnoText(errno)));
    const int port = BindLoopback(socket_fd.get(), 0);
    if (port < 0) return absl::UnavailableError(absl::StrCat("bind 127.0.0.1:0: ", ErrnoText(errno)));
    ports.push_back(port);
    sockets.push_back(std::make_unique<Fd>(socket_fd.Release()));
  }
  return ports;  // `sockets` close here
}

absl::StatusOr<TaskProcess> StartTaskProcess(const TaskProcessSpec& spec) {
  // Everything the child needs is built before the fork.
  std::vector<char*> argv;
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& entry : spec.env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);

  Fd dev_null(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (dev_null.get() < 0) return absl::UnavailableError(absl::StrCat("open /dev/null: ", ErrnoText(errno)));
  Fd out_read, out_write, err_read, err_write, status_read, status_write;
  absl::Status pipes = MakePipe(&out_read, &out_write);
  if (pipes.ok()) pipes = MakePipe(&err_read, &err_write);
  if (pipes.ok()) pipes = MakePipe(&status_read, &status_write);
  if (!pipes.ok()) return pipes;

  // Block every signal across the fork, so that no handler of the launcher
  // runs in the child before it has restored the defaults.
  sigset_t all, caller_mask;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &caller_mask);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    ExecChild(spec.program.c_str(), argv.data(), envp.data(), dev_null.get(), out_write.get(), err_write.get(),
              status_write.get(), parent, caller_mask);
  }
  const int fork_error = errno;
  pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
  if (pid < 0) return absl::UnavailableError(absl::StrCat("fork: ", ErrnoText(fork_error)));

  out_write.Reset();
  err_write.Reset();
  status_write.Reset();
  // EOF: execve succeeded (the pipe is close-on-exec). Otherwise the child's errno.
  int exec_error = 0;
  ssize_t n;
  do {
    n = read(status_read.get(), &exec_error, sizeof(exec_error));
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    int ignored_status;
    while (waitpid(pid, &ignored_status, 0) < 0 && errno == EINTR) {
    }
    return ExecError(spec.program, exec_error);
  }
  for (const Fd* fd : {&out_read, &err_read}) {
    fcntl(fd->get(), F_SETFL, fcntl(fd->get(), F_GETFL) | O_NONBLOCK);
  }
  TaskProcess task;
  task.pid = pid;
  task.stdout_fd = out_read.Release();
  task.stderr_fd = err_read.Release();
  return task;
}

}  // namespace sluice
