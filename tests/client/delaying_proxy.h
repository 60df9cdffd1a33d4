// A TCP relay on loopback that holds each new connection for a while before it connects it to the
// real server: a server that is slow to answer a new connection (busy, remote, behind a slow TLS
// terminator), for tests of how long a client waits for one.
//
//   DelayingProxy proxy(server.port(), absl::Seconds(1));
//   options.target = proxy.address();  // each connection's first byte arrives after 1 s
#ifndef NORMD_TESTS_CLIENT_DELAYING_PROXY_H_
#define NORMD_TESTS_CLIENT_DELAYING_PROXY_H_

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"

namespace normd::testing {

class DelayingProxy {
 public:
  // Listens on 127.0.0.1 (a free port). Each accepted connection waits `delay`, then is relayed
  // both ways to 127.0.0.1:`upstream_port` until either side closes.
  DelayingProxy(int upstream_port, absl::Duration delay);
  ~DelayingProxy();  // closes every connection and joins its threads
  DelayingProxy(const DelayingProxy&) = delete;
  DelayingProxy& operator=(const DelayingProxy&) = delete;

  bool listening() const { return port_ > 0; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  void AcceptLoop();
  void Relay(int client_fd);

  const int upstream_port_;
  const absl::Duration delay_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  // Added to by the acceptor only; read by the destructor once the acceptor has been joined.
  std::vector<std::thread> relays_;
};

}  // namespace normd::testing

#endif  // NORMD_TESTS_CLIENT_DELAYING_PROXY_H_
