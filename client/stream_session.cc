#include "client/stream_session.h"

#include <deque>
#include <utility>

#include "base/status_macros.h"
#include "client/grpc_status.h"
#include "client/normd_client.h"

namespace normd {

// One gRPC NormalizeStream. Deletes itself in OnDone, after telling the session.
// mu_ guards the queues and flags; gRPC operations are started outside it, after the decision to
// start them was recorded under it (writing_, hold_released_), so no two writes overlap and the
// hold that keeps the stream open is released exactly once.
class StreamSession::Reactor final
    : public grpc::ClientBidiReactor<normd::v1::NormalizeRequest, normd::v1::NormalizeResponse> {
 public:
  struct Entry {
    std::shared_ptr<const PreparedRequest> request;
    NormalizeCallback done;
  };

  Reactor(StreamSession* session, Client* client) : session_(session), client_(client) {
    context_.set_wait_for_ready(client_->options_.wait_for_ready);
    client_->stub_->async()->NormalizeStream(&context_, this);
    // The hold keeps the stream open between writes, until Close() or a failure releases it.
    AddHold();
    HandingToLibrary(this);  // gRPC's hand-offs to the callbacks, stated for TSan (base/mutex.h)
    StartRead(&response_);
    StartCall();
  }

  // Queues `entry`; false (and `entry` untouched) when this stream no longer takes requests.
  bool Enqueue(Entry& entry) {
    const normd::v1::NormalizeRequest* to_write = nullptr;
    {
      normd::MutexLock lock(&mu_);
      if (dead_ || closing_) return false;
      unwritten_.push_back(std::move(entry));
      to_write = NextWriteLocked();
    }
    if (to_write != nullptr) {
      HandingToLibrary(this);
      StartWrite(to_write);
    }
    return true;
  }

  void Close() {
    bool writes_done = false;
    {
      normd::MutexLock lock(&mu_);
      closing_ = true;
      writes_done = ReleaseHoldLocked();
    }
    if (writes_done) Release();
  }

  void OnWriteDone(bool ok) override {
    TakenBackFromLibrary(this);
    const normd::v1::NormalizeRequest* to_write = nullptr;
    bool release = false;
    {
      normd::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) dead_ = true;
      to_write = NextWriteLocked();
      if (to_write == nullptr) release = ReleaseHoldLocked();
    }
    HandingToLibrary(this);
    if (to_write != nullptr) StartWrite(to_write);
    if (release) Release();
  }

  void OnReadDone(bool ok) override {
    TakenBackFromLibrary(this);
    if (!ok) {
      bool release = false;
      {
        normd::MutexLock lock(&mu_);
        dead_ = true;
        release = ReleaseHoldLocked();
      }
      if (release) Release();
      return;
    }
    Entry entry;
    {
      normd::MutexLock lock(&mu_);
      entry = std::move(awaiting_.front());
      awaiting_.pop_front();
    }
    entry.done(ToNormalizeResult(std::move(response_)));
    session_->OnAnswered();
    HandingToLibrary(this);
    StartRead(&response_);
  }

  void OnDone(const grpc::Status& grpc_status) override {
    TakenBackFromLibrary(this);
    std::deque<Entry> left;
    {
      normd::MutexLock lock(&mu_);
      left = std::move(awaiting_);
      for (Entry& e : unwritten_) left.push_back(std::move(e));
      unwritten_.clear();
    }
    absl::Status status = FromGrpcCall(grpc_status, context_, client_->options_.target);
    if (status.ok() && !left.empty())
      status = absl::InternalError("stream ended before every response came");
    for (Entry& e : left) {
      if (status.code() == absl::StatusCode::kNotFound ||
          status.code() == absl::StatusCode::kUnavailable) {
        // RMSNorm is idempotent, so an unanswered request may be sent again: the unary path
        // registers the weight again (NOT_FOUND) or retries on a working connection (UNAVAILABLE).
        StreamSession* session = session_;
        NormalizeCallback done = std::move(e.done);
        client_->NormalizeAsync(std::move(e.request),
                                [session, done](absl::StatusOr<NormalizeResult> r) {
                                  done(std::move(r));
                                  session->OnAnswered();
                                });
      } else {
        e.done(status);
        session_->OnAnswered();
      }
    }
    // The session may be destroyed once it hears of this; the context (which references the
    // channel) goes first, so the last channel reference never drops on this gRPC thread.
    StreamSession* session = session_;
    session->DetachReactor(this);
    delete this;
    session->OnReactorDone(status);
  }

 private:
  // The next request to write, moved to awaiting_, if no write is in flight; nullptr otherwise.
  const normd::v1::NormalizeRequest* NextWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || dead_ || unwritten_.empty()) return nullptr;
    writing_ = true;
    awaiting_.push_back(std::move(unwritten_.front()));
    unwritten_.pop_front();
    return &awaiting_.back().request->proto();
  }

  // True when the caller must release the hold now: the stream is closing or dead and no write is
  // in flight. Half-closes first when the stream is healthy.
  bool ReleaseHoldLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (hold_released_ || writing_ || !(closing_ || dead_)) return false;
    if (!dead_ && !unwritten_.empty()) return false;
    hold_released_ = true;
    half_close_ = !dead_;
    return true;
  }

  void Release() {
    bool half_close;
    {
      normd::MutexLock lock(&mu_);
      half_close = half_close_;
    }
    HandingToLibrary(this);
    if (half_close) StartWritesDone();
    RemoveHold();
  }

  StreamSession* const session_;
  Client* const client_;
  grpc::ClientContext context_;
  normd::v1::NormalizeResponse response_;  // the read in flight; only gRPC's read path touches it
  normd::Mutex mu_;
  std::deque<Entry> unwritten_ ABSL_GUARDED_BY(mu_);
  std::deque<Entry> awaiting_ ABSL_GUARDED_BY(mu_);  // written (or being written), oldest first
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool dead_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
  bool half_close_ ABSL_GUARDED_BY(mu_) = false;
};

StreamSession::StreamSession(Client* client) : client_(client) {}

StreamSession::~StreamSession() { Finish().IgnoreError(); }

void StreamSession::Send(std::shared_ptr<const PreparedRequest> request, NormalizeCallback done) {
  Reactor::Entry entry{std::move(request), std::move(done)};
  // A stream that died between our look and our enqueue is replaced; two tries are enough since a
  // new stream takes requests until Close.
  for (int tries = 0; tries < 3; ++tries) {
    Reactor* reactor;
    {
      normd::MutexLock lock(&mu_);
      if (finished_) break;
      if (current_ == nullptr) {
        current_ = new Reactor(this, client_);
        ++live_reactors_;
      }
      reactor = current_;
      ++unanswered_;
    }
    if (reactor->Enqueue(entry)) return;
    normd::MutexLock lock(&mu_);
    --unanswered_;
    if (current_ == reactor) current_ = nullptr;
  }
  bool finished;
  {
    normd::MutexLock lock(&mu_);
    finished = finished_;
    if (!finished) ++unanswered_;
  }
  if (finished) {
    entry.done(absl::FailedPreconditionError("StreamSession: Send after Finish"));
    return;
  }
  // Streams keep failing at once (the connection is down): the unary path and its retries take it.
  client_->NormalizeAsync(std::move(entry.request),
                          [this, done = std::move(entry.done)](absl::StatusOr<NormalizeResult> r) {
                            done(std::move(r));
                            OnAnswered();
                          });
}

std::future<absl::StatusOr<NormalizeResult>> StreamSession::Send(
    std::shared_ptr<const PreparedRequest> request) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<NormalizeResult>>>();
  std::future<absl::StatusOr<NormalizeResult>> future = promise->get_future();
  Send(std::move(request),
       [promise](absl::StatusOr<NormalizeResult> r) { promise->set_value(std::move(r)); });
  return future;
}

absl::Status StreamSession::Finish() {
  Reactor* reactor;
  {
    normd::MutexLock lock(&mu_);
    finished_ = true;
    reactor = current_;
    current_ = nullptr;
  }
  if (reactor != nullptr) reactor->Close();
  normd::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](StreamSession* s)
           ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->live_reactors_ == 0 && s->unanswered_ == 0; },
      this));
  return first_error_;
}

void StreamSession::DetachReactor(Reactor* reactor) {
  normd::MutexLock lock(&mu_);
  if (current_ == reactor) current_ = nullptr;
}

void StreamSession::OnReactorDone(const absl::Status& status) {
  normd::MutexLock lock(&mu_);
  --live_reactors_;
  const bool retried = status.code() == absl::StatusCode::kNotFound ||
                       status.code() == absl::StatusCode::kUnavailable;
  if (!status.ok() && !retried && first_error_.ok()) first_error_ = status;
}

void StreamSession::OnAnswered() {
  normd::MutexLock lock(&mu_);
  --unanswered_;
}

}  // namespace normd
