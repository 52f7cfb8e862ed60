// Channel arguments and credentials of the worker service (see grpc_options.h).
#include "engine/distributed/grpc_options.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "engine/platform/env.h"
#include "grpc/grpc.h"
#include "grpc/grpc_security_constants.h"

namespace sluice {
namespace distributed {
namespace {

// Keepalive, the cluster's health check: a task that died without closing
// its sockets (killed machine, dropped network, a frozen process) is noticed
// within keepalive time + timeout (~2 s) instead of TCP's minutes, so the step
// that waits on it aborts and the run recovers.
constexpr int kKeepaliveTimeMs = 1000;
constexpr int kKeepaliveTimeoutMs = 1000;
// The server accepts pings this often (default 5 minutes: it would answer our
// 1 s pings with GOAWAY "too_many_pings" and drop the connection); half the
// ping interval, so a ping that comes a little early is no strike.
constexpr int kServerMinPingIntervalMs = 500;
// Reconnect backoff: gRPC's default grows to 120 s, so a task that restarts
// would be unreachable for minutes after it is up again.
constexpr int kInitialReconnectBackoffMs = 100;
constexpr int kMinReconnectBackoffMs = 100;
constexpr int kMaxReconnectBackoffMs = 1000;
// TLS files are small; anything bigger is not a PEM file.
constexpr uint64_t kMaxPemBytes = 1 << 20;

// The arguments client and server share, through `set_int(name, value)`.
template <typename SetInt>
void SetCommonArguments(SetInt set_int) {
  // Never let a second process bind the same port (SO_REUSEPORT is on by
  // default): two tasks on one port would split the calls between them.
  set_int(GRPC_ARG_ALLOW_REUSEPORT, 0);
  set_int(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  set_int(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  // Ping idle connections too: a task may wait minutes between calls (a long
  // step), and its peer may die meanwhile.
  set_int(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Keep pinging when no data flows (the default stops after 2 pings).
  set_int(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
}

absl::StatusOr<std::string> ReadPem(const char* what, const std::string& path) {
  auto contents = ReadFileToString(Env::Default(), path, kMaxPemBytes);
  if (!contents.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS ", what, " '", path, "' cannot be read: ", contents.status().message()));
  }
  if (contents->empty()) return absl::InvalidArgumentError(absl::StrCat("TLS ", what, " '", path, "' is empty"));
  return contents;
}

}  // namespace

grpc::ChannelArguments ClientChannelArguments() {
  grpc::ChannelArguments args;
  // Tensors and graphs are big: the default receive cap is 4 MiB. INT_MAX is
  // the largest a message may be (gRPC's sizes are ints; protobuf's own limit
  // is 2 GiB).
  args.SetMaxReceiveMessageSize(INT_MAX);
  args.SetMaxSendMessageSize(INT_MAX);
  SetCommonArguments([&](const char* name, int value) { args.SetInt(name, value); });
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, kInitialReconnectBackoffMs);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kMinReconnectBackoffMs);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kMaxReconnectBackoffMs);
  // Tasks talk to each other directly: an http_proxy/https_proxy in the
  // environment (common on clusters) must not capture cluster traffic.
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  return args;
}

void ApplyServerArguments(grpc::ServerBuilder* builder) {
  // As the client's (above).
  builder->SetMaxReceiveMessageSize(INT_MAX);
  builder->SetMaxSendMessageSize(INT_MAX);
  SetCommonArguments([&](const char* name, int value) { builder->AddChannelArgument(name, value); });
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, kServerMinPingIntervalMs);
  // Never close a connection for pinging too often ("too_many_pings"): a
  // client's pings are how it notices a dead server.
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const TlsOptions& tls) {
  if (!tls.enabled()) return grpc::InsecureChannelCredentials();
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError("TLS client: cert_file and key_file go together (both or neither)");
  }
  grpc::SslCredentialsOptions ssl;
  if (!tls.ca_file.empty()) {
    auto ca = ReadPem("ca_file", tls.ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
  }
  if (!tls.cert_file.empty()) {
    auto cert = ReadPem("cert_file", tls.cert_file);
    if (!cert.ok()) return cert.status();
    auto key = ReadPem("key_file", tls.key_file);
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(ssl);
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const TlsOptions& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return absl::InvalidArgumentError("TLS server: cert_file and key_file are both required");
  }
  auto cert = ReadPem("cert_file", tls.cert_file);
  if (!cert.ok()) return cert.status();
  auto key = ReadPem("key_file", tls.key_file);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  ssl.pem_key_cert_pairs.push_back({*std::move(key), *std::move(cert)});
  if (!tls.ca_file.empty()) {
    auto ca = ReadPem("ca_file", tls.ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
    // With a CA, only tasks holding a certificate it signed may call.
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace distributed
}  // namespace sluice
