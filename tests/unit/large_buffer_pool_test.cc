// LargeBufferPool (server/core/large_buffer_pool.h): buffers come back by exact size, the idle
// bytes never exceed the budget, a smaller budget unmaps at once, and buffers handed out
// concurrently are never handed to two takers at once.
#include "server/core/large_buffer_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

namespace normd {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(LargeBufferPoolTest, AGivenBackBufferServesTheNextTakeOfItsSize) {
  LargeBufferPool pool(8 * kMiB);
  void* a = pool.Take(2 * kMiB);
  ASSERT_NE(a, nullptr);
  std::memset(a, 7, 2 * kMiB);  // writable over its whole length
  EXPECT_EQ(pool.mapped(), 1);
  pool.Give(a, 2 * kMiB);
  EXPECT_EQ(pool.idle_bytes(), 2 * kMiB);

  void* other_size = pool.Take(3 * kMiB);  // no idle buffer of 3 MiB: a new one
  EXPECT_NE(other_size, a);
  EXPECT_EQ(pool.mapped(), 2);
  EXPECT_EQ(pool.reused(), 0);

  void* again = pool.Take(2 * kMiB);
  EXPECT_EQ(again, a);
  EXPECT_EQ(pool.reused(), 1);
  EXPECT_EQ(pool.idle_bytes(), 0u);
  pool.Give(again, 2 * kMiB);
  pool.Give(other_size, 3 * kMiB);
  EXPECT_EQ(pool.idle_bytes(), 5 * kMiB);
}

TEST(LargeBufferPoolTest, IdleBytesStayWithinTheBudget) {
  LargeBufferPool pool(5 * kMiB);
  std::vector<void*> out;
  for (int i = 0; i < 4; ++i) out.push_back(pool.Take(2 * kMiB));
  for (void* b : out) {
    pool.Give(b, 2 * kMiB);
    EXPECT_LE(pool.idle_bytes(), 5 * kMiB);
  }
  EXPECT_EQ(pool.idle_bytes(), 4 * kMiB);  // two of the four kept

  pool.SetMaxIdleBytes(kMiB);  // under one buffer: nothing kept
  EXPECT_EQ(pool.idle_bytes(), 0u);
  void* fresh = pool.Take(2 * kMiB);
  EXPECT_EQ(pool.reused(), 0);
  pool.Give(fresh, 2 * kMiB);
  EXPECT_EQ(pool.idle_bytes(), 0u);

  LargeBufferPool none(0);  // --response-pool-bytes=0: every buffer goes back to the kernel
  void* b = none.Take(kMiB);
  none.Give(b, kMiB);
  EXPECT_EQ(none.idle_bytes(), 0u);
}

TEST(LargeBufferPoolTest, ConcurrentTakersNeverShareABuffer) {
  LargeBufferPool pool(16 * kMiB);
  constexpr int kThreads = 4;
  constexpr int kRounds = 200;
  std::atomic<int> clashes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, &clashes, t] {
      for (int round = 0; round < kRounds; ++round) {
        const size_t bytes = (round % 2 == 0 ? 1 : 2) * kMiB;
        auto* data = static_cast<unsigned char*>(pool.Take(bytes));
        ASSERT_NE(data, nullptr);
        // Mark the first and last byte as this thread's; another taker of the same buffer would
        // overwrite one of them before we look again.
        data[0] = data[bytes - 1] = static_cast<unsigned char>(t + 1);
        std::this_thread::yield();
        if (data[0] != t + 1 || data[bytes - 1] != t + 1) clashes.fetch_add(1);
        pool.Give(data, bytes);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(clashes.load(), 0);
  EXPECT_EQ(pool.reused() + pool.mapped(), kThreads * kRounds);
  EXPECT_GT(pool.reused(), 0);
  EXPECT_LE(pool.idle_bytes(), 16 * kMiB);
}

TEST(LargeBufferPoolTest, ASliceGivesItsBufferBackToTheSharedPoolWhenDropped) {
  LargeBufferPool& pool = LargeBufferPool::Shared();
  const size_t bytes = LargeBufferPool::kMinBytes;
  void* data = nullptr;
  const size_t idle_before = pool.idle_bytes();
  grpc::Slice kept;
  {
    grpc::Slice slice = LargeBufferPool::TakeSharedSlice(bytes, &data);
    ASSERT_NE(data, nullptr);
    EXPECT_EQ(slice.size(), bytes);
    EXPECT_EQ(static_cast<const void*>(slice.begin()), data);
    std::memset(data, 3, bytes);
    kept = slice;  // a second reference, as gRPC takes while sending
  }
  EXPECT_EQ(pool.idle_bytes(), idle_before) << "still referenced";
  kept = grpc::Slice();
  EXPECT_EQ(pool.idle_bytes(), idle_before + bytes);
  void* again = nullptr;
  const int64_t reused_before = pool.reused();
  grpc::Slice next = LargeBufferPool::TakeSharedSlice(bytes, &again);
  EXPECT_EQ(again, data);
  EXPECT_EQ(pool.reused(), reused_before + 1);
}

}  // namespace
}  // namespace normd
