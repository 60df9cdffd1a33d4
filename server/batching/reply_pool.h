// A finished launch's answers spread over a few threads, so that the worker goes back to launching.
//
// Why: answering one small request (building its response, finishing the call, gRPC writing it to
// the socket) costs the worker's thread about as long as the device's whole round trip, so a worker
// answering a launch's dozen or more requests one after another caps normd's request rate when
// clients come over several connections. A few threads answering lift that cap; over a single
// connection gRPC's transport caps normd and the echo alike, and it changes nothing
// (docs/PERFORMANCE.md, "The measurements behind the automatic values").
//
// How the worker uses it (server/batching/worker.cc): it answers a launch's first request itself,
// so that no thread wake-up stands between the device and that client, and posts the others here;
// helpers, sleeping on the lock until answers are posted, take them one at a time. The worker takes
// posted answers too, one at a time, whenever it has nothing to launch, so that an answer never
// waits for a helper's wake-up while the worker idles.
#ifndef NORMD_SERVER_BATCHING_REPLY_POOL_H_
#define NORMD_SERVER_BATCHING_REPLY_POOL_H_

#include <atomic>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "base/mutex.h"
#include "server/core/work.h"

namespace normd {

// One request's answer, ready to be sent.
struct PendingAnswer {
  std::unique_ptr<WorkItem> item;
  absl::Status status;
  LaunchReport report;
};

class ReplyPool {
 public:
  // `threads` answer one launch's requests, the worker included: threads - 1 helpers (none for 1 or
  // less, and then Post answers on the calling thread).
  explicit ReplyPool(int threads);
  ~ReplyPool();  // answers whatever is still posted, then joins the helpers
  ReplyPool(const ReplyPool&) = delete;
  ReplyPool& operator=(const ReplyPool&) = delete;

  int helpers() const { return static_cast<int>(helpers_.size()); }

  // Takes the answers (leaving `answers` empty) for the helpers to send; without helpers, sends
  // them on the calling thread before returning.
  void Post(std::vector<PendingAnswer>& answers);

  // Sends one posted answer on the calling thread; false if none was waiting.
  bool AnswerOne();

  // Whether answers are posted and not yet taken (a hint: a helper may take them any moment).
  bool has_posted() const { return posted_.load(std::memory_order_relaxed) > 0; }

  // Sends every posted answer (on the calling thread and the helpers) and returns once the helpers
  // have finished the ones they took. The caller must post nothing meanwhile.
  void Drain();

 private:
  void HelperLoop();
  // Takes the oldest posted answer; false if none.
  bool Take(PendingAnswer& answer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finished();

  normd::Mutex mu_;
  std::deque<PendingAnswer> queue_ ABSL_GUARDED_BY(mu_);
  int answering_ ABSL_GUARDED_BY(mu_) = 0;  // taken by a helper and not yet sent
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<size_t> posted_{0};     // queue_.size(), readable without the lock
  std::vector<std::thread> helpers_;  // last: they start once everything above is built
};

// Sends one answer: the item's callback, then the item is destroyed.
void SendAnswer(PendingAnswer& answer);

}  // namespace normd

#endif  // NORMD_SERVER_BATCHING_REPLY_POOL_H_
