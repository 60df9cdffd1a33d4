// MemoryGate: waiting for room, waking in order, cancelling, expiring, and never keeping a charge
// that was given back. The gate reads no clock: each test passes the times it means.
#include "server/scheduling/memory_gate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace normd {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

// Records what each waiter was told, in the order it was told.
struct Outcomes {
  MemoryGate::OnReady For(const std::string& name) {
    return [this, name](const absl::Status& status) {
      order.push_back(name);
      statuses.push_back(status);
    };
  }
  std::vector<std::string> order;
  std::vector<absl::Status> statuses;
};

TEST(MemoryGateTest, GrantsAtOnceWhatFitsAndQueuesTheRest) {
  MemoryGate gate(100, absl::Seconds(10));
  Outcomes told;
  EXPECT_EQ(gate.Wait(60, kStart, told.For("a")), MemoryGate::kGranted);
  EXPECT_NE(gate.Wait(60, kStart, told.For("b")), MemoryGate::kGranted);
  EXPECT_EQ(gate.charged_bytes(), 60);
  EXPECT_EQ(gate.waiting(), 1u);
  EXPECT_TRUE(told.order.empty());
  gate.Release(60);
  ASSERT_EQ(told.order, std::vector<std::string>({"b"}));
  EXPECT_TRUE(told.statuses[0].ok());
  EXPECT_EQ(gate.charged_bytes(), 60);
  gate.Release(60);
  EXPECT_EQ(gate.charged_bytes(), 0);
}

TEST(MemoryGateTest, WakesWaitersInArrivalOrderAndNoneOutOfTurn) {
  MemoryGate gate(100, absl::Seconds(10));
  Outcomes told;
  ASSERT_EQ(gate.Wait(100, kStart, told.For("first")), MemoryGate::kGranted);
  gate.Wait(80, kStart, told.For("big"));
  // Would fit beside `big` only after it: it waits its turn even when a smaller charge is freed.
  gate.Wait(10, kStart, told.For("small"));
  gate.Wait(10, kStart, told.For("later"));
  EXPECT_EQ(gate.TryCharge(1).code(), absl::StatusCode::kResourceExhausted);  // others are waiting
  gate.Release(100);
  EXPECT_EQ(told.order, std::vector<std::string>({"big", "small", "later"}));
  EXPECT_EQ(gate.charged_bytes(), 100);
  EXPECT_EQ(gate.waiting(), 0u);
}

TEST(MemoryGateTest, ACancelledWaiterLeavesTheQueueAndReservesNothing) {
  MemoryGate gate(100, absl::Seconds(10));
  Outcomes told;
  ASSERT_EQ(gate.Wait(90, kStart, told.For("holder")), MemoryGate::kGranted);
  const MemoryGate::Ticket big = gate.Wait(50, kStart, told.For("big"));
  gate.Wait(10, kStart, told.For("small"));  // fits now, but waits behind `big`
  EXPECT_TRUE(told.order.empty());
  EXPECT_TRUE(gate.Cancel(big));
  // `big` leaving lets `small` through; `big` itself is never told anything.
  EXPECT_EQ(told.order, std::vector<std::string>({"small"}));
  EXPECT_FALSE(gate.Cancel(big));
  gate.Release(90);
  gate.Release(10);
  EXPECT_EQ(gate.charged_bytes(), 0);
  EXPECT_EQ(gate.waiting(), 0u);
}

TEST(MemoryGateTest, CancellingAGrantedWaiterIsRefusedSoItsOwnerReleases) {
  MemoryGate gate(100, absl::Seconds(10));
  Outcomes told;
  ASSERT_EQ(gate.Wait(100, kStart, told.For("holder")), MemoryGate::kGranted);
  const MemoryGate::Ticket ticket = gate.Wait(100, kStart, told.For("next"));
  gate.Release(100);
  ASSERT_EQ(told.order, std::vector<std::string>({"next"}));
  EXPECT_FALSE(gate.Cancel(ticket));
  EXPECT_EQ(gate.charged_bytes(), 100);
}

TEST(MemoryGateTest, AWaitPastTheLimitEndsWithResourceExhaustedNamingTheFlag) {
  MemoryGate gate(100, absl::Seconds(10));
  Outcomes told;
  ASSERT_EQ(gate.Wait(100, kStart, told.For("holder")), MemoryGate::kGranted);
  gate.Wait(50, kStart, told.For("early"));
  gate.Wait(50, kStart + absl::Seconds(5), told.For("late"));
  gate.ExpireDue(kStart + absl::Seconds(9));
  EXPECT_TRUE(told.order.empty());
  gate.ExpireDue(kStart + absl::Seconds(10));
  ASSERT_EQ(told.order, std::vector<std::string>({"early"}));
  EXPECT_EQ(told.statuses[0].code(), absl::StatusCode::kResourceExhausted);
  const std::string message(told.statuses[0].message());
  EXPECT_NE(message.find("--max-memory-bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("100"), std::string::npos) << message;
  EXPECT_EQ(gate.waiting(), 1u);
  EXPECT_EQ(gate.charged_bytes(), 100);  // the expired waiter reserved nothing
  gate.Release(100);
  EXPECT_EQ(told.order, std::vector<std::string>({"early", "late"}));
  EXPECT_TRUE(told.statuses[1].ok());
}

TEST(MemoryGateTest, ResizeShrinksAlwaysAndGrowsOnlyIntoRoom) {
  MemoryGate gate(100, absl::Seconds(10));
  Outcomes told;
  ASSERT_EQ(gate.Wait(60, kStart, told.For("a")), MemoryGate::kGranted);
  gate.Wait(60, kStart, told.For("b"));
  ASSERT_TRUE(gate.Resize(60, 30).ok());  // `a` read a smaller message than it reserved for
  EXPECT_EQ(told.order, std::vector<std::string>({"b"}));
  EXPECT_EQ(gate.charged_bytes(), 90);
  const absl::Status grown = gate.Resize(30, 50);
  EXPECT_EQ(grown.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(gate.charged_bytes(), 90);  // the charge stays what it was
  ASSERT_TRUE(gate.Resize(30, 40).ok());
  EXPECT_EQ(gate.charged_bytes(), 100);
  gate.Release(40);
  gate.Release(60);
  EXPECT_EQ(gate.charged_bytes(), 0);
}

TEST(MemoryGateTest, OneChargeLargerThanTheLimitPassesWhenNothingElseIsHeld) {
  MemoryGate gate(100, absl::Seconds(10));
  Outcomes told;
  EXPECT_EQ(gate.Wait(150, kStart, told.For("huge")), MemoryGate::kGranted);
  EXPECT_FALSE(gate.TryCharge(1).ok());
  gate.Release(150);
  EXPECT_TRUE(gate.TryCharge(150).ok());
}

TEST(MemoryGateTest, WithoutALimitEverythingIsGrantedAndCounted) {
  MemoryGate gate(0, absl::Seconds(10));
  Outcomes told;
  EXPECT_EQ(gate.Wait(int64_t{1} << 40, kStart, told.For("a")), MemoryGate::kGranted);
  EXPECT_TRUE(gate.TryCharge(int64_t{1} << 40).ok());
  EXPECT_EQ(gate.charged_bytes(), int64_t{2} << 40);
  gate.Release(int64_t{2} << 40);
  EXPECT_EQ(gate.charged_bytes(), 0);
}

}  // namespace
}  // namespace normd
