// StallWatch: deadlines for stream writes that a client may never let complete.
//
// A NormalizeStream whose client stops reading keeps its unsent responses, and under
// --max-memory-bytes their charge, for as long as the client keeps the stream open: a few thousand
// such streams hold the admitted share and every other call waits for room and is refused. A stream
// watches each response write here; a write still outstanding at its deadline is a stall, and the
// stream is told so (it then cancels the call, which gives back what it holds).
//
// The protocol is the memory gate's (memory_gate.h): Watch registers a callback, Unwatch takes it
// back (true) unless it has already been taken to run (false: the callback has run or is running),
// and ExpireDue, which a timer calls, runs the callbacks of deadlines that have passed. Callbacks
// run outside the watch's lock, on ExpireDue's caller's thread, never inside Watch or Unwatch.
#ifndef NORMD_SERVER_RPC_STALL_WATCH_H_
#define NORMD_SERVER_RPC_STALL_WATCH_H_

#include <cstdint>
#include <functional>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace normd {

class StallWatch {
 public:
  using Ticket = uint64_t;  // never 0

  // `timeout`: how long a watched write may stay outstanding.
  explicit StallWatch(absl::Duration timeout) : timeout_(timeout) {}

  absl::Duration timeout() const { return timeout_; }

  // Calls `on_stall` from ExpireDue once `now` + timeout() has passed, unless Unwatch comes first.
  Ticket Watch(absl::Time now, std::function<void()> on_stall);

  // True: the watch is gone and its callback will not run. False: the callback has run or is
  // running (its owner must wait for it before going away).
  bool Unwatch(Ticket ticket);

  // Runs the callbacks whose deadline is at or before `now`.
  void ExpireDue(absl::Time now);

  size_t watched() const;

 private:
  struct Entry {
    absl::Time deadline;
    std::function<void()> on_stall;
  };

  const absl::Duration timeout_;
  mutable normd::Mutex mu_;
  Ticket next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<Ticket, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace normd

#endif  // NORMD_SERVER_RPC_STALL_WATCH_H_
