#include "common/consistency.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ps {
namespace {

TEST(ConsistencyTest, EveryModeHasTraits) {
  for (Consistency mode :
       {Consistency::kAsync, Consistency::kSync, Consistency::kSsp}) {
    EXPECT_EQ(TraitsOf(mode).mode, mode);
  }
  EXPECT_EQ(ConsistencyNames(),
            (std::vector<std::string>{"async", "sync", "ssp"}));
}

TEST(ConsistencyTest, TraitsOfEachMode) {
  EXPECT_FALSE(TraitsOf(Consistency::kAsync).workers_only_push);
  EXPECT_FALSE(TraitsOf(Consistency::kAsync).step_exact_reads);
  EXPECT_FALSE(TraitsOf(Consistency::kAsync).applies_in_steps);
  EXPECT_TRUE(TraitsOf(Consistency::kSync).applies_in_steps);
  EXPECT_FALSE(TraitsOf(Consistency::kSsp).applies_in_steps);
  EXPECT_TRUE(TraitsOf(Consistency::kSync).workers_only_push);
  EXPECT_TRUE(TraitsOf(Consistency::kSync).step_exact_reads);
  EXPECT_TRUE(TraitsOf(Consistency::kSsp).uses_staleness);
  EXPECT_FALSE(TraitsOf(Consistency::kSsp).step_exact_reads);
}

}  // namespace
}  // namespace ps
