// The gRPC settings of the worker service in one place (DESIGN.md "gRPC 1.51,
// what we already know"): the channel arguments of the client
// (grpc_remote_worker.h) and of the server (grpc_worker_service.h), and their
// credentials, insecure or TLS.
//
// TLS: all three files empty means insecure. A server needs cert_file and
// key_file; with ca_file it also requires and verifies a client certificate
// signed by that CA. A client verifies the server with ca_file (the system's
// roots when empty) and presents cert_file + key_file when given (both or
// neither). A missing, empty or unreadable file is InvalidArgument naming it.
//
// Thread safety: everything here is a pure function or a value type.
#ifndef SLUICE_ENGINE_DISTRIBUTED_GRPC_OPTIONS_H_
#define SLUICE_ENGINE_DISTRIBUTED_GRPC_OPTIONS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/channel_arguments.h"

namespace sluice {
namespace distributed {

// PEM files. All empty: insecure.
struct TlsOptions {
  std::string cert_file;
  std::string key_file;
  std::string ca_file;

  bool enabled() const { return !cert_file.empty() || !key_file.empty() || !ca_file.empty(); }
};

// How a client (GrpcRemoteWorker, GrpcWorkerCache) talks to other tasks.
struct GrpcChannelOptions {
  TlsOptions tls;
  // Deadline of every call except RunGraph and RecvTensor (which have none:
  // they wait by design) and GetStatus.
  absl::Duration call_timeout = absl::Seconds(30);
  // GetStatus's deadline: it is how a chief polls for tasks that are not up
  // yet, so it should fail fast.
  absl::Duration get_status_timeout = absl::Seconds(5);
  // RecvTensor over the TCP tensor transport (tcp_tensor_transport.h) to
  // every task that announces one in GetStatus; gRPC otherwise.
  bool tcp_tensors = false;
};

// The arguments of every client channel to a worker service.
grpc::ChannelArguments ClientChannelArguments();

// Applies the server's message-size limits and channel arguments.
void ApplyServerArguments(grpc::ServerBuilder* builder);

// Credentials for a client channel (insecure when `tls` is empty).
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const TlsOptions& tls);
// Credentials for a listening port (insecure when `tls` is empty).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const TlsOptions& tls);

}  // namespace distributed
}  // namespace sluice

#endif  // SLUICE_ENGINE_DISTRIBUTED_GRPC_OPTIONS_H_
