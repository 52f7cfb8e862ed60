// fake_task: a stand-in for `train` in local_cluster_test. It reads its task
// from TF_CONFIG and runs the script in FAKE_TASK_<job>_<index> (e.g.
// FAKE_TASK_worker_1), else FAKE_TASK_ALL, else does nothing and exits 0.
// A script is commands separated by ';', each "name" or "name:argument":
//   out:TEXT / err:TEXT       TEXT and '\n' to stdout / stderr
//   outpart:TEXT              TEXT without '\n' to stdout
//   slowline:TEXT             TEXT and '\n' to stdout, 3 bytes per write, 1 ms apart
//   lines:N                   "line I of JOB:INDEX" for I in 0..N-1, each in two writes
//   errlines:N                the same to stderr
//   bigline:N                 "big JOB:INDEX " and N 'x's and '\n', in one write
//   tfconfig                  "TF_CONFIG=" and its value
//   argv                      "argv:" and each argument after a space
//   env:NAME                  "NAME=value", or "NAME unset"
//   bind                      binds its own TF_CONFIG address: "bind ok" or "bind failed: why"
//   ready                     creates DIR/JOB_INDEX.ready
//   await:F1,F2               waits until the files DIR/F1, DIR/F2... exist
//   await_reaped:JOB_INDEX    waits until that task's pid (DIR/JOB_INDEX.pid) is gone,
//                             i.e. the launcher has reaped it
//   on_term:CODE              SIGTERM/SIGINT: append the signal's name to DIR/JOB_INDEX.signals, exit CODE
//   ignore_term               the same, but go on
//   wait                      sleep until killed
//   sleep:MS                  sleep MS milliseconds
//   exit:CODE                 exit with CODE
//   raise:SIG                 die of signal SIG
// DIR is FAKE_TASK_DIR; when set, the task first writes its pid to
// DIR/JOB_INDEX.pid. Every task dies of SIGALRM after 60 s whatever it does,
// so a broken test leaves nothing behind for long.
// Thread safety: single-threaded; the signal handler calls only open, write,
// close and _exit.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/distributed/cluster_spec.h"

namespace {

std::string g_dir;
std::string g_name;  // "worker_1"
char g_signals_path[4096];
int g_term_exit_code = -1;  // -1: record and go on

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

void OnTerm(int sig) {
  const char* name = sig == SIGTERM ? "SIGTERM\n" : sig == SIGINT ? "SIGINT\n" : "other\n";
  int fd = open(g_signals_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    ssize_t ignored = write(fd, name, std::strlen(name));
    (void)ignored;
    close(fd);
  }
  if (g_term_exit_code >= 0) _exit(g_term_exit_code);
}

void CatchTerm(int exit_code) {
  g_term_exit_code = exit_code;
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = OnTerm;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

void WriteFile(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  WriteAll(fd, text);
  close(fd);
}

std::string ReadFile(const std::string& path) {
  std::string text;
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return text;
  char buffer[256];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(n));
  close(fd);
  return text;
}

[[noreturn]] void Fail(const std::string& message) {
  WriteAll(2, "fake_task: " + message + "\n");
  _exit(120);
}

int IntArg(const std::string& command, const std::string& arg) {
  int value = 0;
  if (!absl::SimpleAtoi(arg, &value)) Fail("bad number in '" + command + "'");
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  alarm(60);
  const char* tf_config_text = std::getenv("TF_CONFIG");
  if (tf_config_text == nullptr) Fail("no TF_CONFIG");
  auto tf_config = sluice::distributed::ParseTfConfig(tf_config_text);
  if (!tf_config.ok()) Fail(std::string(tf_config.status().message()));
  if (!tf_config->task.has_value()) Fail("TF_CONFIG has no task");
  const sluice::distributed::TaskId task = *tf_config->task;
  const std::string task_name = task.ToString();
  g_name = absl::StrCat(task.job, "_", task.index);
  if (const char* dir = std::getenv("FAKE_TASK_DIR")) g_dir = dir;
  std::snprintf(g_signals_path, sizeof(g_signals_path), "%s/%s.signals", g_dir.c_str(), g_name.c_str());
  if (!g_dir.empty()) WriteFile(absl::StrCat(g_dir, "/", g_name, ".pid"), std::to_string(getpid()));

  const char* script = std::getenv(absl::StrCat("FAKE_TASK_", g_name).c_str());
  if (script == nullptr) script = std::getenv("FAKE_TASK_ALL");
  if (script == nullptr) return 0;
  for (absl::string_view command_view : absl::StrSplit(script, ';', absl::SkipEmpty())) {
    const std::string command(command_view);
    const size_t colon = command.find(':');
    const std::string name = command.substr(0, colon);
    const std::string arg = colon == std::string::npos ? "" : command.substr(colon + 1);
    if (name == "out") {
      WriteAll(1, arg + "\n");
    } else if (name == "err") {
      WriteAll(2, arg + "\n");
    } else if (name == "outpart") {
      WriteAll(1, arg);
    } else if (name == "slowline") {
      const std::string line = arg + "\n";
      for (size_t i = 0; i < line.size(); i += 3) {
        WriteAll(1, line.substr(i, 3));
        usleep(1000);
      }
    } else if (name == "lines" || name == "errlines") {
      const int fd = name == "lines" ? 1 : 2;
      for (int i = 0, n = IntArg(command, arg); i < n; ++i) {
        const std::string line = absl::StrCat("line ", i, " of ", task_name, "\n");
        WriteAll(fd, line.substr(0, line.size() / 2));
        WriteAll(fd, line.substr(line.size() / 2));
      }
    } else if (name == "bigline") {
      WriteAll(1, absl::StrCat("big ", task_name, " ", std::string(IntArg(command, arg), 'x'), "\n"));
    } else if (name == "tfconfig") {
      WriteAll(1, absl::StrCat("TF_CONFIG=", tf_config_text, "\n"));
    } else if (name == "argv") {
      std::string line = "argv:";
      for (int i = 0; i < argc; ++i) absl::StrAppend(&line, " ", argv[i]);
      WriteAll(1, line + "\n");
    } else if (name == "env") {
      const char* value = std::getenv(arg.c_str());
      WriteAll(1, value == nullptr ? arg + " unset\n" : absl::StrCat(arg, "=", value, "\n"));
    } else if (name == "bind") {
      auto address = tf_config->cluster.Address(task);
      int port = 0;
      const size_t port_at = address.ok() ? address->rfind(':') : std::string::npos;
      if (port_at == std::string::npos || !absl::SimpleAtoi(address->substr(port_at + 1), &port)) {
        Fail("no port for my task in TF_CONFIG");
      }
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in sa;
      std::memset(&sa, 0, sizeof(sa));
      sa.sin_family = AF_INET;
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      sa.sin_port = htons(static_cast<uint16_t>(port));
      if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0 && listen(fd, 1) == 0) {
        WriteAll(1, "bind ok\n");
      } else {
        WriteAll(1, absl::StrCat("bind failed: ", std::strerror(errno), "\n"));
      }
    } else if (name == "ready") {
      WriteFile(absl::StrCat(g_dir, "/", g_name, ".ready"), "");
    } else if (name == "await") {
      for (absl::string_view file : absl::StrSplit(arg, ',')) {
        const std::string path = absl::StrCat(g_dir, "/", file);
        for (int waited_ms = 0; !FileExists(path); waited_ms += 5) {
          if (waited_ms > 30000) Fail("gave up waiting for " + path);
          usleep(5000);
        }
      }
    } else if (name == "await_reaped") {
      const std::string pid_path = absl::StrCat(g_dir, "/", arg, ".pid");
      int pid = 0;
      for (int waited_ms = 0;; waited_ms += 5) {
        if (waited_ms > 30000) Fail("gave up waiting for " + arg + " to be reaped");
        // A zombie still answers kill(pid, 0); only a reaped pid is gone.
        if (absl::SimpleAtoi(ReadFile(pid_path), &pid) && pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) break;
        usleep(5000);
      }
    } else if (name == "on_term") {
      CatchTerm(IntArg(command, arg));
    } else if (name == "ignore_term") {
      CatchTerm(-1);
    } else if (name == "wait") {
      while (true) pause();
    } else if (name == "sleep") {
      usleep(static_cast<useconds_t>(IntArg(command, arg)) * 1000);
    } else if (name == "exit") {
      _exit(IntArg(command, arg));
    } else if (name == "raise") {
      const int sig = IntArg(command, arg);
      signal(sig, SIG_DFL);
      raise(sig);
      Fail("survived " + arg);
    } else {
      Fail("unknown command '" + command + "'");
    }
  }
  return 0;
}
