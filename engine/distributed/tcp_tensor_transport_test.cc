// The TCP tensor transport end to end on 127.0.0.1: a TcpTensorServer over a
// FakeWorker, called through NewTcpTensorRemoteWorker (whose other calls go to
// a second FakeWorker standing in for the gRPC client); raw sockets stand in
// for a server or a client that sends bytes ours never send, and for a frozen
// peer. Every wait is bounded: a hang fails the test instead of blocking it.
#include "engine/distributed/tcp_tensor_transport.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/distributed/fake_worker.h"
#include "engine/distributed/grpc_tensor_coding.h"
#include "engine/distributed/worker_rendezvous.h"
#include "engine/platform/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace distributed {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr char kTask[] = "/job:ps/replica:0/task:0";
constexpr absl::Duration kPatience = absl::Seconds(30);

struct Outcome {
  absl::Notification done;
  absl::Status status;
};

// RecvTensor of `key`; cancelled (and then waited for) when it takes longer
// than `timeout`, which then reads DeadlineExceeded.
absl::Status Recv(WorkerInterface* worker, const std::string& key, RecvTensorResult* result,
                  absl::Duration timeout = kPatience, CallCancellation* cancel_from_outside = nullptr) {
  RecvTensorRequest request;
  request.set_step_id(123);
  request.set_rendezvous_key(key);
  CallCancellation own;
  CallCancellation* cancel = cancel_from_outside != nullptr ? cancel_from_outside : &own;
  auto outcome = std::make_shared<Outcome>();
  worker->RecvTensorAsync(
      &request, result,
      [outcome](const absl::Status& s) {
        outcome->status = s;
        outcome->done.Notify();
      },
      cancel);
  if (!outcome->done.WaitForNotificationWithTimeout(timeout)) {
    cancel->StartCancel();
    EXPECT_TRUE(outcome->done.WaitForNotificationWithTimeout(absl::Seconds(60))) << "RecvTensor ignores cancellation";
    return absl::DeadlineExceededError("test: no answer in time");
  }
  return outcome->status;
}

Tensor Pattern(int64_t n) {
  Tensor t(DT_FLOAT, TensorShape({n}));
  float* p = t.data<float>();
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>((i * 2654435761u) % 1000003) - 500000.0f;
  return t;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

bool Aligned(const Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw_data()) % kTensorAlignment == 0; }

// A loopback listening socket of our own (a fake server).
struct RawListener {
  int fd = -1;
  int port = 0;
  RawListener() {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    CHECK_EQ(listen(fd, 8), 0);
    socklen_t len = sizeof(a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~RawListener() { close(fd); }
  std::string address() const { return absl::StrCat("127.0.0.1:", port); }
};

int RawConnect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  CHECK_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  struct timeval t = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof(t));
  return fd;
}

std::string Prefix(uint8_t type, uint32_t length, uint64_t id) {
  std::string p(tcp_tensor::kPrefixBytes, '\0');
  p[0] = static_cast<char>(type);
  for (int i = 0; i < 4; ++i) p[4 + i] = static_cast<char>((length >> (8 * i)) & 0xff);
  for (int i = 0; i < 8; ++i) p[8 + i] = static_cast<char>((id >> (8 * i)) & 0xff);
  return p;
}

std::string RecvFrame(uint64_t id, int64_t step, const std::string& key) {
  std::string f = Prefix(tcp_tensor::kRecv, static_cast<uint32_t>(8 + key.size()), id);
  for (int i = 0; i < 8; ++i) f.push_back(static_cast<char>((static_cast<uint64_t>(step) >> (8 * i)) & 0xff));
  return f + key;
}

bool SendAll(int fd, const std::string& bytes) {
  return send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

// Reads until the peer closes (true) or 10 s pass (false).
bool ReadsToEof(int fd) {
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

class TcpTensorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = TcpTensorServer::Start("127.0.0.1", 0, &serving_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_GT(server_->port(), 0);
    EXPECT_EQ(server_->address(), absl::StrCat("127.0.0.1:", server_->port()));
    remote_ = Remote(server_->address());
  }
  void TearDown() override {
    remote_.reset();
    server_.reset();
  }

  // A remote worker whose GetStatus (answered by a fake) announces `address`.
  std::unique_ptr<WorkerInterface> Remote(const std::string& address, FakeWorker** rpc_out = nullptr) {
    auto rpc = std::make_unique<FakeWorker>();
    GetStatusResponse status;
    status.set_task(kTask);
    status.set_tensor_address(address);
    rpc->SetGetStatusResponse(status);
    if (rpc_out != nullptr) *rpc_out = rpc.get();
    auto remote = NewTcpTensorRemoteWorker(kTask, std::move(rpc));
    GetStatusRequest request;
    GetStatusResponse response;
    EXPECT_TRUE(remote->GetStatus(request, &response).ok());
    return remote;
  }

  FakeWorker serving_;  // outlives the server
  std::unique_ptr<TcpTensorServer> server_;
  std::unique_ptr<WorkerInterface> remote_;
};

TEST_F(TcpTensorTest, FloatsFrom4BytesTo64MiB) {
  for (int64_t n : {1, 1024, 1 << 20, 16 << 20}) {
    const std::string key = absl::StrCat("t", n);
    RecvTensorResult sent{Pattern(n), false, 77};
    serving_.SetTensor(key, sent);
    RecvTensorResult result;
    ASSERT_TRUE(Recv(remote_.get(), key, &result).ok()) << key;
    EXPECT_TRUE(SameBytes(result.value, sent.value)) << key;
    EXPECT_FALSE(result.value.SharesBufferWith(sent.value));
    EXPECT_TRUE(Aligned(result.value)) << key;
    EXPECT_EQ(result.send_start_micros, 77);
  }
  RecvTensorRequest seen;
  ASSERT_TRUE(serving_.LastRequest("RecvTensor", &seen));
  EXPECT_EQ(seen.step_id(), 123);
  EXPECT_EQ(seen.rendezvous_key(), absl::StrCat("t", 16 << 20));
}

TEST_F(TcpTensorTest, Int64BoolStringDeadValuesAndWorkerErrors) {
  Tensor strings(DT_STRING, TensorShape({3}));
  strings.data<tstring>()[0] = "alpha";
  strings.data<tstring>()[1] = std::string("\0\xff", 2);
  strings.data<tstring>()[2] = std::string(70000, 's');
  Tensor bools(DT_BOOL, TensorShape({3}));
  bools.data<bool>()[0] = true;
  bools.data<bool>()[1] = false;
  bools.data<bool>()[2] = true;
  serving_.SetTensor("int64", RecvTensorResult{Tensor::Scalar<int64_t>(-9007199254740993LL), false, 0});
  serving_.SetTensor("bools", RecvTensorResult{bools, false, 0});
  serving_.SetTensor("strings", RecvTensorResult{strings, false, 0});
  serving_.SetTensor("dead", RecvTensorResult{Tensor(), true, 0});
  serving_.SetTensor("empty", RecvTensorResult{Tensor(DT_FLOAT, TensorShape({0, 5})), false, 0});

  RecvTensorResult result;
  ASSERT_TRUE(Recv(remote_.get(), "int64", &result).ok());
  EXPECT_EQ(result.value.scalar<int64_t>(), -9007199254740993LL);
  ASSERT_TRUE(Recv(remote_.get(), "bools", &result).ok());
  EXPECT_TRUE(SameBytes(result.value, bools));
  ASSERT_TRUE(Recv(remote_.get(), "strings", &result).ok());
  ASSERT_EQ(result.value.dtype(), DT_STRING);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(result.value.data<tstring>()[i], strings.data<tstring>()[i]);
  ASSERT_TRUE(Recv(remote_.get(), "dead", &result).ok());
  EXPECT_TRUE(result.is_dead);
  EXPECT_FALSE(result.value.IsInitialized());
  ASSERT_TRUE(Recv(remote_.get(), "empty", &result).ok());
  EXPECT_EQ(result.value.shape(), TensorShape({0, 5}));

  // The worker's own error, code and message unchanged; the connection lives on.
  serving_.SetError("RecvTensor", absl::FailedPreconditionError(std::string(100000, 'm')));
  absl::Status s = Recv(remote_.get(), "int64", &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message().size(), 100000u);
}

TEST_F(TcpTensorTest, WithoutAnAnnouncedAddressRecvTensorGoesToRpc) {
  auto rpc = std::make_unique<FakeWorker>();
  FakeWorker* fake_rpc = rpc.get();
  fake_rpc->SetTensor("k", RecvTensorResult{Pattern(3), false, 0});
  auto remote = NewTcpTensorRemoteWorker(kTask, std::move(rpc));
  RecvTensorResult result;
  ASSERT_TRUE(Recv(remote.get(), "k", &result).ok());
  EXPECT_EQ(fake_rpc->calls("RecvTensor"), 1);
  EXPECT_EQ(serving_.calls("RecvTensor"), 0);
  // Other calls always go to rpc.
  CleanupGraphRequest cleanup;
  CleanupGraphResponse cleaned;
  EXPECT_TRUE(remote->CleanupGraph(cleanup, &cleaned).ok());
  EXPECT_EQ(fake_rpc->calls("CleanupGraph"), 1);
}

TEST_F(TcpTensorTest, ConcurrentCallsAllArrive) {
  for (int i = 0; i < 8; ++i) serving_.SetTensor(absl::StrCat("c", i), RecvTensorResult{Pattern(1000 * (i + 1)), false, 0});
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        RecvTensorResult result;
        const int k = (t + i) % 8;
        if (Recv(remote_.get(), absl::StrCat("c", k), &result).ok() && result.value.NumElements() == 1000 * (k + 1)) {
          ++ok;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 100);
}

TEST_F(TcpTensorTest, CancellingAPendingCallCompletesAtOnceAndCancelsTheServerSide) {
  CallCancellation cancel;
  RecvTensorResult result;
  auto outcome = std::make_shared<Outcome>();
  RecvTensorRequest request;
  request.set_rendezvous_key(FakeWorker::kPendingKey);
  remote_->RecvTensorAsync(
      &request, &result,
      [outcome](const absl::Status& s) {
        outcome->status = s;
        outcome->done.Notify();
      },
      &cancel);
  ASSERT_TRUE(serving_.WaitForPending(1, kPatience));
  cancel.StartCancel(absl::AbortedError("step aborted"));
  ASSERT_TRUE(outcome->done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(outcome->status.code(), absl::StatusCode::kCancelled) << outcome->status;
  EXPECT_THAT(std::string(outcome->status.message()), HasSubstr(kTask));
  EXPECT_TRUE(serving_.WaitForCancelled(1, kPatience));
  // The connection still serves.
  serving_.SetTensor("after", RecvTensorResult{Pattern(5), false, 0});
  EXPECT_TRUE(Recv(remote_.get(), "after", &result).ok());
}

TEST_F(TcpTensorTest, AlreadyCancelledCallFailsAtOnce) {
  serving_.SetTensor("t", RecvTensorResult{Pattern(4), false, 0});
  CallCancellation cancel;
  cancel.StartCancel();
  RecvTensorResult result;
  EXPECT_EQ(Recv(remote_.get(), "t", &result, absl::Seconds(5), &cancel).code(), absl::StatusCode::kCancelled);
}

TEST_F(TcpTensorTest, AbortedRendezvousReportsItsReason) {
  // A rendezvous on the worker side whose cache hands out our remote worker.
  struct OneWorker : WorkerCache {
    WorkerInterface* w;
    WorkerInterface* GetWorker(const std::string& task) override { return task == kTask ? w : nullptr; }
  } cache;
  cache.w = remote_.get();
  auto rendezvous = std::make_shared<WorkerRendezvous>(TaskName("worker", 0), 7, &cache);
  absl::Notification received;
  absl::Status got;
  rendezvous->RecvAsync(absl::StrCat(kTask, "/device:CPU:0;", FakeWorker::kPendingKey),
                        [&](const absl::Status& s, const Tensor&, bool) {
                          got = s;
                          received.Notify();
                        });
  ASSERT_TRUE(serving_.WaitForPending(1, kPatience));
  rendezvous->StartAbort(absl::UnavailableError("step aborted because task /job:ps/replica:0/task:0 is gone"));
  ASSERT_TRUE(received.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(got.code(), absl::StatusCode::kUnavailable) << got;
  EXPECT_THAT(std::string(got.message()), HasSubstr("is gone"));
  EXPECT_TRUE(serving_.WaitForCancelled(1, kPatience));
}

TEST_F(TcpTensorTest, ServerShutdownFailsPendingCallsAtOnce) {
  RecvTensorResult result;
  auto outcome = std::make_shared<Outcome>();
  RecvTensorRequest request;
  request.set_rendezvous_key(FakeWorker::kHeldKey);
  CallCancellation cancel;
  remote_->RecvTensorAsync(
      &request, &result,
      [outcome](const absl::Status& s) {
        outcome->status = s;
        outcome->done.Notify();
      },
      &cancel);
  ASSERT_TRUE(serving_.WaitForPending(1, kPatience));
  const absl::Time start = absl::Now();
  server_->Shutdown();  // returns although the worker holds the call
  ASSERT_TRUE(outcome->done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_EQ(outcome->status.code(), absl::StatusCode::kUnavailable) << outcome->status;
  EXPECT_THAT(std::string(outcome->status.message()), HasSubstr(absl::StrCat("RecvTensor from ", kTask)));
  serving_.ReleaseHeld(absl::OkStatus(), RecvTensorResult{Pattern(16), false, 0});  // after the call is gone
}

// A task that restarted has a new tensor port: the call that finds the old
// one refused goes to gRPC (which knows whether the task is there), and a
// GetStatus learns the new port.
TEST_F(TcpTensorTest, ARefusedConnectGoesToRpcAndRelearnsTheAddress) {
  FakeWorker* rpc = nullptr;
  auto remote = Remote(server_->address(), &rpc);
  serving_.SetTensor("t", RecvTensorResult{Pattern(4), false, 0});
  RecvTensorResult result;
  ASSERT_TRUE(Recv(remote.get(), "t", &result).ok());
  EXPECT_EQ(serving_.calls("RecvTensor"), 1);
  // The task "restarts": its old server goes, a new one on another port
  // serves and GetStatus announces it.
  server_->Shutdown();
  FakeWorker restarted;
  restarted.SetTensor("t", RecvTensorResult{Pattern(4), false, 0});
  auto server = TcpTensorServer::Start("127.0.0.1", 0, &restarted);
  ASSERT_TRUE(server.ok()) << server.status();
  GetStatusResponse status;
  status.set_task(kTask);
  status.set_tensor_address((*server)->address());
  rpc->SetGetStatusResponse(status);
  rpc->SetTensor("t", RecvTensorResult{Pattern(4), false, 0});
  // The connection broke: the next call reconnects, is refused, goes to rpc.
  // The client may not have read the old connection's end yet; a call that
  // races it fails Unavailable, as a gRPC call to a restarting task does,
  // and marks the connection broken, so the call after it reconnects.
  absl::Status after_restart = Recv(remote.get(), "t", &result);
  if (!after_restart.ok()) {
    EXPECT_EQ(after_restart.code(), absl::StatusCode::kUnavailable) << after_restart;
    EXPECT_EQ(rpc->calls("RecvTensor"), 0);
    after_restart = Recv(remote.get(), "t", &result);
  }
  ASSERT_TRUE(after_restart.ok()) << after_restart;
  EXPECT_EQ(rpc->calls("RecvTensor"), 1);
  // The GetStatus it sent relearns the port: later calls use the new server.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (restarted.calls("RecvTensor") == 0 && absl::Now() < deadline) {
    ASSERT_TRUE(Recv(remote.get(), "t", &result).ok());
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_GE(rpc->calls("GetStatus"), 2);
  EXPECT_EQ(restarted.calls("RecvTensor"), 1);
  remote.reset();
  (*server)->Shutdown();
}

TEST_F(TcpTensorTest, AFrozenServerFailsPendingCallsAfterTheKeepalive) {
  RawListener frozen;  // accepts (the kernel does), never reads or answers
  auto remote = Remote(frozen.address());
  RecvTensorResult result;
  const absl::Time start = absl::Now();
  absl::Status s = Recv(remote.get(), "t", &result, absl::Seconds(15));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("keepalive"));
  EXPECT_GE(took, tcp_tensor::kPingAfter + tcp_tensor::kPingTimeout - absl::Milliseconds(300));
  EXPECT_LT(took, absl::Seconds(6));
}

TEST_F(TcpTensorTest, ARefusedConnectAnswersFromRpcAtOnce) {
  int port;
  {
    RawListener gone;
    port = gone.port;
  }
  FakeWorker* rpc = nullptr;
  auto remote = Remote(absl::StrCat("127.0.0.1:", port), &rpc);
  rpc->SetError("RecvTensor", absl::UnavailableError("RecvTensor from the task failed: connection refused"));
  RecvTensorResult result;
  const absl::Time start = absl::Now();
  absl::Status s = Recv(remote.get(), "t", &result, absl::Seconds(10));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(rpc->calls("RecvTensor"), 1);
}

// A server that answers every request with `reply` (built from the request's
// call id) and then keeps the connection open.
class BadServer {
 public:
  explicit BadServer(std::function<std::string(uint64_t id)> reply) : reply_(std::move(reply)) {
    thread_ = std::thread([this] {
      const int fd = accept(listener_.fd, nullptr, nullptr);
      if (fd < 0) return;
      char prefix[tcp_tensor::kPrefixBytes];
      if (recv(fd, prefix, sizeof(prefix), MSG_WAITALL) == sizeof(prefix)) {
        uint64_t id = 0;
        for (int i = 7; i >= 0; --i) id = (id << 8) | static_cast<uint8_t>(prefix[8 + i]);
        SendAll(fd, reply_(id));
      }
      stop_.WaitForNotificationWithTimeout(absl::Seconds(20));
      close(fd);
    });
  }
  ~BadServer() {
    stop_.Notify();
    shutdown(listener_.fd, SHUT_RDWR);
    thread_.join();
  }
  std::string address() const { return listener_.address(); }

 private:
  RawListener listener_;
  std::function<std::string(uint64_t)> reply_;
  absl::Notification stop_;
  std::thread thread_;
};

std::string Response(uint64_t id, const RecvTensorResponseHeader& header, const std::string& data = "") {
  std::string bytes;
  header.SerializeToString(&bytes);
  return Prefix(tcp_tensor::kResponse, static_cast<uint32_t>(bytes.size()), id) + bytes + data;
}

TEST_F(TcpTensorTest, MalformedResponsesAreErrorsNeverCrashes) {
  RecvTensorResponseHeader float4;
  float4.set_dtype(DT_FLOAT);
  float4.mutable_shape()->add_dim()->set_size(1);
  float4.set_tensor_bytes(4);
  struct Case {
    std::string name;
    std::function<std::string(uint64_t)> reply;
  };
  std::vector<Case> cases = {
      {"unknown frame type", [](uint64_t id) { return Prefix(99, 0, id); }},
      {"nonzero padding", [](uint64_t id) { std::string p = Prefix(tcp_tensor::kResponse, 0, id); p[2] = 1; return p; }},
      {"header over the cap", [](uint64_t id) { return Prefix(tcp_tensor::kResponse, 0xffffffffu, id); }},
      {"huge header length then close", [](uint64_t id) { return Prefix(tcp_tensor::kResponse, 1u << 29, id) + "xx"; }},
      {"header does not parse", [](uint64_t id) { return Prefix(tcp_tensor::kResponse, 3, id) + "\xff\xff\xff"; }},
      {"bad dtype", [&](uint64_t id) {
         RecvTensorResponseHeader h = float4;
         h.set_dtype(static_cast<DataType>(77));
         return Response(id, h, "abcd");
       }},
      {"shape does not match the bytes", [&](uint64_t id) {
         RecvTensorResponseHeader h = float4;
         h.mutable_shape()->mutable_dim(0)->set_size(1000000);
         return Response(id, h, "abcd");
       }},
      {"negative dimension", [&](uint64_t id) {
         RecvTensorResponseHeader h = float4;
         h.mutable_shape()->mutable_dim(0)->set_size(-1);
         return Response(id, h, "abcd");
       }},
      {"tensor_bytes over the limit", [&](uint64_t id) {
         RecvTensorResponseHeader h = float4;
         h.mutable_shape()->mutable_dim(0)->set_size(int64_t{1} << 40);
         h.set_tensor_bytes(int64_t{1} << 42);
         return Response(id, h);
       }},
      {"bool bytes not 0 or 1", [&](uint64_t id) {
         RecvTensorResponseHeader h = float4;
         h.set_dtype(DT_BOOL);
         h.set_tensor_bytes(1);
         return Response(id, h, "\x07");
       }},
      {"error with code OK", [&](uint64_t id) {
         RecvTensorResponseHeader h;
         h.mutable_error()->set_code(0);
         return Response(id, h);
       }},
      {"truncated tensor then close", [&](uint64_t id) { return Response(id, float4, "ab"); }},
  };
  for (const Case& c : cases) {
    BadServer bad(c.reply);
    auto remote = Remote(bad.address());
    RecvTensorResult result;
    absl::Status s = Recv(remote.get(), "t", &result, absl::Seconds(15));
    EXPECT_FALSE(s.ok()) << c.name;
    EXPECT_NE(s.code(), absl::StatusCode::kDeadlineExceeded) << c.name << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(kTask)) << c.name;
  }
}

TEST_F(TcpTensorTest, MalformedRequestsDropOnlyThatClient) {
  serving_.SetTensor("t", RecvTensorResult{Pattern(4), false, 0});
  const std::vector<std::string> garbage = {
      "GET / HTTP/1.1\r\n\r\n",
      Prefix(tcp_tensor::kRecv, 0xffffffffu, 1),   // a huge key
      Prefix(tcp_tensor::kRecv, 3, 1) + "abc",     // shorter than a step id
      Prefix(42, 0, 1),                            // unknown type
      Prefix(tcp_tensor::kCancel, 5, 1) + "xxxxx",  // a cancel with a body
  };
  for (const std::string& bytes : garbage) {
    const int fd = RawConnect(server_->port());
    SendAll(fd, bytes);
    EXPECT_TRUE(ReadsToEof(fd)) << "the server kept a client that sent garbage";
    close(fd);
  }
  // A well-formed raw request, then a cancel for an unknown call and a ping.
  const int fd = RawConnect(server_->port());
  ASSERT_TRUE(SendAll(fd, Prefix(tcp_tensor::kCancel, 0, 999) + Prefix(tcp_tensor::kPing, 0, 5) + RecvFrame(3, 9, "t")));
  char prefix[tcp_tensor::kPrefixBytes];
  ASSERT_EQ(recv(fd, prefix, sizeof(prefix), MSG_WAITALL), static_cast<ssize_t>(sizeof(prefix)));
  EXPECT_EQ(prefix[0], tcp_tensor::kPong);
  ASSERT_EQ(recv(fd, prefix, sizeof(prefix), MSG_WAITALL), static_cast<ssize_t>(sizeof(prefix)));
  EXPECT_EQ(prefix[0], tcp_tensor::kResponse);
  EXPECT_EQ(prefix[8], 3);
  close(fd);
  // The server still serves our client.
  RecvTensorResult result;
  EXPECT_TRUE(Recv(remote_.get(), "t", &result).ok());
}

TEST_F(TcpTensorTest, AClientThatGoesAwayCancelsItsPendingCalls) {
  const int fd = RawConnect(server_->port());
  ASSERT_TRUE(SendAll(fd, RecvFrame(1, 5, FakeWorker::kPendingKey)));
  ASSERT_TRUE(serving_.WaitForPending(1, kPatience));
  close(fd);
  EXPECT_TRUE(serving_.WaitForCancelled(1, kPatience));
}

TEST(TcpTensorAddressTest, HostOfAddress) {
  EXPECT_EQ(HostOfAddress("127.0.0.1:2222"), "127.0.0.1");
  EXPECT_EQ(HostOfAddress("[::1]:2222"), "::1");
  EXPECT_EQ(HostOfAddress("node7.example:80"), "node7.example");
}

}  // namespace
}  // namespace distributed
}  // namespace sluice
