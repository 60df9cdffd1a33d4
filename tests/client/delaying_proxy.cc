#include "tests/client/delaying_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/time/clock.h"

namespace normd::testing {

namespace {

// How often blocked loops look at stopping_: the destructor waits at most this long per thread.
constexpr int kPollMs = 50;

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// Writes all of `data`; false if the peer is gone.
bool WriteAll(int fd, const char* data, ssize_t size) {
  while (size > 0) {
    const ssize_t n = send(fd, data, static_cast<size_t>(size), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= n;
  }
  return true;
}

}  // namespace

DelayingProxy::DelayingProxy(int upstream_port, absl::Duration delay)
    : upstream_port_(upstream_port), delay_(delay) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = Loopback(0);
  socklen_t length = sizeof addr;
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd_, 16) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    return;  // listening() stays false
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

DelayingProxy::~DelayingProxy() {
  stopping_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  for (std::thread& relay : relays_) relay.join();
  if (listen_fd_ >= 0) close(listen_fd_);
}

void DelayingProxy::AcceptLoop() {
  while (!stopping_) {
    pollfd ready{listen_fd_, POLLIN, 0};
    if (poll(&ready, 1, kPollMs) <= 0) continue;
    const int client_fd = accept(listen_fd_, nullptr, nullptr);
    if (client_fd < 0) continue;
    relays_.emplace_back([this, client_fd] { Relay(client_fd); });
  }
}

void DelayingProxy::Relay(int client_fd) {
  // The delay: nothing is read from the client nor sent to it, as by a server that has accepted
  // the connection but not yet got to it.
  const absl::Time until = absl::Now() + delay_;
  while (!stopping_ && absl::Now() < until) absl::SleepFor(absl::Milliseconds(kPollMs / 5));
  const int server_fd = socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in upstream = Loopback(upstream_port_);
  if (stopping_ || server_fd < 0 ||
      connect(server_fd, reinterpret_cast<const sockaddr*>(&upstream), sizeof upstream) != 0) {
    if (server_fd >= 0) close(server_fd);
    close(client_fd);
    return;
  }
  pollfd fds[2] = {{client_fd, POLLIN, 0}, {server_fd, POLLIN, 0}};
  char buffer[65536];
  while (!stopping_) {
    if (poll(fds, 2, kPollMs) <= 0) continue;
    bool open = true;
    for (int i = 0; i < 2 && open; ++i) {
      if (fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      open = n > 0 && WriteAll(fds[1 - i].fd, buffer, n);
    }
    if (!open) break;
  }
  close(server_fd);
  close(client_fd);
}

}  // namespace normd::testing
