// Who is at the other end of a call, from its gRPC peer string: whether it runs on this host, and
// which user it runs as. Shared memory is for clients on this host only, and a system region may
// name only objects of the client's own user (system_mapping.h).
//
// What gRPC 1.51 says and what normd makes of it:
//   "ipv4:127.0.0.1:PORT", "ipv6:[::1]:PORT"  loopback TCP: local. The user is the owner of the
//        client's socket, read from the kernel's socket table (/proc/net/tcp, tcp6), as identd
//        does.
//   "fd:N"   a Unix-socket connection that normd accepted itself (server/rpc/unix_listener.h) and
//        recorded here with its SO_PEERCRED credentials before handing it to gRPC: local.
//   "unix:"  a Unix-socket connection accepted by gRPC's own listener. gRPC 1.51 names every such
//        connection "unix:" (the client's socket has no path), so connections could not be told
//        apart: normd never listens that way, and this is refused.
//   anything else (another address, "ipv4:10.0.0.7:PORT"): not local.
//
// Peer strings are unique among live connections (a port or a descriptor is not reused while its
// connection is open), which is what lets the region registry bind regions to one connection.
//
// Thread-safe.
#ifndef NORMD_SERVER_REGIONS_PEER_IDENTITY_H_
#define NORMD_SERVER_REGIONS_PEER_IDENTITY_H_

#include <sys/types.h>

#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/mutex.h"

namespace normd {

struct PeerIdentity {
  bool local = false;
  std::optional<uid_t> uid;  // known for local peers when the kernel told
};

class PeerDirectory {
 public:
  // Records the credentials of a Unix-socket connection on descriptor `fd`, before gRPC sees it:
  // later calls with peer "fd:<fd>" come from it (until the descriptor is reused by the next one).
  void RecordUnixPeer(int fd, uid_t uid, pid_t pid);

  // The identity of `peer` (a grpc::ServerContext::peer()).
  PeerIdentity Identify(absl::string_view peer) const;

  // The uid owning the established TCP socket whose local address is `address` (16 bytes, IPv6,
  // an IPv4 address as ::ffff:a.b.c.d) and `port`: a loopback client's side of its connection,
  // from /proc/net/tcp and tcp6. nullopt when no single owner is found.
  static std::optional<uid_t> LoopbackSocketOwner(const unsigned char* address, int port);

 private:
  struct UnixPeer {
    uid_t uid;
    pid_t pid;
  };
  mutable normd::Mutex mu_;
  absl::flat_hash_map<int, UnixPeer> unix_peers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace normd

#endif  // NORMD_SERVER_REGIONS_PEER_IDENTITY_H_
