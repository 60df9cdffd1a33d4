// MemoryGate: the admitted share of --max-memory-bytes, counted in one place, with a queue for
// calls that wait for room before normd reads their message.
//
// gRPC reads a message only when normd asks for it, so a call that must not take normd past its
// budget can wait with its bytes still on the client's side (held back by HTTP/2 flow control)
// instead of being refused or read into memory. Such a call reserves a provisional amount before
// its read (Wait), converts it to its real charge once the message is read (Resize), and gives the
// charge back once gRPC is done with the call (Release). Requests admitted without a wait (a
// stream's, through the scheduler) are charged with TryCharge and refused when there is no room.
//
// Waiters are granted in arrival order, each as soon as it fits; a waiter leaves the queue when its
// call is cancelled (Cancel) or when it has waited longer than the gate allows (ExpireDue, which a
// timer calls: the gate keeps no thread and reads no clock itself, so tests drive it).
//
// Locking: one mutex guards the counts and the queue. Callbacks run outside it, on the thread that
// granted or expired them (Release's, Resize's or ExpireDue's caller), never inside Wait.
#ifndef NORMD_SERVER_SCHEDULING_MEMORY_GATE_H_
#define NORMD_SERVER_SCHEDULING_MEMORY_GATE_H_

#include <cstdint>
#include <functional>
#include <list>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace normd {

class MemoryGate {
 public:
  // OK: the reservation is held (the callee owns it); an error: nothing is reserved.
  using OnReady = std::function<void(const absl::Status&)>;
  // Identifies a waiter to Cancel; kGranted when Wait granted the reservation at once.
  using Ticket = uint64_t;
  static constexpr Ticket kGranted = 0;

  // `limit_bytes` 0: no bound (every reservation is granted at once, and only counted).
  MemoryGate(int64_t limit_bytes, absl::Duration max_wait);

  // Reserves `bytes` at once when the queue is empty and they fit (returning kGranted; `on_ready`
  // is not called), or queues the caller, which `on_ready` then tells when it is granted or has
  // waited `max_wait` (RESOURCE_EXHAUSTED, naming --max-memory-bytes and the numbers). A
  // reservation fits when the charges held stay within the limit with it, or when nothing is held.
  Ticket Wait(int64_t bytes, absl::Time now, OnReady on_ready);

  // Takes a waiter out of the queue: true when it was waiting (`on_ready` will not be called and
  // nothing is reserved); false when it was already granted or expired (its `on_ready` has run or
  // is running).
  bool Cancel(Ticket ticket);

  // Changes a held charge from `from` to `to` bytes. A smaller charge is always taken (and may
  // grant waiters); a larger one only when it fits, else the charge stays `from` and the error
  // says why.
  absl::Status Resize(int64_t from, int64_t to);

  // Charges `bytes` without waiting, when the queue is empty and they fit (see Wait); else the
  // error says why.
  absl::Status TryCharge(int64_t bytes);

  // Gives back a charge, and grants waiters that now fit, in order.
  void Release(int64_t bytes);

  // Fails the waiters that have waited `max_wait` by `now`.
  void ExpireDue(absl::Time now);

  int64_t limit_bytes() const { return limit_bytes_; }
  int64_t charged_bytes() const;
  size_t waiting() const;

 private:
  struct Waiter {
    Ticket ticket;
    int64_t bytes;
    absl::Time since;
    OnReady on_ready;
  };

  bool FitsLocked(int64_t bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status NoRoom(int64_t bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Grants the waiters at the front that fit, moving them to `granted` to call outside the lock.
  void GrantLocked(std::list<Waiter>& granted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int64_t limit_bytes_;
  const absl::Duration max_wait_;
  mutable normd::Mutex mu_;
  int64_t charged_ ABSL_GUARDED_BY(mu_) = 0;
  Ticket next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
  std::list<Waiter> queue_ ABSL_GUARDED_BY(mu_);  // front: the first to be granted
};

}  // namespace normd

#endif  // NORMD_SERVER_SCHEDULING_MEMORY_GATE_H_
