// RunWhileConnecting: see listener_wake.h.
#include "monitoring/listener_wake.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

namespace sluice {
namespace {

// The address to connect to: `host` resolved (numeric or a name), a wildcard
// replaced by the loopback address of its family. False if it does not resolve.
bool ResolveForConnect(const std::string& host, int port, sockaddr_storage* out, socklen_t* len) {
  std::string h = host;
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty()) h = "0.0.0.0";
  addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(h.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr) return false;
  std::memcpy(out, found->ai_addr, found->ai_addrlen);
  *len = found->ai_addrlen;
  freeaddrinfo(found);
  if (out->ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(out);
    if (a->sin_addr.s_addr == htonl(INADDR_ANY)) a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  } else if (out->ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(out);
    if (IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr)) a->sin6_addr = in6addr_loopback;
  }
  return true;
}

// One connection, closed at once; connect gives up after 100 ms.
void ConnectOnce(const sockaddr_storage& addr, socklen_t len) {
  const int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  timeval timeout{0, 100000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  connect(fd, reinterpret_cast<const sockaddr*>(&addr), len);
  close(fd);
}

}  // namespace

void RunWhileConnecting(const std::string& host, int port, const std::function<void()>& stop) {
  sockaddr_storage addr;
  socklen_t len = 0;
  if (port <= 0 || !ResolveForConnect(host, port, &addr, &len)) {
    stop();
    return;
  }
  std::atomic<bool> stopped{false};
  std::thread waker([&] {
    while (!stopped.load(std::memory_order_acquire)) {
      ConnectOnce(addr, len);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  stop();
  stopped.store(true, std::memory_order_release);
  waker.join();
}

}  // namespace sluice
