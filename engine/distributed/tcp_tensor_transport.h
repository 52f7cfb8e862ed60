// The TCP tensor transport: RecvTensor beside gRPC (as TensorFlow added verbs
// and MPI beside its gRPC runtime), for issue 15's speed goals. Every other
// call of the worker service stays on gRPC.
//
// Why: gRPC 1.51's unary call hands the receiver a tensor only after its last
// byte arrived, in 64 KiB slices that must be copied into the tensor
// (~3.4 ms of 16 MiB on this machine), and its callback API costs ~250 us per
// call on two busy cores (docs/PERFORMANCE.md, "RecvTensor between tasks").
// Here the sender writes the tensor's own buffer (sendmsg, no copy) and the
// receiver reads straight into the destination tensor's aligned buffer (the
// kernel's copy only); a small tensor costs one send and one read each way.
//
// TcpTensorServer: listens on host:<ephemeral port>; its address goes to
// peers in GetStatusResponse.tensor_address (Worker::set_tensor_address).
// Each accepted connection has a reader thread (requests, cancels, pings) and
// a writer thread (responses completed on other threads; a response
// completed on the reader thread itself is written there, at once). A
// request runs WorkerInterface::RecvTensorAsync with a CallCancellation that
// fires when the client cancels the call or the connection closes (as gRPC's
// server cancels the calls of a client that went away).
//
// NewTcpTensorRemoteWorker: the WorkerInterface of a remote task. Every call
// goes to `rpc` (the task's gRPC remote worker) except RecvTensor, which uses
// one persistent TCP connection (TCP_NODELAY) to the address the task gave in
// its last GetStatus answer; before any such answer, or when it gave none
// (a peer without the transport), RecvTensor goes to `rpc` too. The
// connection is opened by the first RecvTensor (a non-blocking connect,
// bounded by kConnectTimeout: on a LAN or loopback a dead task refuses at
// once) and read by its own thread, which completes the calls. A connect that
// fails (the task died, or restarted with a new port) forgets the address:
// that call and later ones go to `rpc` (whose answer says which), and a
// GetStatus is sent to learn the address again. `done` runs on
// that thread (or on the caller's for an early failure; on the cancelling
// thread for a cancelled call). A closed or broken connection fails its
// pending calls at once with Unavailable and the next call reconnects; a
// frozen peer (no byte and no answer to a ping for kPingTimeout while calls
// are pending) fails them with Unavailable too. A cancelled call completes at
// once with Cancelled and tells the server, which cancels its side.
//
// Wire format (little-endian), both directions a 16-byte prefix
//   uint8 type, 3 zero bytes, uint32 length, uint64 call id
// then `length` bytes:
//   client -> server: kRecv (length = 8 + key bytes: int64 step id, the
//     rendezvous key), kCancel (0), kPing (0);
//   server -> client: kResponse (length = bytes of a RecvTensorResponseHeader,
//     then exactly its tensor_bytes raw bytes follow), kPong (0).
// Nothing is trusted: an unknown type, a length over its cap, a header that
// does not parse or describes no valid tensor closes the connection; the
// client's calls on it fail with DataLoss or InvalidArgument (the server
// just drops a client that sends such bytes). Neither side crashes.
//
// TLS: none; a cluster with TLS keeps tensors on gRPC (cmd/train).
//
// Ownership: the server borrows `worker`, which must outlive Shutdown; the
// remote worker owns `rpc`. Calls in flight keep what they need alive.
// Thread safety: everything here is safe for concurrent use.
#ifndef SLUICE_ENGINE_DISTRIBUTED_TCP_TENSOR_TRANSPORT_H_
#define SLUICE_ENGINE_DISTRIBUTED_TCP_TENSOR_TRANSPORT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/distributed/worker_interface.h"

namespace sluice {
namespace distributed {

namespace tcp_tensor {
enum FrameType : uint8_t { kRecv = 1, kCancel = 2, kPing = 3, kResponse = 4, kPong = 5 };
inline constexpr size_t kPrefixBytes = 16;
// The longest rendezvous key a server reads (longer: the client is dropped).
inline constexpr uint32_t kMaxKeyBytes = 64 << 10;
// The longest response header a client reads (string tensors ride in it).
inline constexpr uint32_t kMaxHeaderBytes = 1u << 30;
// The most tensor bytes one response may carry.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 36;
inline constexpr absl::Duration kConnectTimeout = absl::Seconds(3);
// A client with calls pending pings after this long without a byte...
inline constexpr absl::Duration kPingAfter = absl::Seconds(1);
// ...and fails them when nothing came back for this long after the ping.
inline constexpr absl::Duration kPingTimeout = absl::Seconds(2);
}  // namespace tcp_tensor

class TcpTensorServer {
 public:
  // Listens on `host` ("127.0.0.1", an address of this machine) at `port`
  // (0: an ephemeral one). Unavailable when it cannot.
  static absl::StatusOr<std::unique_ptr<TcpTensorServer>> Start(const std::string& host, int port,
                                                                WorkerInterface* worker);
  ~TcpTensorServer();  // Shutdown()
  TcpTensorServer(const TcpTensorServer&) = delete;
  TcpTensorServer& operator=(const TcpTensorServer&) = delete;

  // "host:port".
  const std::string& address() const { return address_; }
  int port() const { return port_; }

  // Stops accepting, closes every connection (their pending calls are
  // cancelled) and waits for this server's threads. Idempotent.
  void Shutdown();

 private:
  class Impl;
  TcpTensorServer(std::unique_ptr<Impl> impl, std::string address, int port);
  std::unique_ptr<Impl> impl_;
  const std::string address_;
  const int port_;
};

// `task` names the remote task in messages.
std::unique_ptr<WorkerInterface> NewTcpTensorRemoteWorker(std::string task, std::unique_ptr<WorkerInterface> rpc);

// The host part of "host:port" ("[::1]:2222" -> "::1").
std::string HostOfAddress(const std::string& address);

}  // namespace distributed
}  // namespace sluice

#endif  // SLUICE_ENGINE_DISTRIBUTED_TCP_TENSOR_TRANSPORT_H_
