// The weight registry: content-addressed ids, LRU eviction within the byte bound, and weights kept
// alive for requests that hold them across an eviction.
#include "server/rpc/weight_registry.h"

#include <gtest/gtest.h>

namespace normd {
namespace {

std::string Bytes(size_t n, char fill) { return std::string(n, fill); }

TEST(WeightRegistryTest, SameContentSameIdAcrossRegistries) {
  WeightRegistry a(1 << 20), b(1 << 20);
  const std::string id = *a.Register(DType::kFloat32, 4, Bytes(16, 'x'));
  EXPECT_EQ(*b.Register(DType::kFloat32, 4, Bytes(16, 'x')), id);
  EXPECT_NE(*a.Register(DType::kFloat16, 8, Bytes(16, 'x')), id);
  EXPECT_NE(*a.Register(DType::kFloat32, 4, Bytes(16, 'y')), id);
  EXPECT_EQ(a.count(), 3);
}

TEST(WeightRegistryTest, EvictsLeastRecentlyUsedPastTheBound) {
  WeightRegistry registry(300);
  const std::string a = *registry.Register(DType::kFloat32, 25, Bytes(100, 'a'));
  const std::string b = *registry.Register(DType::kFloat32, 25, Bytes(100, 'b'));
  const std::string c = *registry.Register(DType::kFloat32, 25, Bytes(100, 'c'));
  ASSERT_NE(registry.Find(a), nullptr);  // a is now more recent than b
  registry.Register(DType::kFloat32, 25, Bytes(100, 'd')).IgnoreError();
  EXPECT_EQ(registry.Find(b), nullptr);
  EXPECT_NE(registry.Find(a), nullptr);
  EXPECT_NE(registry.Find(c), nullptr);
  EXPECT_LE(registry.bytes(), 300);
}

TEST(WeightRegistryTest, HeldWeightOutlivesEviction) {
  WeightRegistry registry(100);
  const std::string a = *registry.Register(DType::kFloat32, 25, Bytes(100, 'a'));
  std::shared_ptr<const RegisteredWeight> held = registry.Find(a);
  registry.Register(DType::kFloat32, 25, Bytes(100, 'b')).IgnoreError();
  EXPECT_EQ(registry.Find(a), nullptr);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->bytes, Bytes(100, 'a'));
}

TEST(WeightRegistryTest, WeightLargerThanTheBoundIsRefused) {
  WeightRegistry registry(64);
  const auto result = registry.Register(DType::kFloat32, 32, Bytes(128, 'a'));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(result.status().message().find("128"), std::string::npos);
}

}  // namespace
}  // namespace normd
