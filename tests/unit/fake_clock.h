// FakeClock: a normd::Clock (base/clock.h) that stands still until the test moves it.
//
// A worker on this clock waits for company, or busy-polls, until the test moves the clock past the
// deadline it waits for, however long that takes in real time; and the test can see that deadline
// (WaitForWaiter), so that it asserts when the worker will launch instead of timing it. A launch
// that goes while the clock stands still went without waiting, and the times a worker reports
// (queue wait) are exact.
#ifndef NORMD_TESTS_UNIT_FAKE_CLOCK_H_
#define NORMD_TESTS_UNIT_FAKE_CLOCK_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "base/mutex.h"

namespace normd {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'800'000'000))
      : now_ns_(absl::ToUnixNanos(start)) {}

  absl::Time Now() override { return absl::FromUnixNanos(now_ns_.load()); }

  bool AwaitWithDeadline(normd::Mutex& mu, const absl::Condition& condition, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) override {
    Waiter waiter{&mu, deadline};
    {
      normd::MutexLock lock(&mu_);
      waiters_.push_back(&waiter);
      ++waits_begun_;
    }
    struct Args {
      const absl::Condition* condition;
      const FakeClock* clock;
      absl::Time deadline;
    } args{&condition, this, deadline};
    // Evaluated under `mu` by this thread or by one unlocking `mu` (Advance does, after moving).
    mu.Await(absl::Condition(
        +[](Args* a) {
          return a->condition->Eval() ||
                 absl::FromUnixNanos(a->clock->now_ns_.load()) >= a->deadline;
        },
        &args));
    {
      normd::MutexLock lock(&mu_);
      waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &waiter));
    }
    return condition.Eval();
  }

  // Moves the clock forward and wakes whoever waits on it. Only while the mutexes they wait with
  // live (the workers using this clock).
  void Advance(absl::Duration by) {
    std::vector<normd::Mutex*> waiting;
    {
      normd::MutexLock lock(&mu_);
      now_ns_.fetch_add(absl::ToInt64Nanoseconds(by));
      for (const Waiter* w : waiters_) waiting.push_back(w->mu);
    }
    // Unlocking a mutex makes Abseil evaluate its waiters' conditions again.
    for (normd::Mutex* mu : waiting) {
      mu->Lock();
      mu->Unlock();
    }
  }

  // Blocks until a thread waits on this clock for `deadline` (true), or until `timeout` of real
  // time has passed (false).
  bool WaitForWaiter(absl::Time deadline, absl::Duration timeout) {
    struct Args {
      const std::vector<const Waiter*>* waiters;
      absl::Time deadline;
    } args{&waiters_, deadline};
    normd::MutexLock lock(&mu_);
    return mu_.AwaitWithDeadline(absl::Condition(
                                     +[](Args* a) {
                                       for (const Waiter* w : *a->waiters) {
                                         if (w->deadline == a->deadline) return true;
                                       }
                                       return false;
                                     },
                                     &args),
                                 absl::Now() + timeout);
  }

  // How many waits have begun on this clock.
  int waits_begun() {
    normd::MutexLock lock(&mu_);
    return waits_begun_;
  }

 private:
  struct Waiter {
    normd::Mutex* mu;
    absl::Time deadline;
  };

  std::atomic<int64_t> now_ns_;  // read inside waiters' conditions, which must not lock mu_
  normd::Mutex mu_;
  std::vector<const Waiter*> waiters_ ABSL_GUARDED_BY(mu_);
  int waits_begun_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace normd

#endif  // NORMD_TESTS_UNIT_FAKE_CLOCK_H_
