// The client's side of its connection's region session (normd.v1 OpenRegionSession): opened
// before the first region is registered and held open while the Client lives. normd binds regions
// to the connection that holds the session and releases them when it ends, so the session must
// stay open for as long as its regions are used.
//
// Threads: thread-safe. The call's callbacks run on gRPC's threads.
#ifndef NORMD_CLIENT_REGION_SESSION_H_
#define NORMD_CLIENT_REGION_SESSION_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "normd/v1/normd.grpc.pb.h"

namespace normd {

class RegionSession {
 public:
  // Opens a session on the stub's channel and waits until normd confirms it (or `deadline`).
  static absl::StatusOr<std::unique_ptr<RegionSession>> Open(normd::v1::Normalizer::Stub& stub,
                                                             absl::Time deadline);
  // Ends the session (normd releases the connection's regions) and waits for the call to end.
  ~RegionSession();
  RegionSession(const RegionSession&) = delete;
  RegionSession& operator=(const RegionSession&) = delete;

  // False once the call has ended: the connection closed or normd shut down, and with it the
  // regions registered under it.
  bool open() const;
  // How normd names this connection ("fd:N" over its Unix socket, "ipv4:127.0.0.1:PORT").
  const std::string& peer() const { return peer_; }

 private:
  class Reactor;
  explicit RegionSession(std::unique_ptr<Reactor> reactor, std::string peer);

  std::unique_ptr<Reactor> reactor_;
  const std::string peer_;
};

}  // namespace normd

#endif  // NORMD_CLIENT_REGION_SESSION_H_
