#include "server/rpc/region_session_reactor.h"

#include "server/rpc/grpc_status.h"

namespace normd {

RegionSessionReactor::RegionSessionReactor(grpc::CallbackServerContext* context,
                                           RegionRegistry* regions)
    : regions_(regions), peer_(context->peer()) {
  absl::Status refused;
  {
    normd::MutexLock lock(&mu_);
    if (regions_ == nullptr) {
      refused = absl::FailedPreconditionError(
          "shared memory is off on this server (start normd with --shared-memory=system, cuda, "
          "or system,cuda)");
    } else {
      absl::StatusOr<uint64_t> token =
          regions_->OpenSession(peer_, [this](const absl::Status& status) { End(status); });
      if (token.ok()) {
        // Under mu_, so that End (which waits for it) cannot finish the call before this write.
        token_ = *token;
        event_.set_peer(peer_);
        HandingToLibrary(this);
        StartWrite(&event_);
        return;
      }
      refused = token.status();
    }
  }
  // No session: nothing else will finish the call. Nothing touches `this` after Finish, which
  // lets gRPC delete it.
  HandingToLibrary(this);
  Finish(ToGrpcStatus(refused));
}

void RegionSessionReactor::OnCancel() {
  TakenBackFromLibrary(this);
  uint64_t token;
  {
    normd::MutexLock lock(&mu_);
    token = token_;
  }
  // Releases the session's regions and calls End, unless the session ended already (a shutdown
  // ended it) or never opened (the constructor finished the call).
  if (token != 0) regions_->EndSession(peer_, token);
}

void RegionSessionReactor::End(const absl::Status& status) {
  {
    normd::MutexLock lock(&mu_);  // the constructor has started its write
  }
  HandingToLibrary(this);
  Finish(ToGrpcStatus(status));
}

}  // namespace normd
