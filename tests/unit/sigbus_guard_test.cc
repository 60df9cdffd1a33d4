// RunGuardedAgainstSigbus: a fault on memory whose file shrank is caught on the faulting thread
// and reported, repeatedly, on any thread, while unguarded code runs as before.
#include "server/executors/sigbus_guard.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

namespace normd {
namespace {

// A shared mapping of a temporary file of `pages` pages, which the test can shrink.
class ShrinkableMapping {
 public:
  explicit ShrinkableMapping(size_t pages) : bytes_(pages * static_cast<size_t>(getpagesize())) {
    char path[] = "/tmp/normd-sigbus-XXXXXX";
    fd_ = mkstemp(path);
    unlink(path);
    EXPECT_EQ(ftruncate(fd_, static_cast<off_t>(bytes_)), 0);
    data_ = static_cast<char*>(mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
  }
  ~ShrinkableMapping() {
    munmap(data_, bytes_);
    close(fd_);
  }
  void Shrink() { ASSERT_EQ(ftruncate(fd_, 0), 0); }
  char* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
  int fd_ = -1;
  char* data_ = nullptr;
};

TEST(SigbusGuardTest, RunsTheFunctionWhenNothingFaults) {
  ShrinkableMapping mapping(2);
  auto fill = [&] {
    for (size_t i = 0; i < mapping.bytes(); ++i) mapping.data()[i] = 7;
  };
  EXPECT_TRUE(RunGuardedAgainstSigbus(fill));
  EXPECT_EQ(mapping.data()[mapping.bytes() - 1], 7);
}

TEST(SigbusGuardTest, AFaultOnAShrunkFileIsReportedEveryTime) {
  ShrinkableMapping mapping(4);
  mapping.Shrink();
  volatile int reached = 0;
  auto touch = [&] {
    mapping.data()[0] = 1;  // faults: past the file's end now
    reached = 1;
  };
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(RunGuardedAgainstSigbus(touch)) << "attempt " << i;
  EXPECT_EQ(reached, 0);
  // The thread is left as it was: unguarded work goes on, and so do guards.
  int ordinary = 0;
  auto count = [&] { ++ordinary; };
  EXPECT_TRUE(RunGuardedAgainstSigbus(count));
  EXPECT_EQ(ordinary, 1);
}

TEST(SigbusGuardTest, ThreadsFaultIndependently) {
  ShrinkableMapping shrunk(2);
  shrunk.Shrink();
  ShrinkableMapping intact(2);
  std::atomic<int> faults{0}, completed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      // Each thread writes bytes of its own, so that the writers to the intact mapping do not race.
      char* target = (t % 2 == 0 ? shrunk.data() : intact.data()) + 1024 * t;
      for (int i = 0; i < 50; ++i) {
        auto write = [&] { target[i] = static_cast<char>(i); };
        (RunGuardedAgainstSigbus(write) ? completed : faults).fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(faults.load(), 100);
  EXPECT_EQ(completed.load(), 100);
}

}  // namespace
}  // namespace normd
