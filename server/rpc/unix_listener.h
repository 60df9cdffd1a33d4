// normd's Unix domain socket (--listen-unix=PATH), for clients on this host.
//
// The connections are accepted here rather than by gRPC's own listener: gRPC 1.51 names every
// connection of its Unix listener "unix:" (the clients' sockets have no path), so calls of
// different clients could not be told apart, and shared-memory regions belong to one connection.
// Each accepted connection's credentials (SO_PEERCRED: the client's uid and pid) are recorded in
// the PeerDirectory and the descriptor is handed to gRPC (AddInsecureChannelFromFd), whose calls
// then carry the peer "fd:N". The socket is plaintext: it never leaves the host, and who may
// connect is the socket file's permissions' business (its directory's, and the umask).
#ifndef NORMD_SERVER_RPC_UNIX_LISTENER_H_
#define NORMD_SERVER_RPC_UNIX_LISTENER_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/regions/peer_identity.h"

namespace normd {

class UnixListener {
 public:
  // Binds `path` and listens. A socket file left by a normd that is gone is replaced; a path in
  // use by a live server, or a file of another kind, is an error.
  static absl::StatusOr<std::unique_ptr<UnixListener>> Listen(const std::string& path);
  // Stops accepting and removes the socket file; connections already accepted stay with gRPC.
  ~UnixListener();
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  // Accepts connections on a thread of its own, recording each in `peers` and giving it to
  // `server` (started). Both must outlive the listener or its Stop().
  void Start(grpc::Server* server, PeerDirectory* peers);
  // Stops accepting (before the server shuts down). Idempotent.
  void Stop();

  const std::string& path() const { return path_; }

 private:
  UnixListener(std::string path, int listen_fd, int wake_fd);
  void AcceptLoop(grpc::Server* server, PeerDirectory* peers);

  const std::string path_;
  const int listen_fd_;
  const int wake_fd_;  // an eventfd that ends the accept loop
  std::thread thread_;
};

}  // namespace normd

#endif  // NORMD_SERVER_RPC_UNIX_LISTENER_H_
