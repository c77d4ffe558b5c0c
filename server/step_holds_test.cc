#include "server/step_holds.h"

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1000);

TEST(StepHoldsTest, NoHoldNoCap) {
  StepHolds holds;
  EXPECT_FALSE(holds.Cap(1, kNow).has_value());
}

TEST(StepHoldsTest, TheLowestUnexpiredHoldCapsEachTable) {
  StepHolds holds;
  holds.Hold(/*cut_id=*/7, {{1, 12}, {2, 30}}, kNow + absl::Seconds(5));
  holds.Hold(/*cut_id=*/8, {{1, 10}}, kNow + absl::Seconds(1));
  EXPECT_EQ(holds.Cap(1, kNow), 10);
  EXPECT_EQ(holds.Cap(2, kNow), 30);
  EXPECT_FALSE(holds.Cap(3, kNow).has_value());
  // Cut 8 lapses first: table 1 is held by cut 7 alone.
  EXPECT_EQ(holds.Cap(1, kNow + absl::Seconds(2)), 12);
  EXPECT_FALSE(holds.Cap(1, kNow + absl::Seconds(5)).has_value());
}

TEST(StepHoldsTest, ACutsSecondHoldReplacesItsFirst) {
  StepHolds holds;
  holds.Hold(7, {{1, 12}}, kNow + absl::Seconds(5));
  holds.Hold(7, {{1, 13}}, kNow + absl::Seconds(5));
  EXPECT_EQ(holds.Cap(1, kNow), 13);
  holds.Release(7);
  EXPECT_FALSE(holds.Cap(1, kNow).has_value());
  holds.Release(7);  // no-op
}

TEST(StepHoldsTest, DropExpiredSaysWhetherAnyLapsed) {
  StepHolds holds;
  holds.Hold(7, {{1, 12}}, kNow + absl::Seconds(5));
  EXPECT_FALSE(holds.DropExpired(kNow));
  EXPECT_TRUE(holds.DropExpired(kNow + absl::Seconds(5)));
  EXPECT_FALSE(holds.DropExpired(kNow + absl::Seconds(6)));
  EXPECT_FALSE(holds.Cap(1, kNow).has_value());
}

}  // namespace
}  // namespace ps
