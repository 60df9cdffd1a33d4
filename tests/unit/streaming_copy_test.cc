// StreamingCopy and CopyBypassingCaches (base/streaming_copy.h) must be memcpy in every case they
// handle: sizes below, at and above the streaming threshold, tails that are not whole lines,
// destinations that are not 16-byte aligned (the head) and unaligned sources; and neither may write
// a byte outside its range.
#include "base/streaming_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace normd {
namespace {

constexpr size_t kGuard = 64;
constexpr unsigned char kGuardByte = 0xA5;

using CopyFunction = void (*)(void*, const void*, size_t);

class StreamingCopyTest : public testing::TestWithParam<CopyFunction> {};

TEST_P(StreamingCopyTest, CopiesExactlyTheRangeWhateverItsSizeAndAlignment) {
  const CopyFunction copy = GetParam();
  constexpr size_t kMin = kStreamingCopyMinBytes;
  std::mt19937 random(7);
  int cases = 0;
  for (const size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, kMin - 1, kMin, kMin + 1,
                             kMin + 63, kMin + 64, 3 * kMin + 17}) {
    for (const size_t to_offset : {0, 1, 8, 15}) {
      for (const size_t from_offset : {0, 3}) {
        std::vector<unsigned char> from(bytes + from_offset + 16);
        for (unsigned char& b : from) b = static_cast<unsigned char>(random());
        // Over-allocated so that `to_offset` moves the destination relative to a 64-byte boundary.
        std::vector<unsigned char> to(bytes + to_offset + 2 * kGuard + 64, kGuardByte);
        const auto base = reinterpret_cast<uintptr_t>(to.data());
        const size_t aligned = (64 - base % 64) % 64;
        unsigned char* dest = to.data() + aligned + kGuard + to_offset;
        copy(dest, from.data() + from_offset, bytes);
        ASSERT_EQ(0, std::memcmp(dest, from.data() + from_offset, bytes))
            << bytes << " bytes, destination +" << to_offset << ", source +" << from_offset;
        for (unsigned char* p = to.data(); p < dest; ++p)
          ASSERT_EQ(kGuardByte, *p) << "written before the range";
        for (unsigned char* p = dest + bytes; p < to.data() + to.size(); ++p) {
          ASSERT_EQ(kGuardByte, *p) << "written after the range, " << bytes << " bytes";
        }
        ++cases;
      }
    }
  }
  EXPECT_EQ(80, cases);
}

INSTANTIATE_TEST_SUITE_P(Both, StreamingCopyTest,
                         testing::Values(&StreamingCopy, &CopyBypassingCaches),
                         [](const testing::TestParamInfo<CopyFunction>& info) {
                           return info.param == &StreamingCopy ? "StreamingCopy"
                                                               : "CopyBypassingCaches";
                         });

}  // namespace
}  // namespace normd
