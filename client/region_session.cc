#include "client/region_session.h"

#include "absl/strings/str_cat.h"
#include "client/grpc_status.h"

namespace normd {

// The OpenRegionSession call: one read for normd's confirmation, then it waits for the end.
class RegionSession::Reactor final : public grpc::ClientReadReactor<normd::v1::RegionSessionEvent> {
 public:
  explicit Reactor(normd::v1::Normalizer::Stub& stub) {
    stub.async()->OpenRegionSession(&context_, &request_, this);
    HandingToLibrary(this);
    StartRead(&event_);
    StartCall();
  }

  // A failed read is followed by OnDone, with the status that says why.
  void OnReadDone(bool ok) override {
    TakenBackFromLibrary(this);
    normd::MutexLock lock(&mu_);
    if (ok) confirmed_ = true;
  }
  void OnDone(const grpc::Status& status) override {
    TakenBackFromLibrary(this);
    normd::MutexLock lock(&mu_);
    done_ = true;
    status_ = FromGrpcStatus(status);
  }

  // Waits for normd's confirmation (or the call's end, or the deadline); the peer on success.
  absl::StatusOr<std::string> AwaitConfirmation(absl::Time deadline) {
    normd::MutexLock lock(&mu_);
    mu_.AwaitWithDeadline(absl::Condition(
                              +[](Reactor* r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(r->mu_) {
                                return r->confirmed_ || r->done_;
                              },
                              this),
                          deadline);
    if (confirmed_) return event_.peer();
    if (done_) return status_.ok() ? absl::UnavailableError("the region session ended") : status_;
    return absl::DeadlineExceededError("normd did not confirm the region session in time");
  }

  bool open() const {
    normd::MutexLock lock(&mu_);
    return confirmed_ && !done_;
  }

  // Cancels the call and waits for gRPC to be done with this reactor.
  void End() {
    context_.TryCancel();
    normd::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
  }

 private:
  grpc::ClientContext context_;
  normd::v1::OpenRegionSessionRequest request_;
  normd::v1::RegionSessionEvent event_;
  mutable normd::Mutex mu_;
  bool confirmed_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<std::unique_ptr<RegionSession>> RegionSession::Open(
    normd::v1::Normalizer::Stub& stub, absl::Time deadline) {
  auto reactor = std::make_unique<Reactor>(stub);
  absl::StatusOr<std::string> peer = reactor->AwaitConfirmation(deadline);
  if (!peer.ok()) {
    reactor->End();
    return absl::Status(peer.status().code(),
                        absl::StrCat("OpenRegionSession: ", peer.status().message()));
  }
  return std::unique_ptr<RegionSession>(new RegionSession(std::move(reactor), *std::move(peer)));
}

RegionSession::RegionSession(std::unique_ptr<Reactor> reactor, std::string peer)
    : reactor_(std::move(reactor)), peer_(std::move(peer)) {}

RegionSession::~RegionSession() { reactor_->End(); }

bool RegionSession::open() const { return reactor_->open(); }

}  // namespace normd
