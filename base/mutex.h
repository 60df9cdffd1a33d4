// normd::Mutex, MutexLock, Notification and BlockingCounter: Abseil's, with ThreadSanitizer told
// what they synchronise.
//
// Why: Debian's libabsl_synchronization is not built with -fsanitize=thread, so its own annotations
// are compiled out and TSan cannot see the happens-before an absl::Mutex (or Notification,
// BlockingCounter) provides; it then reports every access the mutex guards as a race
// (RELIABILITY.md). Under TSan these wrappers state the edges directly with TSan's public
// interface: __tsan_release on the object before unlocking, notifying or counting down,
// __tsan_acquire after locking, waking or waiting. A condition passed to Await is evaluated with
// the lock held, on the waiting thread or on an unlocking one, inside Abseil, so its evaluation
// acquires and releases too. Outside TSan every call is Abseil's, unchanged.
#ifndef NORMD_BASE_MUTEX_H_
#define NORMD_BASE_MUTEX_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

#if defined(__SANITIZE_THREAD__)
#define NORMD_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NORMD_THREAD_SANITIZER 1
#endif
#endif

#ifdef NORMD_THREAD_SANITIZER
#include <sanitizer/tsan_interface.h>
#endif

namespace normd {
namespace sync_internal {

// What happened before Released(p) on one thread happens before what follows Acquired(p) on
// another.
inline void Acquired(const void* p) {
#ifdef NORMD_THREAD_SANITIZER
  __tsan_acquire(const_cast<void*>(p));
#else
  (void)p;
#endif
}
inline void Released(const void* p) {
#ifdef NORMD_THREAD_SANITIZER
  __tsan_release(const_cast<void*>(p));
#else
  (void)p;
#endif
}

}  // namespace sync_internal

// A hand-off that a library made out of ThreadSanitizer's sight. Debian's gRPC is not built with
// TSan, so the ordering it guarantees between a reactor's calls into it (StartRead, StartWrite,
// Finish) and the callbacks that follow (OnReadDone, OnWriteDone, OnDone, on another thread) is
// invisible: the reactor's own fields, and the messages gRPC destroys after OnDone, then look
// raced. A reactor calls HandingToLibrary(this) before each such call and
// TakenBackFromLibrary(this) at the top of each callback; both compile to nothing outside TSan.
inline void HandingToLibrary(const void* key) { sync_internal::Released(key); }
inline void TakenBackFromLibrary(const void* key) { sync_internal::Acquired(key); }

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    mu_.Lock();
    sync_internal::Acquired(this);
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    sync_internal::Released(this);
    mu_.Unlock();
  }
  // Waits, unlocked, until `condition` holds, and returns with the lock held again.
  // The condition object is built before the release: another thread evaluates it.
  void Await(const absl::Condition& condition) {
    const auto& annotated = Annotated(condition);
    sync_internal::Released(this);
    mu_.Await(annotated);
    sync_internal::Acquired(this);
  }
  // As Await, but gives up at `deadline`; returns whether the condition holds.
  bool AwaitWithDeadline(const absl::Condition& condition, absl::Time deadline) {
    const auto& annotated = Annotated(condition);
    sync_internal::Released(this);
    const bool met = mu_.AwaitWithDeadline(annotated, deadline);
    sync_internal::Acquired(this);
    return met;
  }

 private:
  struct Guarded {
    const Mutex* mutex;
    const absl::Condition* condition;
  };
  // Runs with the lock held, on the waiting thread or on one unlocking: acquire what earlier
  // holders published, and publish this thread's accesses (reading the condition objects included)
  // to the next holder, since Abseil then unlocks or waits out of TSan's sight.
  static bool EvalGuarded(const Guarded* g) {
    sync_internal::Acquired(g->mutex);
    const bool holds = g->condition->Eval();
    sync_internal::Released(g->mutex);
    return holds;
  }
  // Only under TSan does the condition need wrapping; the wrapper lives as long as the Await call.
  struct AnnotatedCondition {
    Guarded guarded;
    absl::Condition condition;
    AnnotatedCondition(const Mutex* m, const absl::Condition& c)
        : guarded{m, &c}, condition(&Mutex::EvalGuarded, static_cast<const Guarded*>(&guarded)) {}
    AnnotatedCondition(const AnnotatedCondition&) = delete;  // `condition` points into this object
    operator const absl::Condition&() const { return condition; }  // NOLINT: used in place of one
  };
#ifdef NORMD_THREAD_SANITIZER
  AnnotatedCondition Annotated(const absl::Condition& c) const {
    return AnnotatedCondition(this, c);
  }
#else
  const absl::Condition& Annotated(const absl::Condition& c) const { return c; }
#endif

  absl::Mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class Notification {
 public:
  void Notify() {
    sync_internal::Released(this);
    n_.Notify();
  }
  bool HasBeenNotified() const {
    const bool notified = n_.HasBeenNotified();
    if (notified) sync_internal::Acquired(this);
    return notified;
  }
  void WaitForNotification() const {
    n_.WaitForNotification();
    sync_internal::Acquired(this);
  }
  bool WaitForNotificationWithTimeout(absl::Duration timeout) const {
    const bool notified = n_.WaitForNotificationWithTimeout(timeout);
    if (notified) sync_internal::Acquired(this);
    return notified;
  }

 private:
  absl::Notification n_;
};

class BlockingCounter {
 public:
  explicit BlockingCounter(int count) : counter_(count) {}
  bool DecrementCount() {
    sync_internal::Released(this);
    return counter_.DecrementCount();
  }
  void Wait() {
    counter_.Wait();
    sync_internal::Acquired(this);
  }

 private:
  absl::BlockingCounter counter_;
};

// Debian's Abseil is built with its debug checks on, so every absl::Mutex lock, normd's and the
// gRPC library's own alike, runs deadlock detection: it records lock order in a graph guarded by
// one process-wide lock. On the development VM that made a nested pair of lock/unlock 107 ns
// instead of 29, and a lock of a fresh mutex 79 ns instead of 16, and every thread of the process
// meets at that one lock. The binaries that serve or generate load (normd, normd-echo, normbench)
// turn it off at start-up, before any thread starts; the tests keep it, where it can find a
// lock-order bug.
inline void TurnOffMutexDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace normd

#endif  // NORMD_BASE_MUTEX_H_
