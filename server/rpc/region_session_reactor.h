// OpenRegionSession: the call that keeps a connection's region session open (region_registry.h).
//
// It registers the session for the call's peer, writes one RegionSessionEvent, and then stays open
// without a word until the session ends: the client cancels the call or its connection closes
// (OnCancel ends the session, which releases its regions), or normd shuts down (the registry ends
// every session, and the call finishes UNAVAILABLE). The registry calls `end` once, whoever ends
// the session; that is the reactor's only Finish after a successful open.
//
// Threads: the constructor, OnCancel and the registry's end run on different threads. mu_ orders
// the constructor's open and first write before the Finish that `end` makes.
#ifndef NORMD_SERVER_RPC_REGION_SESSION_REACTOR_H_
#define NORMD_SERVER_RPC_REGION_SESSION_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <string>

#include "base/mutex.h"
#include "normd/v1/normd.pb.h"
#include "server/regions/region_registry.h"

namespace normd {

class RegionSessionReactor final : public grpc::ServerWriteReactor<normd::v1::RegionSessionEvent> {
 public:
  // `regions` is null when shared memory is off (the call then fails at once).
  RegionSessionReactor(grpc::CallbackServerContext* context, RegionRegistry* regions);

  void OnWriteDone(bool /*ok*/) override { TakenBackFromLibrary(this); }
  void OnCancel() override;
  void OnDone() override {
    TakenBackFromLibrary(this);
    delete this;
  }

 private:
  void End(const absl::Status& status);

  RegionRegistry* const regions_;
  const std::string peer_;
  normd::Mutex mu_;
  uint64_t token_ = 0;  // written in the constructor, before the session can end
  normd::v1::RegionSessionEvent event_;
};

}  // namespace normd

#endif  // NORMD_SERVER_RPC_REGION_SESSION_REACTOR_H_
