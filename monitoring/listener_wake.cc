// ListenerWaker: see listener_wake.h.
#include "monitoring/listener_wake.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <system_error>
#include <thread>

namespace sluice {
namespace {

// One connection, closed at once; connect gives up after 100 ms.
void ConnectOnce(const sockaddr_storage& addr, socklen_t len) {
  const int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  timeval timeout{0, 100000};
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  (void)connect(fd, reinterpret_cast<const sockaddr*>(&addr), len);
  close(fd);
}

}  // namespace

ListenerWaker::ListenerWaker(const std::string& host, int port) {
  if (port <= 0) return;
  std::string h = host;
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty()) h = "0.0.0.0";
  addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(h.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_addrlen > sizeof(sockaddr_storage)) continue;
    Address address;
    std::memcpy(&address.addr, a->ai_addr, a->ai_addrlen);
    address.len = a->ai_addrlen;
    if (address.addr.ss_family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(&address.addr);
      if (in->sin_addr.s_addr == htonl(INADDR_ANY)) in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else if (address.addr.ss_family == AF_INET6) {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&address.addr);
      if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr)) in6->sin6_addr = in6addr_loopback;
    } else {
      continue;
    }
    addresses_.push_back(address);
  }
  freeaddrinfo(found);
}

void ListenerWaker::RunWhileConnecting(const std::function<void()>& stop) const {
  if (addresses_.empty()) {
    stop();
    return;
  }
  std::atomic<bool> stopped{false};
  std::thread waker;
  try {
    waker = std::thread([this, &stopped] {
      while (!stopped.load(std::memory_order_acquire)) {
        for (const Address& a : addresses_) ConnectOnce(a.addr, a.len);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  } catch (const std::system_error&) {  // no thread to be had: the slow stop
    stop();
    return;
  }
  // Joined however `stop` ends.
  struct Join {
    std::atomic<bool>* stopped;
    std::thread* waker;
    ~Join() {
      stopped->store(true, std::memory_order_release);
      waker->join();
    }
  } join{&stopped, &waker};
  stop();
}

}  // namespace sluice
