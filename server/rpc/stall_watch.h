// StallWatch: deadlines for stream writes that a client may never let complete.
//
// A NormalizeStream whose client stops reading keeps its unsent responses, and under
// --max-memory-bytes their charge, for as long as the client keeps the stream open: a few thousand
// such streams hold the admitted share and every other call waits for room and is refused. A stream
// watches each response write here; a write still outstanding at its deadline is a stall, and the
// stream is told so (it then cancels the call, which gives back what it holds).
//
// Two deadlines: `timeout` always, and the shorter `pressure_timeout` while memory is short (calls
// wait for room in the budget or are refused for it; the caller of ExpireDue says whether it is).
// Under pressure, a client that stopped reading would otherwise keep well-behaved calls waiting
// or refused for up to `timeout`; Envoy's overload manager resets streams under memory pressure
// for the same reason.
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

  // A stall as ExpireDue found it: how long the write had been outstanding, and whether it was
  // the pressure deadline that passed (the other one had not).
  struct Stall {
    absl::Duration outstanding;
    bool under_pressure = false;
  };
  using OnStall = std::function<void(const Stall&)>;

  // `timeout`: how long a watched write may stay outstanding (absl::InfiniteDuration(): no
  // limit). `pressure_timeout`: how long while there is pressure (zero: no shorter limit).
  explicit StallWatch(absl::Duration timeout,
                      absl::Duration pressure_timeout = absl::ZeroDuration())
      : timeout_(timeout), pressure_timeout_(pressure_timeout) {}

  // Calls `on_stall` from ExpireDue once a deadline counted from `now` has passed, unless Unwatch
  // comes first.
  Ticket Watch(absl::Time now, OnStall on_stall);

  // True: the watch is gone and its callback will not run. False: the callback has run or is
  // running (its owner must wait for it before going away).
  bool Unwatch(Ticket ticket);

  // Runs the callbacks whose deadline is at or before `now`: `timeout` past their watch's start,
  // or, when `under_pressure`, `pressure_timeout` (if not zero).
  void ExpireDue(absl::Time now, bool under_pressure = false);

  size_t watched() const;

 private:
  struct Entry {
    absl::Time since;
    OnStall on_stall;
  };

  const absl::Duration timeout_;
  const absl::Duration pressure_timeout_;
  mutable normd::Mutex mu_;
  Ticket next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<Ticket, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace normd

#endif  // NORMD_SERVER_RPC_STALL_WATCH_H_
