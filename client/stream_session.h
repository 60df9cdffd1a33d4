// StreamSession: many Normalize requests pipelined over one NormalizeStream, for high request
// rates.
//
// Send() queues a request and returns at once; the session writes requests in order (one write in
// flight at a time, as gRPC requires), and the server answers them in order, so each response
// resolves the oldest outstanding request. There is no per-call round trip and no per-call HTTP/2
// stream setup.
//
// When the stream fails with NOT_FOUND (a registered weight: the server restarted or evicted it) or
// UNAVAILABLE (the connection broke), the requests it left unanswered go through
// Client::NormalizeAsync, which registers the weight again or retries per the channel's policy
// (RMSNorm is idempotent, so a resend is safe); the session opens a fresh stream for later sends.
// Those results may arrive out of order. Any other stream error fails the unanswered requests with
// that status; the next Send opens a new stream. Streams carry no deadline: a session lives as long
// as its owner wants.
//
// Threads: Send may be called from any thread. Callbacks run on gRPC threads.
#ifndef NORMD_CLIENT_STREAM_SESSION_H_
#define NORMD_CLIENT_STREAM_SESSION_H_

#include <future>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "base/mutex.h"
#include "client/request.h"

namespace normd {

class Client;

class StreamSession {
 public:
  ~StreamSession();  // Finish()
  StreamSession(const StreamSession&) = delete;
  StreamSession& operator=(const StreamSession&) = delete;

  void Send(std::shared_ptr<const PreparedRequest> request, NormalizeCallback done);
  std::future<absl::StatusOr<NormalizeResult>> Send(std::shared_ptr<const PreparedRequest> request);

  // Closes the sending side and waits until every request sent has its answer. Returns the first
  // stream error seen (other than NOT_FOUND or UNAVAILABLE, whose requests were retried), or OK.
  // Send after Finish fails each call with FAILED_PRECONDITION.
  absl::Status Finish();

 private:
  friend class Client;
  class Reactor;
  explicit StreamSession(Client* client);
  void DetachReactor(Reactor* reactor);
  void OnReactorDone(const absl::Status& status);
  void OnAnswered();

  Client* const client_;
  normd::Mutex mu_;
  Reactor* current_ ABSL_GUARDED_BY(mu_) = nullptr;  // the stream new requests go to; owns itself
  int live_reactors_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t unanswered_ ABSL_GUARDED_BY(mu_) = 0;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace normd

#endif  // NORMD_CLIENT_STREAM_SESSION_H_
