// The gRPC worker service end to end on 127.0.0.1: a GrpcWorkerServer over a
// FakeWorker, called through NewGrpcRemoteWorker, GrpcWorkerCache and a raw
// generic stub (for bytes no well-behaved client sends). Every wait is
// bounded: a hang fails the test instead of blocking it.
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/distributed/cluster_spec.h"
#include "engine/distributed/fake_worker.h"
#include "engine/distributed/grpc_options.h"
#include "engine/distributed/grpc_remote_worker.h"
#include "engine/distributed/grpc_tensor_coding.h"
#include "engine/distributed/grpc_worker_cache.h"
#include "engine/distributed/grpc_worker_service.h"
#include "engine/distributed/worker_rendezvous.h"
#include "engine/platform/logging.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"

namespace sluice {
namespace distributed {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kTask[] = "/job:ps/replica:0/task:0";
// Longer than any answer should take; shorter than the test's own timeout.
constexpr absl::Duration kPatience = absl::Seconds(30);

// ---- waiting for async calls, boundedly ----

struct Outcome {
  absl::Notification done;
  absl::Status status;
};

std::shared_ptr<Outcome> Begin(const std::function<void(WorkerInterface::StatusCallback)>& start) {
  auto outcome = std::make_shared<Outcome>();
  start([outcome](const absl::Status& s) {
    outcome->status = s;
    outcome->done.Notify();
  });
  return outcome;
}

// The call's status, or DeadlineExceeded when no answer came in `timeout`.
absl::Status Await(const Outcome& outcome, absl::Duration timeout) {
  if (!outcome.done.WaitForNotificationWithTimeout(timeout)) {
    return absl::DeadlineExceededError(absl::StrCat("test: no answer within ", absl::FormatDuration(timeout)));
  }
  return outcome.status;
}

// Runs a call the transport puts a deadline on (or the fake answers at
// once), so it always answers: a late answer must not outlive the response
// object on the caller's stack.
absl::Status Call(const std::function<void(WorkerInterface::StatusCallback)>& start) {
  auto outcome = Begin(start);
  absl::Status s = Await(*outcome, kPatience);
  CHECK(outcome->done.WaitForNotificationWithTimeout(absl::Seconds(60))) << "a call without an answer";
  return s;
}

// RecvTensor of `key`, cancelled (and then waited for) when it takes too long.
absl::Status Recv(WorkerInterface* worker, const std::string& key, RecvTensorResult* result,
                  absl::Duration timeout = kPatience) {
  RecvTensorRequest request;
  request.set_step_id(123);
  request.set_rendezvous_key(key);
  CallCancellation cancel;
  auto outcome = Begin([&](WorkerInterface::StatusCallback done) {
    worker->RecvTensorAsync(&request, result, std::move(done), &cancel);
  });
  absl::Status s = Await(*outcome, timeout);
  if (!outcome->done.HasBeenNotified()) {
    cancel.StartCancel();
    CHECK(outcome->done.WaitForNotificationWithTimeout(absl::Seconds(60))) << "RecvTensor ignores cancellation";
  }
  return s;
}

// ---- a raw client, for bytes our client never sends ----

struct RawReply {
  grpc::Status status;
  std::string body;
};

RawReply RawCall(const std::string& address, const std::string& method, const std::string& request) {
  auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), ClientChannelArguments());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kPatience));
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buffer(&slice, 1);
  grpc::ByteBuffer response_buffer;
  absl::Notification done;
  RawReply reply;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request_buffer, &response_buffer, [&](grpc::Status s) {
    reply.status = std::move(s);
    done.Notify();
  });
  CHECK(done.WaitForNotificationWithTimeout(absl::Seconds(60))) << "a call past its deadline";
  std::vector<grpc::Slice> slices;
  std::vector<absl::string_view> chunks;
  if (reply.status.ok() && ByteBufferChunks(response_buffer, &slices, &chunks).ok()) {
    for (absl::string_view c : chunks) reply.body.append(c.data(), c.size());
  }
  return reply;
}

// The worker error in an envelope body (Unknown "not an error" otherwise).
absl::Status EnvelopeError(const std::string& body) {
  ErrorResponse error;
  if (body.empty() || body[0] != 1 || !error.ParseFromString(body.substr(1))) {
    return absl::UnknownError("not an error envelope");
  }
  return StatusFromProto(error.status());
}

// ---- tensors ----

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

GrpcChannelOptions TestChannelOptions() {
  GrpcChannelOptions options;
  options.call_timeout = absl::Seconds(20);
  options.get_status_timeout = absl::Seconds(20);
  return options;
}

// A GrpcWorkerServer over `fake` on a free port of 127.0.0.1, and a client
// of it (test channel options).
void StartServerAndClient(FakeWorker* fake, std::unique_ptr<GrpcWorkerServer>* server, std::string* address,
                          std::unique_ptr<WorkerInterface>* remote) {
  auto started = GrpcWorkerServer::Start(GrpcServerOptions(), fake);
  ASSERT_TRUE(started.ok()) << started.status();
  *server = *std::move(started);
  ASSERT_GT((*server)->port(), 0);
  *address = absl::StrCat("127.0.0.1:", (*server)->port());
  *remote = NewGrpcRemoteWorker(kTask, *address, TestChannelOptions());
}

// gRPC keeps one process-wide completion queue for callback-API calls (when
// its I/O manager does not run in the background, as on Linux). A channel or
// server takes a reference on first use and drops it when destroyed; at zero
// gRPC shuts the queue down, joins its threads and deletes it. Every test
// here starts and stops its own server and client, so that teardown ran
// between tests, and racing it aborted the binary now and then
// ("ref_counted.h:183 assertion failed: prior > 0" in grpc_cq_internal_unref,
// on one of gRPC's own threads; about 1 run in 6 under load). One server and
// one client that answered a call, held for the whole binary, keep the count
// above zero, so the queue is torn down once, at exit.
class CallbackQueueKeepalive : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string address;
    StartServerAndClient(&fake_, &server_, &address, &remote_);
    ASSERT_NE(remote_, nullptr);
    GetStatusRequest request;
    GetStatusResponse response;
    ASSERT_TRUE(Call([&](auto done) { remote_->GetStatusAsync(&request, &response, done); }).ok());
  }
  void TearDown() override {
    remote_.reset();
    server_.reset();
  }

 private:
  FakeWorker fake_;  // outlives the server
  std::unique_ptr<GrpcWorkerServer> server_;
  std::unique_ptr<WorkerInterface> remote_;
};
const ::testing::Environment* const kCallbackQueueKeepalive =
    ::testing::AddGlobalTestEnvironment(new CallbackQueueKeepalive);

class GrpcWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServerAndClient(&fake_, &server_, &address_, &remote_); }

  void TearDown() override {
    remote_.reset();
    server_.reset();
  }

  FakeWorker fake_;  // outlives the server
  std::unique_ptr<GrpcWorkerServer> server_;
  std::string address_;
  std::unique_ptr<WorkerInterface> remote_;
};

// ---- every method ----

TEST_F(GrpcWorkerTest, GetStatusRoundTrip) {
  GetStatusResponse canned;
  canned.set_task(kTask);
  canned.set_incarnation(0xfedcba9876543210ull);
  auto* device = canned.add_device();
  device->set_name("/job:ps/replica:0/task:0/device:CPU:0");
  device->set_device_type("CPU");
  device->set_incarnation(77);
  fake_.SetGetStatusResponse(canned);

  GetStatusRequest request;
  request.set_caller_task("/job:worker/replica:0/task:0");
  request.set_config_hash("abc123");
  GetStatusResponse response;
  ASSERT_TRUE(Call([&](auto done) { remote_->GetStatusAsync(&request, &response, done); }).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(response, canned)) << response.DebugString();
  GetStatusRequest seen;
  ASSERT_TRUE(fake_.LastRequest("GetStatus", &seen));
  EXPECT_TRUE(MessageDifferencer::Equals(seen, request)) << seen.DebugString();
}

TEST_F(GrpcWorkerTest, RegisterAndDeregisterGraphRoundTrip) {
  RegisterGraphResponse canned;
  canned.set_graph_handle("graph-0042");
  fake_.SetRegisterGraphResponse(canned);
  RegisterGraphRequest request;
  request.set_session_handle("session-1");
  for (int i = 0; i < 3; ++i) {
    NodeDef* node = request.mutable_graph()->add_node();
    node->set_name(absl::StrCat("n", i));
    node->set_op("Identity");
    node->set_device("/job:ps/replica:0/task:0/device:CPU:0");
    if (i > 0) node->add_input(absl::StrCat("n", i - 1));
  }
  RegisterGraphResponse response;
  ASSERT_TRUE(Call([&](auto done) { remote_->RegisterGraphAsync(&request, &response, done); }).ok());
  EXPECT_EQ(response.graph_handle(), "graph-0042");
  RegisterGraphRequest seen;
  ASSERT_TRUE(fake_.LastRequest("RegisterGraph", &seen));
  EXPECT_TRUE(MessageDifferencer::Equals(seen, request));

  DeregisterGraphRequest dereg;
  dereg.set_session_handle("session-1");
  dereg.set_graph_handle("graph-0042");
  DeregisterGraphResponse dereg_response;
  ASSERT_TRUE(Call([&](auto done) { remote_->DeregisterGraphAsync(&dereg, &dereg_response, done); }).ok());
  DeregisterGraphRequest dereg_seen;
  ASSERT_TRUE(fake_.LastRequest("DeregisterGraph", &dereg_seen));
  EXPECT_TRUE(MessageDifferencer::Equals(dereg_seen, dereg));
}

TEST_F(GrpcWorkerTest, RunGraphRoundTrip) {
  RunGraphResponse canned;
  auto* recv = canned.add_recv();
  recv->set_key("loss");
  Tensor::Scalar<float>(0.25f).AsProtoTensorContent(recv->mutable_tensor());
  recv = canned.add_recv();
  recv->set_key("big");
  Pattern(100000).AsProtoTensorContent(recv->mutable_tensor());
  fake_.SetRunGraphResponse(canned);

  RunGraphRequest request;
  request.set_session_handle("session-1");
  request.set_graph_handle("graph-1");
  request.set_step_id(-4611686018427387904LL);
  auto* send = request.add_send();
  send->set_key("x");
  Pattern(6).AsProtoTensorContent(send->mutable_tensor());
  request.add_recv_key("loss");
  request.add_recv_key("big");
  RunGraphResponse response;
  CallCancellation cancel;
  ASSERT_TRUE(Call([&](auto done) { remote_->RunGraphAsync(&request, &response, done, &cancel); }).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(response, canned));
  RunGraphRequest seen;
  ASSERT_TRUE(fake_.LastRequest("RunGraph", &seen));
  EXPECT_TRUE(MessageDifferencer::Equals(seen, request));
}

TEST_F(GrpcWorkerTest, CleanupAndShutdownRoundTrip) {
  CleanupGraphRequest cleanup;
  cleanup.set_step_id(99);
  StatusToProto(absl::AbortedError("step 99 lost a task"), cleanup.mutable_abort());
  CleanupGraphResponse cleanup_response;
  ASSERT_TRUE(Call([&](auto done) { remote_->CleanupGraphAsync(&cleanup, &cleanup_response, done); }).ok());
  CleanupGraphRequest cleanup_seen;
  ASSERT_TRUE(fake_.LastRequest("CleanupGraph", &cleanup_seen));
  EXPECT_TRUE(MessageDifferencer::Equals(cleanup_seen, cleanup));

  CleanupAllRequest all;
  all.add_container("c1");
  all.add_container("c2");
  CleanupAllResponse all_response;
  ASSERT_TRUE(Call([&](auto done) { remote_->CleanupAllAsync(&all, &all_response, done); }).ok());
  CleanupAllRequest all_seen;
  ASSERT_TRUE(fake_.LastRequest("CleanupAll", &all_seen));
  EXPECT_TRUE(MessageDifferencer::Equals(all_seen, all));

  ShutdownRequest shutdown;
  shutdown.set_reason("the chief finished training");
  ShutdownResponse shutdown_response;
  ASSERT_TRUE(Call([&](auto done) { remote_->ShutdownAsync(&shutdown, &shutdown_response, done); }).ok());
  ShutdownRequest shutdown_seen;
  ASSERT_TRUE(fake_.LastRequest("Shutdown", &shutdown_seen));
  EXPECT_EQ(shutdown_seen.reason(), "the chief finished training");
  EXPECT_EQ(fake_.calls("CleanupGraph"), 1);
  EXPECT_EQ(fake_.calls("CleanupAll"), 1);
  EXPECT_EQ(fake_.calls("Shutdown"), 1);
}

TEST_F(GrpcWorkerTest, WorkerErrorsKeepTheirCodeAndWholeLongMessage) {
  const std::string message = absl::StrCat("config hash differs: ", std::string(100 * 1024, 'm'), " (end)");
  fake_.SetError("GetStatus", absl::FailedPreconditionError(message));
  fake_.SetError("RunGraph", absl::AbortedError(message));
  fake_.SetError("RecvTensor", absl::ResourceExhaustedError(message));

  GetStatusRequest request;
  GetStatusResponse response;
  absl::Status s = Call([&](auto done) { remote_->GetStatusAsync(&request, &response, done); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), message);

  RunGraphRequest run;
  RunGraphResponse run_response;
  s = Call([&](auto done) { remote_->RunGraphAsync(&run, &run_response, done, nullptr); });
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(s.message(), message);

  RecvTensorResult result;
  s = Recv(remote_.get(), "anything", &result);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), message);
}

// ---- RecvTensor ----

TEST_F(GrpcWorkerTest, RecvTensorFloats4KiBAnd64MiB) {
  std::map<std::string, RecvTensorResult> sent_by_key = {
      {"small", RecvTensorResult{Pattern(1024), false, 1111}},          // 4 KiB
      {"large", RecvTensorResult{Pattern(16 * 1024 * 1024), false, 2}},  // 64 MiB
  };
  for (const auto& [key, sent] : sent_by_key) fake_.SetTensor(key, sent);
  for (const char* key : {"small", "large"}) {
    RecvTensorResult result;
    ASSERT_TRUE(Recv(remote_.get(), key, &result).ok()) << key;
    const RecvTensorResult& sent = sent_by_key[key];
    EXPECT_TRUE(SameBytes(result.value, sent.value)) << key;
    EXPECT_FALSE(result.value.SharesBufferWith(sent.value));
    EXPECT_TRUE(Aligned(result.value)) << key;
    EXPECT_FALSE(result.is_dead);
    EXPECT_EQ(result.send_start_micros, sent.send_start_micros);
  }
  RecvTensorRequest seen;
  ASSERT_TRUE(fake_.LastRequest("RecvTensor", &seen));
  EXPECT_EQ(seen.step_id(), 123);
  EXPECT_EQ(seen.rendezvous_key(), "large");
}

TEST_F(GrpcWorkerTest, RecvTensorInt64StringAndDeadValues) {
  Tensor strings(DT_STRING, TensorShape({2, 2}));
  strings.data<tstring>()[0] = "alpha";
  strings.data<tstring>()[1] = std::string("\0\xff", 2);
  strings.data<tstring>()[2] = "";
  strings.data<tstring>()[3] = std::string(70000, 's');
  const Tensor dead_value = Pattern(8);
  fake_.SetTensor("int64", RecvTensorResult{Tensor::Scalar<int64_t>(-9007199254740993LL), false, 0});
  fake_.SetTensor("strings", RecvTensorResult{strings, false, 0});
  fake_.SetTensor("dead", RecvTensorResult{Tensor(), true, 0});
  fake_.SetTensor("dead_with_value", RecvTensorResult{dead_value, true, 0});

  RecvTensorResult result;
  ASSERT_TRUE(Recv(remote_.get(), "int64", &result).ok());
  ASSERT_EQ(result.value.dtype(), DT_INT64);
  EXPECT_EQ(result.value.dims(), 0);
  EXPECT_EQ(result.value.scalar<int64_t>(), -9007199254740993LL);
  EXPECT_TRUE(Aligned(result.value));

  ASSERT_TRUE(Recv(remote_.get(), "strings", &result).ok());
  ASSERT_EQ(result.value.dtype(), DT_STRING);
  ASSERT_EQ(result.value.shape(), TensorShape({2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(result.value.data<tstring>()[i], strings.data<tstring>()[i]) << i;

  ASSERT_TRUE(Recv(remote_.get(), "dead", &result).ok());
  EXPECT_TRUE(result.is_dead);
  EXPECT_FALSE(result.value.IsInitialized());

  ASSERT_TRUE(Recv(remote_.get(), "dead_with_value", &result).ok());
  EXPECT_TRUE(result.is_dead);
  EXPECT_TRUE(SameBytes(result.value, dead_value));

  EXPECT_EQ(Recv(remote_.get(), "missing", &result).code(), absl::StatusCode::kNotFound);
}

TEST_F(GrpcWorkerTest, CancellingAPendingRecvTensorCompletesWithCancelled) {
  RecvTensorRequest request;
  request.set_rendezvous_key(FakeWorker::kPendingKey);
  RecvTensorResult result;
  CallCancellation cancel;
  auto outcome = Begin([&](auto done) { remote_->RecvTensorAsync(&request, &result, done, &cancel); });
  ASSERT_TRUE(fake_.WaitForPending(1, kPatience));
  EXPECT_FALSE(outcome->done.HasBeenNotified());
  cancel.StartCancel();
  absl::Status s = Await(*outcome, absl::Seconds(5));
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(absl::StrCat("RecvTensor from ", kTask, " (", address_, ")")));
  // The server passed the cancellation on to the worker.
  EXPECT_TRUE(fake_.WaitForCancelled(1, kPatience));
  CHECK(outcome->done.WaitForNotificationWithTimeout(absl::Seconds(60)));
}

TEST_F(GrpcWorkerTest, AlreadyCancelledRecvTensorFailsAtOnce) {
  fake_.SetTensor("t", RecvTensorResult{Pattern(4), false, 0});
  RecvTensorRequest request;
  request.set_rendezvous_key("t");
  RecvTensorResult result;
  CallCancellation cancel;
  cancel.StartCancel();
  auto outcome = Begin([&](auto done) { remote_->RecvTensorAsync(&request, &result, done, &cancel); });
  EXPECT_EQ(Await(*outcome, absl::Seconds(5)).code(), absl::StatusCode::kCancelled);
  CHECK(outcome->done.WaitForNotificationWithTimeout(absl::Seconds(60)));
}

// The worker answers after the client gave up: the server must neither crash
// nor answer twice, and keeps serving.
TEST_F(GrpcWorkerTest, WorkerAnswerAfterTheClientCancelledIsHarmless) {
  RecvTensorRequest request;
  request.set_rendezvous_key(FakeWorker::kHeldKey);
  RecvTensorResult result;
  CallCancellation cancel;
  auto outcome = Begin([&](auto done) { remote_->RecvTensorAsync(&request, &result, done, &cancel); });
  ASSERT_TRUE(fake_.WaitForPending(1, kPatience));
  cancel.StartCancel();
  EXPECT_EQ(Await(*outcome, absl::Seconds(5)).code(), absl::StatusCode::kCancelled);
  CHECK(outcome->done.WaitForNotificationWithTimeout(absl::Seconds(60)));

  fake_.ReleaseHeld(absl::OkStatus(), RecvTensorResult{Pattern(1 << 20), false, 0});
  GetStatusRequest status_request;
  GetStatusResponse status_response;
  EXPECT_TRUE(Call([&](auto done) { remote_->GetStatusAsync(&status_request, &status_response, done); }).ok());
}

TEST_F(GrpcWorkerTest, ServerShutdownFailsAPendingRecvTensor) {
  RecvTensorRequest request;
  request.set_rendezvous_key(FakeWorker::kPendingKey);
  RecvTensorResult result;
  CallCancellation cancel;
  auto outcome = Begin([&](auto done) { remote_->RecvTensorAsync(&request, &result, done, &cancel); });
  ASSERT_TRUE(fake_.WaitForPending(1, kPatience));
  server_->Shutdown();
  absl::Status s = Await(*outcome, absl::Seconds(5));
  // gRPC reports the dropped call as CANCELLED; nobody here asked for that,
  // so it arrives as Unavailable (retryable), like any lost connection.
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), StartsWith(absl::StrCat("RecvTensor from ", kTask)));
  if (!outcome->done.HasBeenNotified()) cancel.StartCancel();
  CHECK(outcome->done.WaitForNotificationWithTimeout(absl::Seconds(60)));
}

// A worker that ignores cancellation does not keep Shutdown from returning.
TEST_F(GrpcWorkerTest, ServerShutdownReturnsWhileTheWorkerHoldsACall) {
  RecvTensorRequest request;
  request.set_rendezvous_key(FakeWorker::kHeldKey);
  RecvTensorResult result;
  CallCancellation cancel;
  auto outcome = Begin([&](auto done) { remote_->RecvTensorAsync(&request, &result, done, &cancel); });
  ASSERT_TRUE(fake_.WaitForPending(1, kPatience));
  absl::Notification shut_down;
  std::thread shutdown([&] {
    server_->Shutdown();
    shut_down.Notify();
  });
  const bool returned = shut_down.WaitForNotificationWithTimeout(absl::Seconds(10));
  EXPECT_TRUE(returned);
  EXPECT_THAT(Await(*outcome, absl::Seconds(5)).code(),
              AnyOf(absl::StatusCode::kUnavailable, absl::StatusCode::kCancelled));
  fake_.ReleaseHeld(absl::OkStatus(), RecvTensorResult{Pattern(16), false, 0});  // after the call is gone
  shutdown.join();
  if (!outcome->done.HasBeenNotified()) cancel.StartCancel();
  CHECK(outcome->done.WaitForNotificationWithTimeout(absl::Seconds(60)));
}

// ---- deadlines ----

TEST_F(GrpcWorkerTest, GetStatusHasADeadline) {
  GrpcChannelOptions options = TestChannelOptions();
  options.get_status_timeout = absl::Milliseconds(300);
  auto impatient = NewGrpcRemoteWorker(kTask, address_, options);
  fake_.hold_get_status = true;
  GetStatusRequest request;
  GetStatusResponse response;
  absl::Status s = Call([&](auto done) { impatient->GetStatusAsync(&request, &response, done); });
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_THAT(std::string(s.message()), StartsWith(absl::StrCat("GetStatus from ", kTask, " (", address_, ")")));
  fake_.hold_get_status = false;
  fake_.ReleaseHeld(absl::OkStatus());
}

// Deadlines that expire at every moment of a call (before the server reads
// the request, while the worker holds it, as the worker answers) while
// another thread answers held calls: every call completes, none crashes.
TEST_F(GrpcWorkerTest, DeadlinesRacingAnswersAllComplete) {
  fake_.hold_get_status = true;
  std::atomic<bool> stop{false};
  std::thread releaser([&] {
    while (!stop.load()) {
      fake_.ReleaseHeld(absl::OkStatus());
      absl::SleepFor(absl::Microseconds(200));
    }
  });
  constexpr int kCalls = 300;
  std::vector<std::shared_ptr<Outcome>> outcomes;
  std::vector<GetStatusRequest> requests(kCalls);
  std::vector<GetStatusResponse> responses(kCalls);
  std::mt19937 rng(7);
  for (int i = 0; i < kCalls; ++i) {
    GrpcChannelOptions options = TestChannelOptions();
    options.get_status_timeout = absl::Microseconds(std::uniform_int_distribution<int>(1, 3000)(rng));
    // Its own channel, dropped while the call is in flight (the call keeps
    // what it needs alive).
    auto impatient = NewGrpcRemoteWorker(kTask, address_, options);
    outcomes.push_back(Begin([&](auto done) { impatient->GetStatusAsync(&requests[i], &responses[i], done); }));
  }
  int deadline_exceeded = 0;
  for (auto& outcome : outcomes) {
    // A call without an answer would outlive the requests and responses.
    CHECK(outcome->done.WaitForNotificationWithTimeout(kPatience)) << "a call without an answer";
    EXPECT_THAT(outcome->status.code(), AnyOf(absl::StatusCode::kOk, absl::StatusCode::kDeadlineExceeded))
        << outcome->status;
    deadline_exceeded += outcome->status.code() == absl::StatusCode::kDeadlineExceeded;
  }
  stop = true;
  releaser.join();
  fake_.hold_get_status = false;
  fake_.ReleaseHeld(absl::OkStatus());
  EXPECT_GT(deadline_exceeded, 0);
}

TEST_F(GrpcWorkerTest, RecvTensorHasNoDeadline) {
  GrpcChannelOptions options = TestChannelOptions();
  options.call_timeout = absl::Milliseconds(200);
  options.get_status_timeout = absl::Milliseconds(200);
  auto impatient = NewGrpcRemoteWorker(kTask, address_, options);
  RecvTensorRequest request;
  request.set_rendezvous_key(FakeWorker::kPendingKey);
  RecvTensorResult result;
  CallCancellation cancel;
  auto outcome = Begin([&](auto done) { impatient->RecvTensorAsync(&request, &result, done, &cancel); });
  ASSERT_TRUE(fake_.WaitForPending(1, kPatience));
  // Well past both deadlines, it still waits.
  EXPECT_FALSE(outcome->done.WaitForNotificationWithTimeout(absl::Seconds(1)));
  cancel.StartCancel();
  EXPECT_EQ(Await(*outcome, absl::Seconds(5)).code(), absl::StatusCode::kCancelled);
  CHECK(outcome->done.WaitForNotificationWithTimeout(absl::Seconds(60)));
}

// ---- transport failures ----

TEST_F(GrpcWorkerTest, UnreachableTaskIsUnavailableNamingMethodTaskAndAddress) {
  FakeWorker other;
  auto server = GrpcWorkerServer::Start(GrpcServerOptions(), &other);
  ASSERT_TRUE(server.ok());
  const std::string gone = absl::StrCat("127.0.0.1:", (*server)->port());
  server->reset();  // nothing listens there now
  auto worker = NewGrpcRemoteWorker(kTask, gone, TestChannelOptions());
  GetStatusRequest request;
  GetStatusResponse response;
  absl::Status s = Call([&](auto done) { worker->GetStatusAsync(&request, &response, done); });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), StartsWith(absl::StrCat("GetStatus from ", kTask, " (", gone, ") failed: ")));
}

TEST_F(GrpcWorkerTest, BadTlsFilesFailEveryCallNamingTheFile) {
  GrpcChannelOptions options = TestChannelOptions();
  options.tls.ca_file = "/nonexistent/ca.pem";
  auto worker = NewGrpcRemoteWorker(kTask, address_, options);
  GetStatusRequest request;
  GetStatusResponse response;
  absl::Status s = Call([&](auto done) { worker->GetStatusAsync(&request, &response, done); });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("/nonexistent/ca.pem"));

  GrpcServerOptions server_options;
  server_options.tls.cert_file = "/nonexistent/server.crt";
  server_options.tls.key_file = "/nonexistent/server.key";
  auto server = GrpcWorkerServer::Start(server_options, &fake_);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("/nonexistent/server.crt"));
}

TEST_F(GrpcWorkerTest, AddressInUseIsUnavailable) {
  GrpcServerOptions options;
  options.address = address_;
  auto second = GrpcWorkerServer::Start(options, &fake_);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
}

// ---- malformed requests ----

TEST_F(GrpcWorkerTest, MalformedRequestsGetErrorsAndTheServerKeepsServing) {
  const std::string prefix = kWorkerServicePrefix;

  // A truncated RegisterGraphRequest.
  RegisterGraphRequest graph;
  graph.set_session_handle("s");
  graph.mutable_graph()->add_node()->set_name(std::string(200, 'n'));
  const std::string full = graph.SerializeAsString();
  const std::string truncated = full.substr(0, full.size() - 50);
  RawReply reply = RawCall(address_, prefix + "RegisterGraph", truncated);
  ASSERT_TRUE(reply.status.ok()) << reply.status.error_message();
  absl::Status error = EnvelopeError(reply.body);
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(error.message(), absl::StrCat("RegisterGraph: the request is not a valid RegisterGraphRequest (",
                                          truncated.size(), " bytes)"));

  // Random bytes (that are no valid message) to every envelope method.
  std::mt19937 rng(7);
  std::string noise(512, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  noise[0] = '\x07';  // field 0, wire type 7: never valid
  for (const char* method :
       {"GetStatus", "RegisterGraph", "DeregisterGraph", "RunGraph", "CleanupGraph", "CleanupAll", "Shutdown"}) {
    reply = RawCall(address_, prefix + method, noise);
    ASSERT_TRUE(reply.status.ok()) << method << ": " << reply.status.error_message();
    error = EnvelopeError(reply.body);
    EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument) << method;
    EXPECT_THAT(std::string(error.message()), StartsWith(absl::StrCat(method, ": the request is not a valid ")));
  }

  // A RecvTensorRequest whose rendezvous_key claims 2 GiB - 1 bytes.
  const std::string huge_claim("\x12\xff\xff\xff\xff\x07" "abc", 9);
  reply = RawCall(address_, prefix + "RecvTensor", huge_claim);
  ASSERT_TRUE(reply.status.ok()) << reply.status.error_message();
  RecvTensorResult result;
  absl::Status worker_status;
  std::vector<absl::string_view> chunks = {reply.body};
  ASSERT_TRUE(DecodeRecvTensorResponse(chunks, &worker_status, &result).ok());
  EXPECT_EQ(worker_status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(worker_status.message(), "RecvTensor: the request is not a valid RecvTensorRequest (9 bytes)");

  // Unknown methods.
  for (const std::string& method : {prefix + "Nope", std::string("/other.Service/GetStatus"), prefix}) {
    reply = RawCall(address_, method, "");
    EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::UNIMPLEMENTED) << method;
  }

  // None of it reached the worker, and the server still answers.
  for (const char* method : {"GetStatus", "RegisterGraph", "RunGraph", "RecvTensor", "Shutdown"}) {
    EXPECT_EQ(fake_.calls(method), 0) << method;
  }
  GetStatusRequest request;
  GetStatusResponse response;
  EXPECT_TRUE(Call([&](auto done) { remote_->GetStatusAsync(&request, &response, done); }).ok());
  EXPECT_EQ(fake_.calls("GetStatus"), 1);
}

// ---- concurrency ----

TEST_F(GrpcWorkerTest, ConcurrentCallsAllSucceed) {
  const Tensor expected = Pattern(256 * 1024);  // 1 MiB
  fake_.SetTensor("t", RecvTensorResult{expected, false, 0});
  constexpr int kThreads = 6;
  constexpr int kCalls = 10;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int c = 0; c < kCalls; ++c) {
        RecvTensorResult result;
        if (!Recv(remote_.get(), "t", &result).ok() || !SameBytes(result.value, expected)) {
          ++failures[i];
        }
        GetStatusRequest request;
        GetStatusResponse response;
        if (!Call([&](auto done) { remote_->GetStatusAsync(&request, &response, done); }).ok()) ++failures[i];
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(failures[i], 0) << "thread " << i;
  EXPECT_EQ(fake_.calls("RecvTensor"), kThreads * kCalls);
  EXPECT_EQ(fake_.calls("GetStatus"), kThreads * kCalls);
}

// A step's rendezvous that aborts while a RecvTensor is pending reports why
// the step aborted (its code and message), not a bare Cancelled.
TEST_F(GrpcWorkerTest, AbortedRendezvousReportsTheAbortReasonForItsPendingRecvTensor) {
  auto cluster = ClusterSpec::Create({{"ps", {address_}}, {"worker", {"127.0.0.1:1"}}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  FakeWorker local;
  GrpcWorkerCache cache(*cluster, TaskName("worker", 0), &local, TestChannelOptions());
  auto rendezvous = std::make_shared<WorkerRendezvous>(TaskName("worker", 0), 7, &cache);
  absl::Notification received;
  absl::Status got;
  rendezvous->RecvAsync(absl::StrCat(kTask, "/device:CPU:0;", FakeWorker::kPendingKey), [&](const absl::Status& s, const Tensor&, bool) {
    got = s;
    received.Notify();
  });
  ASSERT_TRUE(fake_.WaitForPending(1, kPatience));
  rendezvous->StartAbort(absl::UnavailableError("step aborted because task /job:ps/replica:0/task:0 is gone"));
  ASSERT_TRUE(received.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(got.code(), absl::StatusCode::kUnavailable) << got;
  EXPECT_THAT(std::string(got.message()), HasSubstr("is gone"));
}

TEST(CallCancellationTest, KeepsTheFirstReason) {
  CallCancellation cancel;
  EXPECT_TRUE(cancel.reason().ok());
  cancel.StartCancel(absl::AbortedError("first"));
  cancel.StartCancel(absl::UnavailableError("second"));
  EXPECT_EQ(cancel.reason(), absl::AbortedError("first"));
  CallCancellation plain;
  plain.StartCancel();
  EXPECT_EQ(plain.reason().code(), absl::StatusCode::kCancelled);
}

// ---- the worker cache ----

TEST_F(GrpcWorkerTest, WorkerCacheGivesLocalRemoteAndUnknownTasks) {
  auto cluster = ClusterSpec::Create({{"ps", {address_}}, {"worker", {"127.0.0.1:1", "127.0.0.1:2"}}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  FakeWorker local;
  GrpcWorkerCache cache(*cluster, TaskName("worker", 0), &local, TestChannelOptions());

  EXPECT_EQ(cache.GetWorker(TaskName("worker", 0)), &local);
  EXPECT_EQ(cache.GetWorker(TaskName("worker", 2)), nullptr);
  EXPECT_EQ(cache.GetWorker(TaskName("chief", 0)), nullptr);
  EXPECT_EQ(cache.GetWorker("/job:ps/task:0"), nullptr);

  // One remote worker per task, even when asked from many threads at once.
  std::vector<WorkerInterface*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back([&, i] { seen[i] = cache.GetWorker(kTask); });
  for (auto& t : threads) t.join();
  ASSERT_NE(seen[0], nullptr);
  for (WorkerInterface* w : seen) EXPECT_EQ(w, seen[0]);
  EXPECT_NE(seen[0], &local);
  EXPECT_NE(cache.GetWorker(TaskName("worker", 1)), seen[0]);

  // The remote one really is the ps task over gRPC.
  GetStatusResponse canned;
  canned.set_task(kTask);
  fake_.SetGetStatusResponse(canned);
  GetStatusRequest request;
  GetStatusResponse response;
  ASSERT_TRUE(Call([&](auto done) { seen[0]->GetStatusAsync(&request, &response, done); }).ok());
  EXPECT_EQ(response.task(), kTask);
  EXPECT_EQ(fake_.calls("GetStatus"), 1);
  EXPECT_EQ(local.calls("GetStatus"), 0);
}

}  // namespace
}  // namespace distributed
}  // namespace sluice
