// normd::Clock: the time a thread decides by, and waits against.
//
// Why an interface: a worker's batching waits (how long a launch waits for company, how long the
// thread polls its queue) are rules about time. Behind this interface a test drives them with a
// clock it moves by hand (tests/unit/fake_clock.h) instead of sleeping and timing real threads;
// normd itself always runs on RealClock(), which is absl::Now() and Abseil's timed waits.
#ifndef NORMD_BASE_CLOCK_H_
#define NORMD_BASE_CLOCK_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace normd {

class Clock {
 public:
  virtual ~Clock() = default;

  virtual absl::Time Now() = 0;

  // Called with `mu` held: releases it until `condition` holds or this clock reaches `deadline`,
  // and returns with `mu` held again; true if the condition holds.
  virtual bool AwaitWithDeadline(normd::Mutex& mu, const absl::Condition& condition,
                                 absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;
};

class RealClock final : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  bool AwaitWithDeadline(normd::Mutex& mu, const absl::Condition& condition, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) override {
    return mu.AwaitWithDeadline(condition, deadline);
  }

  // The one instance normd uses; it holds no state (never destroyed, so that no thread outlives
  // it).
  static RealClock& Get() {
    static RealClock* const clock = new RealClock;
    return *clock;
  }
};

}  // namespace normd

#endif  // NORMD_BASE_CLOCK_H_
