// The TCP tensor transport (see tcp_tensor_transport.h).
#include "engine/distributed/tcp_tensor_transport.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "engine/distributed/grpc_tensor_coding.h"

namespace sluice {
namespace distributed {
namespace {

using namespace tcp_tensor;  // NOLINT: this file's own constants

// How long a reader waits in recv before it checks for a silent peer.
constexpr int kReadPollMs = 250;
// A client's request write gives up (and the connection with it) after this.
constexpr int kSendTimeoutMs = 5000;

void PutU32(uint32_t v, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void PutU64(uint64_t v, char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t GetU32(const char* in) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}
uint64_t GetU64(const char* in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

struct Prefix {
  uint8_t type = 0;
  uint32_t length = 0;
  uint64_t call_id = 0;
};

void EncodePrefix(FrameType type, uint32_t length, uint64_t call_id, char* out) {
  out[0] = static_cast<char>(type);
  out[1] = out[2] = out[3] = 0;
  PutU32(length, out + 4);
  PutU64(call_id, out + 8);
}

// False when the three padding bytes are not zero.
bool DecodePrefix(const char* in, Prefix* p) {
  if (in[1] != 0 || in[2] != 0 || in[3] != 0) return false;
  p->type = static_cast<uint8_t>(in[0]);
  p->length = GetU32(in + 4);
  p->call_id = GetU64(in + 8);
  return true;
}

std::string Errno(const char* what) { return absl::StrCat(what, ": ", std::strerror(errno)); }

// Writes every byte of `iov` (modified); false on an error (errno set).
bool WriteAll(int fd, struct iovec* iov, int count) {
  while (count > 0) {
    struct msghdr msg = {};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    const ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    size_t left = static_cast<size_t>(n);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

bool WriteFrame(int fd, FrameType type, uint64_t call_id) {
  char prefix[kPrefixBytes];
  EncodePrefix(type, 0, call_id, prefix);
  struct iovec iov = {prefix, kPrefixBytes};
  return WriteAll(fd, &iov, 1);
}

bool SplitAddress(const std::string& address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  return true;
}

// ---------------------------------------------------------------- server ----

struct ServerCall {
  uint64_t id = 0;
  RecvTensorRequest request;
  RecvTensorResult result;
  CallCancellation cancel;
};

class ServerConn;
// The connection whose reader thread this is (responses completed on it are
// written at once).
thread_local const ServerConn* tls_reading = nullptr;

class ServerConn : public std::enable_shared_from_this<ServerConn> {
 public:
  ServerConn(int fd, WorkerInterface* worker) : fd_(fd), worker_(worker) {}
  ~ServerConn() { close(fd_); }

  void Start() {
    auto self = shared_from_this();
    reader_ = std::thread([self] { self->ReadLoop(); });
    writer_ = std::thread([self] { self->WriteLoop(); });
  }
  // Wakes both threads (they end) and waits for them.
  void Stop() {
    shutdown(fd_, SHUT_RDWR);
    if (reader_.joinable()) reader_.join();
    if (writer_.joinable()) writer_.join();
  }
  bool finished() const {
    absl::MutexLock lock(&mu_);
    return closed_;
  }

 private:
  struct Pending {
    std::shared_ptr<ServerCall> call;
    absl::Status status;
  };

  void ReadLoop() {
    tls_reading = this;
    char prefix[kPrefixBytes];
    std::string body;
    while (ReadFull(prefix, kPrefixBytes)) {
      Prefix p;
      if (!DecodePrefix(prefix, &p)) break;
      if (p.type == kRecv) {
        if (p.length < 8 || p.length > 8 + kMaxKeyBytes) break;
        body.resize(p.length);
        if (!ReadFull(body.data(), p.length)) break;
        StartCall(p.call_id, static_cast<int64_t>(GetU64(body.data())), body.substr(8));
      } else if (p.type == kCancel && p.length == 0) {
        std::shared_ptr<ServerCall> call;
        {
          absl::MutexLock lock(&mu_);
          auto it = calls_.find(p.call_id);
          if (it != calls_.end()) call = it->second;
        }
        if (call != nullptr) call->cancel.StartCancel(absl::CancelledError("the client cancelled the RecvTensor"));
      } else if (p.type == kPing && p.length == 0) {
        absl::MutexLock lock(&write_mu_);
        if (!WriteFrame(fd_, kPong, p.call_id)) break;
      } else {
        break;  // not our protocol: drop the client
      }
    }
    tls_reading = nullptr;
    Close();
  }

  bool ReadFull(char* out, size_t n) {
    while (n > 0) {
      const ssize_t got = recv(fd_, out, n, 0);
      if (got > 0) {
        out += got;
        n -= static_cast<size_t>(got);
      } else if (got < 0 && errno == EINTR) {
        continue;
      } else {
        return false;
      }
    }
    return true;
  }

  void StartCall(uint64_t id, int64_t step_id, std::string key) {
    auto call = std::make_shared<ServerCall>();
    call->id = id;
    call->request.set_step_id(step_id);
    call->request.set_rendezvous_key(std::move(key));
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      calls_[id] = call;
    }
    auto self = shared_from_this();
    worker_->RecvTensorAsync(
        &call->request, &call->result, [self, call](const absl::Status& s) { self->Complete(call, s); },
        &call->cancel);
  }

  void Complete(const std::shared_ptr<ServerCall>& call, const absl::Status& status) {
    {
      absl::MutexLock lock(&mu_);
      auto it = calls_.find(call->id);
      if (it != calls_.end() && it->second == call) calls_.erase(it);
      if (closed_) return;
      if (tls_reading != this) {
        queue_.push_back(Pending{call, status});
        return;
      }
    }
    if (!WriteResponse(*call, status)) shutdown(fd_, SHUT_RDWR);
  }

  bool WriteResponse(const ServerCall& call, const absl::Status& status) {
    const RecvTensorResponseHeader header = MakeRecvTensorHeader(status, call.result, kMaxTensorBytes);
    std::string head(kPrefixBytes, '\0');
    header.AppendToString(&head);
    const size_t header_bytes = head.size() - kPrefixBytes;
    if (header_bytes > kMaxHeaderBytes) {
      RecvTensorResponseHeader error;
      StatusToProto(absl::ResourceExhaustedError(absl::StrCat("RecvTensor: the response header (", header_bytes,
                                                              " bytes) is over the TCP transport's limit")),
                    error.mutable_error());
      head.resize(kPrefixBytes);
      error.AppendToString(&head);
    }
    EncodePrefix(kResponse, static_cast<uint32_t>(head.size() - kPrefixBytes), call.id, head.data());
    struct iovec iov[2];
    iov[0] = {head.data(), head.size()};
    int count = 1;
    const int64_t tensor_bytes = header_bytes > kMaxHeaderBytes ? 0 : header.tensor_bytes();
    if (tensor_bytes > 0) {
      // The tensor's own buffer (call.result keeps it alive): no copy here.
      iov[1] = {const_cast<void*>(call.result.value.raw_data()), static_cast<size_t>(tensor_bytes)};
      count = 2;
    }
    absl::MutexLock lock(&write_mu_);
    return WriteAll(fd_, iov, count);
  }

  void WriteLoop() {
    for (;;) {
      Pending next;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &ServerConn::HasWork));
        if (closed_) return;
        next = std::move(queue_.front());
        queue_.pop_front();
      }
      if (!WriteResponse(*next.call, next.status)) {
        shutdown(fd_, SHUT_RDWR);
        return;
      }
    }
  }

  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || !queue_.empty(); }

  // The client is gone (or spoke garbage): cancel what it was waiting for.
  void Close() {
    std::vector<std::shared_ptr<ServerCall>> calls;
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
      queue_.clear();
      for (auto& [id, call] : calls_) calls.push_back(call);
      calls_.clear();
    }
    shutdown(fd_, SHUT_RDWR);
    for (auto& call : calls) call->cancel.StartCancel(absl::CancelledError("the RecvTensor client's connection closed"));
  }

  const int fd_;
  WorkerInterface* const worker_;
  std::thread reader_;
  std::thread writer_;
  absl::Mutex write_mu_;  // one frame at a time on the socket
  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::shared_ptr<ServerCall>> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

class TcpTensorServer::Impl {
 public:
  Impl(int listen_fd, WorkerInterface* worker) : listen_fd_(listen_fd), worker_(worker) {
    accept_ = std::thread([this] { AcceptLoop(); });
  }
  ~Impl() {
    Shutdown();
    close(listen_fd_);
  }

  void Shutdown() {
    {
      absl::MutexLock lock(&mu_);
      if (shut_down_) return;
      shut_down_ = true;
    }
    shutdown(listen_fd_, SHUT_RDWR);  // accept returns
    if (accept_.joinable()) accept_.join();
    std::vector<std::shared_ptr<ServerConn>> conns;
    {
      absl::MutexLock lock(&mu_);
      conns.swap(conns_);
    }
    for (auto& c : conns) c->Stop();
  }

 private:
  void AcceptLoop() {
    for (;;) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        {
          absl::MutexLock lock(&mu_);
          if (shut_down_) return;
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          absl::SleepFor(absl::Milliseconds(50));
          continue;
        }
        return;
      }
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      auto conn = std::make_shared<ServerConn>(fd, worker_);
      std::vector<std::shared_ptr<ServerConn>> done;
      {
        absl::MutexLock lock(&mu_);
        if (shut_down_) return;  // `conn` closes its socket
        // Reap connections that ended (their threads end by themselves).
        for (size_t i = 0; i < conns_.size();) {
          if (conns_[i]->finished()) {
            done.push_back(std::move(conns_[i]));
            conns_[i] = std::move(conns_.back());
            conns_.pop_back();
          } else {
            ++i;
          }
        }
        conn->Start();
        conns_.push_back(conn);
      }
      for (auto& c : done) c->Stop();
    }
  }

  const int listen_fd_;
  WorkerInterface* const worker_;
  std::thread accept_;
  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::shared_ptr<ServerConn>> conns_ ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<std::unique_ptr<TcpTensorServer>> TcpTensorServer::Start(const std::string& host, int port,
                                                                        WorkerInterface* worker) {
  struct addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  struct addrinfo* found = nullptr;
  const std::string port_text = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat("TCP tensor transport: cannot resolve '", host, "': ", gai_strerror(rc)));
  }
  std::string last_error = "no address";
  int fd = -1;
  for (struct addrinfo* a = found; a != nullptr; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_error = Errno("socket");
      continue;
    }
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0) break;
    last_error = Errno("bind/listen");
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("TCP tensor transport: cannot listen on ", host, ":", port, ": ",
                                               last_error));
  }
  struct sockaddr_storage bound = {};
  socklen_t length = sizeof(bound);
  getsockname(fd, reinterpret_cast<struct sockaddr*>(&bound), &length);
  const int actual = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<struct sockaddr_in6*>(&bound)->sin6_port
                                                       : reinterpret_cast<struct sockaddr_in*>(&bound)->sin_port);
  const bool v6 = host.find(':') != std::string::npos;
  std::string address = v6 ? absl::StrCat("[", host, "]:", actual) : absl::StrCat(host, ":", actual);
  return std::unique_ptr<TcpTensorServer>(
      new TcpTensorServer(std::make_unique<Impl>(fd, worker), std::move(address), actual));
}

TcpTensorServer::TcpTensorServer(std::unique_ptr<Impl> impl, std::string address, int port)
    : impl_(std::move(impl)), address_(std::move(address)), port_(port) {}

TcpTensorServer::~TcpTensorServer() { Shutdown(); }

void TcpTensorServer::Shutdown() { impl_->Shutdown(); }

std::string HostOfAddress(const std::string& address) {
  std::string host, port;
  if (!SplitAddress(address, &host, &port)) return address;
  return host;
}

// ---------------------------------------------------------------- client ----

namespace {

class ClientConn : public std::enable_shared_from_this<ClientConn> {
 public:
  // Connects (bounded by kConnectTimeout) and starts the reader.
  static absl::StatusOr<std::shared_ptr<ClientConn>> Connect(const std::string& task, const std::string& address) {
    std::string host, port;
    auto failed = [&](const std::string& why) {
      return absl::UnavailableError(
          absl::StrCat("RecvTensor from ", task, " (", address, ") failed: TCP tensor transport: cannot connect: ", why));
    };
    if (!SplitAddress(address, &host, &port)) return failed("not host:port");
    struct addrinfo hints = {};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    struct addrinfo* found = nullptr;
    const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
    if (rc != 0) return failed(gai_strerror(rc));
    std::string why = "no address";
    int fd = -1;
    for (struct addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
      fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd < 0) {
        why = Errno("socket");
        continue;
      }
      int err = connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
      if (err == EINPROGRESS) {
        struct pollfd pfd = {fd, POLLOUT, 0};
        const int ready = poll(&pfd, 1, static_cast<int>(absl::ToInt64Milliseconds(kConnectTimeout)));
        if (ready <= 0) {
          err = ready == 0 ? ETIMEDOUT : errno;
        } else {
          socklen_t len = sizeof(err);
          if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        }
      }
      if (err != 0) {
        why = std::strerror(err);
        close(fd);
        fd = -1;
      }
    }
    freeaddrinfo(found);
    if (fd < 0) return failed(why);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct timeval rcv = {0, kReadPollMs * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv, sizeof(rcv));
    struct timeval snd = {kSendTimeoutMs / 1000, (kSendTimeoutMs % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof(snd));
    auto conn = std::shared_ptr<ClientConn>(new ClientConn(task, address, fd));
    std::thread([conn] { conn->ReadLoop(); }).detach();
    return conn;
  }

  ~ClientConn() { close(fd_); }

  bool broken() const {
    absl::MutexLock lock(&mu_);
    return !broken_.ok();
  }

  void Call(const RecvTensorRequest& request, RecvTensorResult* result, WorkerInterface::StatusCallback done,
            CallCancellation* cancel) {
    uint64_t id;
    {
      absl::ReleasableMutexLock lock(&mu_);
      if (!broken_.ok()) {
        absl::Status s = broken_;
        lock.Release();
        done(s);
        return;
      }
      id = next_id_++;
      pending_[id] = Pending{result, std::move(done), cancel, -1};
    }
    if (cancel != nullptr) {
      std::weak_ptr<ClientConn> weak = shared_from_this();
      const int64_t token = cancel->Register([weak, id] {
        if (auto self = weak.lock()) self->CancelCall(id);
      });
      absl::MutexLock lock(&mu_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return;  // cancelled already (or the connection broke)
      it->second.token = token;
    }
    const std::string& key = request.rendezvous_key();
    char head[kPrefixBytes + 8];
    EncodePrefix(kRecv, static_cast<uint32_t>(8 + key.size()), id, head);
    PutU64(static_cast<uint64_t>(request.step_id()), head + kPrefixBytes);
    struct iovec iov[2] = {{head, sizeof(head)}, {const_cast<char*>(key.data()), key.size()}};
    bool sent;
    {
      absl::MutexLock lock(&write_mu_);
      sent = WriteAll(fd_, iov, 2);
    }
    if (!sent) Fail(absl::UnavailableError(Message(Errno("cannot send the request"))));
  }

  // Fails every pending call with `status` and closes the connection.
  void Fail(const absl::Status& status) {
    std::vector<Pending> calls;
    {
      absl::MutexLock lock(&mu_);
      if (broken_.ok()) broken_ = status;
      for (auto& [id, call] : pending_) calls.push_back(std::move(call));
      pending_.clear();
    }
    shutdown(fd_, SHUT_RDWR);
    for (Pending& call : calls) Finish(call, status);
  }

 private:
  struct Pending {
    RecvTensorResult* result = nullptr;
    WorkerInterface::StatusCallback done;
    CallCancellation* cancel = nullptr;
    int64_t token = -1;
  };

  ClientConn(std::string task, std::string address, int fd)
      : task_(std::move(task)), address_(std::move(address)), fd_(fd) {}

  std::string Message(absl::string_view why) const {
    return absl::StrCat("RecvTensor from ", task_, " (", address_, ") failed: TCP tensor transport: ", why);
  }

  static void Finish(Pending& call, const absl::Status& status) {
    if (call.cancel != nullptr) call.cancel->Deregister(call.token);
    call.done(status);
  }

  void CancelCall(uint64_t id) {
    Pending call;
    {
      absl::MutexLock lock(&mu_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return;
      call = std::move(it->second);
      pending_.erase(it);
    }
    {
      // Best effort: the server cancels its side too.
      absl::MutexLock lock(&write_mu_);
      WriteFrame(fd_, kCancel, id);
    }
    // The hook is running: no Deregister.
    call.done(absl::CancelledError(Message("cancelled by its caller")));
  }

  // Reads exactly n bytes; while calls are pending, pings a silent peer and
  // gives up when it stays silent.
  absl::Status ReadFull(char* out, size_t n, bool in_frame) {
    while (n > 0) {
      const ssize_t got = recv(fd_, out, n, 0);
      if (got > 0) {
        out += got;
        n -= static_cast<size_t>(got);
        last_rx_ = absl::Now();
        ping_out_ = false;
        continue;
      }
      if (got == 0) return absl::UnavailableError(Message("the connection closed"));
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return absl::UnavailableError(Message(Errno("read")));
      if (broken()) return absl::UnavailableError(Message("the connection was closed"));
      const absl::Time now = absl::Now();
      if (ping_out_) {
        if (now - ping_sent_ >= kPingTimeout) {
          return absl::UnavailableError(Message(absl::StrCat(
              "no answer to a keepalive ping in ", absl::FormatDuration(kPingTimeout), " (the task is frozen or unreachable)")));
        }
        continue;
      }
      bool busy = in_frame;
      if (!busy) {
        absl::MutexLock lock(&mu_);
        busy = !pending_.empty();
      }
      if (busy && now - last_rx_ >= kPingAfter) {
        absl::MutexLock lock(&write_mu_);
        if (!WriteFrame(fd_, kPing, 0)) return absl::UnavailableError(Message(Errno("cannot send a ping")));
        ping_out_ = true;
        ping_sent_ = now;
      }
    }
    return absl::OkStatus();
  }

  void ReadLoop() {
    last_rx_ = absl::Now();
    char prefix[kPrefixBytes];
    std::string header_bytes;
    for (;;) {
      absl::Status s = ReadFull(prefix, kPrefixBytes, false);
      if (!s.ok()) return Fail(s);
      Prefix p;
      if (!DecodePrefix(prefix, &p)) return Fail(absl::DataLossError(Message("malformed frame (padding)")));
      if (p.type == kPong && p.length == 0) continue;
      if (p.type != kResponse) {
        return Fail(absl::DataLossError(
            Message(absl::StrCat("malformed frame (type ", p.type, ", length ", p.length, ")"))));
      }
      if (p.length > kMaxHeaderBytes) {
        return Fail(absl::DataLossError(Message(absl::StrCat("malformed response: a header of ", p.length, " bytes"))));
      }
      // Grows as bytes come, so a claimed length allocates only what arrives.
      header_bytes.clear();
      while (header_bytes.size() < p.length) {
        const size_t have = header_bytes.size();
        const size_t take = std::min<size_t>(p.length - have, size_t{1} << 20);
        header_bytes.resize(have + take);
        s = ReadFull(header_bytes.data() + have, take, true);
        if (!s.ok()) return Fail(s);
      }
      RecvTensorResponseHeader header;
      if (!header.ParseFromString(header_bytes)) {
        return Fail(absl::DataLossError(
            Message(absl::StrCat("malformed response: the header (", p.length, " bytes) does not parse"))));
      }
      if (header.tensor_bytes() > kMaxTensorBytes) {
        return Fail(absl::DataLossError(
            Message(absl::StrCat("malformed response: tensor_bytes ", header.tensor_bytes(), " is over the limit"))));
      }
      absl::Status worker_status;
      RecvTensorResult result;
      char* dest = nullptr;
      s = PrepareRecvTensor(header, &worker_status, &result, &dest);
      if (!s.ok()) return Fail(absl::Status(s.code(), Message(absl::StrCat("malformed response: ", s.message()))));
      if (dest != nullptr) {
        // Straight into the tensor's aligned buffer.
        s = ReadFull(dest, static_cast<size_t>(header.tensor_bytes()), true);
        if (!s.ok()) return Fail(s);
        s = FinishRecvTensor(result);
        if (!s.ok()) return Fail(absl::Status(s.code(), Message(absl::StrCat("malformed response: ", s.message()))));
      }
      Pending call;
      {
        absl::MutexLock lock(&mu_);
        auto it = pending_.find(p.call_id);
        if (it == pending_.end()) continue;  // cancelled meanwhile
        call = std::move(it->second);
        pending_.erase(it);
      }
      if (worker_status.ok()) *call.result = std::move(result);
      Finish(call, worker_status);
    }
  }

  const std::string task_;
  const std::string address_;
  const int fd_;
  absl::Mutex write_mu_;  // one frame at a time on the socket
  mutable absl::Mutex mu_;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
  // The reader thread's own.
  absl::Time last_rx_;
  bool ping_out_ = false;
  absl::Time ping_sent_;
};

// What the remote worker and its calls in flight share.
struct RemoteState {
  std::string task;
  absl::Mutex mu;
  std::string address ABSL_GUARDED_BY(mu);
  std::shared_ptr<ClientConn> conn ABSL_GUARDED_BY(mu);

  void SetAddress(const std::string& a) {
    std::shared_ptr<ClientConn> old;
    {
      absl::MutexLock lock(&mu);
      if (a == address) return;
      address = a;
      old = std::move(conn);
    }
    if (old != nullptr) old->Fail(absl::UnavailableError(absl::StrCat("task ", task, " moved its tensor transport")));
  }
};

class TcpTensorRemoteWorker final : public WorkerInterface {
 public:
  TcpTensorRemoteWorker(std::string task, std::unique_ptr<WorkerInterface> rpc)
      : state_(std::make_shared<RemoteState>()), rpc_(std::move(rpc)) {
    state_->task = std::move(task);
  }
  ~TcpTensorRemoteWorker() override {
    std::shared_ptr<ClientConn> conn;
    {
      absl::MutexLock lock(&state_->mu);
      conn = std::move(state_->conn);
    }
    if (conn != nullptr) {
      conn->Fail(absl::CancelledError(absl::StrCat("RecvTensor from ", state_->task, ": the client was destroyed")));
    }
  }

  void GetStatusAsync(const GetStatusRequest* request, GetStatusResponse* response, StatusCallback done) override {
    std::shared_ptr<RemoteState> state = state_;
    rpc_->GetStatusAsync(request, response, [state, response, done = std::move(done)](const absl::Status& s) {
      if (s.ok()) state->SetAddress(response->tensor_address());
      done(s);
    });
  }
  void RegisterGraphAsync(const RegisterGraphRequest* request, RegisterGraphResponse* response,
                          StatusCallback done) override {
    rpc_->RegisterGraphAsync(request, response, std::move(done));
  }
  void DeregisterGraphAsync(const DeregisterGraphRequest* request, DeregisterGraphResponse* response,
                            StatusCallback done) override {
    rpc_->DeregisterGraphAsync(request, response, std::move(done));
  }
  void RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response, StatusCallback done,
                     CallCancellation* cancel) override {
    rpc_->RunGraphAsync(request, response, std::move(done), cancel);
  }
  void RecvTensorAsync(const RecvTensorRequest* request, RecvTensorResult* response, StatusCallback done,
                       CallCancellation* cancel) override {
    std::shared_ptr<ClientConn> conn;
    {
      absl::ReleasableMutexLock lock(&state_->mu);
      if (state_->address.empty()) {
        lock.Release();
        rpc_->RecvTensorAsync(request, response, std::move(done), cancel);
        return;
      }
      if (state_->conn == nullptr || state_->conn->broken()) {
        // Under the lock: concurrent first calls share one connection.
        auto made = ClientConn::Connect(state_->task, state_->address);
        if (!made.ok()) {
          // The task is gone, or it restarted (in this process or another)
          // with a new tensor port. Its gRPC service decides which: this
          // call and later ones go there until a GetStatus announces the
          // transport again; ask for one now.
          state_->address.clear();
          state_->conn = nullptr;
          lock.Release();
          Relearn();
          rpc_->RecvTensorAsync(request, response, std::move(done), cancel);
          return;
        }
        state_->conn = *std::move(made);
      }
      conn = state_->conn;
    }
    conn->Call(*request, response, std::move(done), cancel);
  }
  void CleanupGraphAsync(const CleanupGraphRequest* request, CleanupGraphResponse* response,
                         StatusCallback done) override {
    rpc_->CleanupGraphAsync(request, response, std::move(done));
  }
  // A GetStatus of our own (no caller or config: the task checks nothing)
  // whose answer sets the address again.
  void Relearn() {
    struct Call {
      GetStatusRequest request;
      GetStatusResponse response;
    };
    auto call = std::make_shared<Call>();
    std::shared_ptr<RemoteState> state = state_;
    rpc_->GetStatusAsync(&call->request, &call->response, [state, call](const absl::Status& s) {
      if (s.ok()) state->SetAddress(call->response.tensor_address());
    });
  }
  void CleanupAllAsync(const CleanupAllRequest* request, CleanupAllResponse* response,
                       StatusCallback done) override {
    rpc_->CleanupAllAsync(request, response, std::move(done));
  }
  void ShutdownAsync(const ShutdownRequest* request, ShutdownResponse* response, StatusCallback done) override {
    rpc_->ShutdownAsync(request, response, std::move(done));
  }

 private:
  std::shared_ptr<RemoteState> state_;
  std::unique_ptr<WorkerInterface> rpc_;
};

}  // namespace

std::unique_ptr<WorkerInterface> NewTcpTensorRemoteWorker(std::string task, std::unique_ptr<WorkerInterface> rpc) {
  return std::make_unique<TcpTensorRemoteWorker>(std::move(task), std::move(rpc));
}

}  // namespace distributed
}  // namespace sluice
