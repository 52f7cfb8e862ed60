// The worker service over TLS on 127.0.0.1, with certificates the test makes
// itself (make_test_certs.sh, run with the openssl CLI before gRPC starts in
// this process: never fork after gRPC started). Every call has a deadline, so
// a refused handshake is an error, never a hang.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "engine/distributed/fake_worker.h"
#include "engine/distributed/grpc_options.h"
#include "engine/distributed/grpc_remote_worker.h"
#include "engine/distributed/grpc_worker_service.h"
#include "engine/platform/logging.h"
#include "engine/platform/test_dirs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace distributed {
namespace {

using ::testing::HasSubstr;

constexpr char kTask[] = "/job:ps/replica:0/task:0";

// A call with a deadline on the client side always answers; waits for it.
absl::Status GetStatus(WorkerInterface* worker, GetStatusResponse* response) {
  GetStatusRequest request;
  request.set_caller_task("/job:worker/replica:0/task:0");
  auto done = std::make_shared<absl::Notification>();
  auto status = std::make_shared<absl::Status>();
  worker->GetStatusAsync(&request, response, [done, status](const absl::Status& s) {
    *status = s;
    done->Notify();
  });
  CHECK(done->WaitForNotificationWithTimeout(absl::Seconds(60))) << "GetStatus past its deadline";
  return *status;
}

class GrpcTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(FreshTestDir("grpc_tls_test"));
    // Bounded: openssl never waits for input here, and `timeout` ends it anyway.
    const std::string command = absl::StrCat("timeout 60 /bin/sh engine/distributed/make_test_certs.sh '", *dir_,
                                             "' > '", *dir_, "/openssl.log' 2>&1");
    certs_ok_ = std::system(command.c_str()) == 0;
  }

  void SetUp() override {
    ASSERT_TRUE(certs_ok_) << "make_test_certs.sh failed; see " << *dir_ << "/openssl.log";
    GetStatusResponse canned;
    canned.set_task(kTask);
    fake_.SetGetStatusResponse(canned);
  }

  static std::string File(const std::string& name) { return absl::StrCat(*dir_, "/", name); }

  static TlsOptions ServerTls(bool verify_clients) {
    TlsOptions tls;
    tls.cert_file = File("server.crt");
    tls.key_file = File("server.key");
    if (verify_clients) tls.ca_file = File("ca.crt");
    return tls;
  }

  static TlsOptions ClientTls(const std::string& cert, const std::string& ca) {
    TlsOptions tls;
    if (!cert.empty()) {
      tls.cert_file = File(cert + ".crt");
      tls.key_file = File(cert + ".key");
    }
    if (!ca.empty()) tls.ca_file = File(ca);
    return tls;
  }

  void StartServer(bool verify_clients) {
    GrpcServerOptions options;
    options.tls = ServerTls(verify_clients);
    auto server = GrpcWorkerServer::Start(options, &fake_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    address_ = absl::StrCat("127.0.0.1:", server_->port());
  }

  std::unique_ptr<WorkerInterface> Client(const TlsOptions& tls) {
    GrpcChannelOptions options;
    options.tls = tls;
    options.get_status_timeout = absl::Seconds(10);
    options.call_timeout = absl::Seconds(10);
    return NewGrpcRemoteWorker(kTask, address_, options);
  }

  static std::string* dir_;
  static bool certs_ok_;
  FakeWorker fake_;  // outlives the server
  std::unique_ptr<GrpcWorkerServer> server_;
  std::string address_;
};

std::string* GrpcTlsTest::dir_ = nullptr;
bool GrpcTlsTest::certs_ok_ = false;

TEST_F(GrpcTlsTest, MutualTlsRoundTrip) {
  StartServer(/*verify_clients=*/true);
  auto client = Client(ClientTls("client", "ca.crt"));
  GetStatusResponse response;
  ASSERT_TRUE(GetStatus(client.get(), &response).ok());
  EXPECT_EQ(response.task(), kTask);

  // A tensor too, through the same encrypted channel.
  Tensor t(DT_FLOAT, TensorShape({1024}));
  for (int i = 0; i < 1024; ++i) t.data<float>()[i] = static_cast<float>(i) / 7.0f;
  fake_.SetTensor("t", RecvTensorResult{t, false, 0});
  RecvTensorRequest request;
  request.set_rendezvous_key("t");
  RecvTensorResult result;
  CallCancellation cancel;
  absl::Notification done;
  absl::Status status;
  client->RecvTensorAsync(
      &request, &result,
      [&](const absl::Status& s) {
        status = s;
        done.Notify();
      },
      &cancel);
  if (!done.WaitForNotificationWithTimeout(absl::Seconds(30))) cancel.StartCancel();
  CHECK(done.WaitForNotificationWithTimeout(absl::Seconds(60)));
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(result.value.shape(), t.shape());
  EXPECT_EQ(0, std::memcmp(result.value.raw_data(), t.raw_data(), t.TotalBytes()));
}

TEST_F(GrpcTlsTest, ServerWithoutClientVerificationAcceptsAClientWithoutCertificate) {
  StartServer(/*verify_clients=*/false);
  auto client = Client(ClientTls("", "ca.crt"));
  GetStatusResponse response;
  EXPECT_TRUE(GetStatus(client.get(), &response).ok());
}

TEST_F(GrpcTlsTest, ClientWithoutTheCaCannotConnect) {
  StartServer(/*verify_clients=*/true);
  // No ca_file: the system's roots, which never signed our test CA.
  auto client = Client(ClientTls("client", ""));
  GetStatusResponse response;
  absl::Status s = GetStatus(client.get(), &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(absl::StrCat("GetStatus from ", kTask, " (", address_, ")")));
  EXPECT_EQ(fake_.calls("GetStatus"), 0);
}

TEST_F(GrpcTlsTest, ServerRefusesClientsWithoutAValidCertificate) {
  StartServer(/*verify_clients=*/true);
  GetStatusResponse response;
  // No certificate at all.
  auto anonymous = Client(ClientTls("", "ca.crt"));
  EXPECT_FALSE(GetStatus(anonymous.get(), &response).ok());
  // A certificate from another CA.
  auto rogue = Client(ClientTls("rogue", "ca.crt"));
  EXPECT_FALSE(GetStatus(rogue.get(), &response).ok());
  // No TLS at all.
  auto plain = Client(TlsOptions());
  EXPECT_FALSE(GetStatus(plain.get(), &response).ok());
  EXPECT_EQ(fake_.calls("GetStatus"), 0);
}

TEST_F(GrpcTlsTest, IncompleteOrMissingFilesAreInvalidArgument) {
  TlsOptions cert_without_key;
  cert_without_key.cert_file = File("client.crt");
  EXPECT_EQ(MakeChannelCredentials(cert_without_key).status().code(), absl::StatusCode::kInvalidArgument);

  TlsOptions ca_only;
  ca_only.ca_file = File("ca.crt");
  EXPECT_TRUE(MakeChannelCredentials(ca_only).ok());
  EXPECT_EQ(MakeServerCredentials(ca_only).status().code(), absl::StatusCode::kInvalidArgument);

  TlsOptions missing_key = ServerTls(true);
  missing_key.key_file = File("no-such.key");
  auto server = MakeServerCredentials(missing_key);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr(File("no-such.key")));

  TlsOptions directory = ClientTls("client", "");
  directory.ca_file = *dir_;  // a directory is no PEM file
  EXPECT_EQ(MakeChannelCredentials(directory).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distributed
}  // namespace sluice
