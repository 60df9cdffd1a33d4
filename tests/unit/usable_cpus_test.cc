// UsableCpuCount (server/config/usable_cpus.h) must follow the affinity mask, not the machine's CPU
// count: normd sizes its CPU backend by it.
#include "server/config/usable_cpus.h"

#include <gtest/gtest.h>
#include <sched.h>

namespace normd {
namespace {

TEST(UsableCpuCountTest, CountsTheCpusOfTheAffinityMask) {
  cpu_set_t original;
  CPU_ZERO(&original);
  ASSERT_EQ(sched_getaffinity(0, sizeof(original), &original), 0);
  EXPECT_EQ(UsableCpuCount(), CPU_COUNT(&original));

  // Narrow this thread to the first CPU it may use: the count must drop to 1 whatever the machine
  // has.
  int first = 0;
  while (!CPU_ISSET(first, &original)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const int narrowed = UsableCpuCount();
  ASSERT_EQ(sched_setaffinity(0, sizeof(original), &original), 0);
  EXPECT_EQ(narrowed, 1);
}

}  // namespace
}  // namespace normd
