// WaitUntil: waits for a state that no callback announces (a counter reaching a value, a worker
// going idle, a metric settling) by looking at it every millisecond until it holds.
//
// The timeout only bounds how long a broken build hangs; it is not a claim about how fast anything
// is, so it is generous: a sanitizer build on a busy two-core machine stalls for seconds at times.
#ifndef NORMD_TESTS_WAIT_UNTIL_H_
#define NORMD_TESTS_WAIT_UNTIL_H_

#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace normd::testing {

inline constexpr absl::Duration kGenerousWait = absl::Seconds(60);

// True once `condition` holds; false if it still does not after `timeout`.
inline bool WaitUntil(const std::function<bool()>& condition,
                      absl::Duration timeout = kGenerousWait) {
  const absl::Time give_up = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() >= give_up) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

}  // namespace normd::testing

#endif  // NORMD_TESTS_WAIT_UNTIL_H_
