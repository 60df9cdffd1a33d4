#include "server/config/usable_cpus.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace normd {

int UsableCpuCount() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) {
    const int count = CPU_COUNT(&mask);
    if (count > 0) return count;
  }
  // A mask wider than cpu_set_t (over 1024 CPUs) fails above; the machine's count is the best left.
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace normd
