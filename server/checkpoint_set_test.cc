// The rule over what every shard holds (ChooseCommonCheckpoint) and the
// prune threshold, as pure functions; the file-reading callers are tested in
// checkpoint_test.cc and, across processes, in tests/.
#include "server/checkpoint_set.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

// Shard j under /c/shard-j, holding `usable` ids (and `damaged`: id, why).
ShardCheckpoints Holds(int j, std::vector<uint64_t> usable,
                       std::vector<std::pair<uint64_t, std::string>> damaged =
                           {}) {
  ShardCheckpoints held;
  held.dir = "/c/shard-" + std::to_string(j);
  for (uint64_t id : usable) held.parts[id] = "";
  for (const auto& [id, why] : damaged) held.parts[id] = why;
  return held;
}

absl::StatusOr<CommonCheckpoint> Choose(
    const std::vector<ShardCheckpoints>& shards) {
  return ChooseCommonCheckpoint(shards, "on the test shards", "move them away");
}

TEST(ChooseCommonCheckpointTest, NothingAnywhereIsAFreshStart) {
  absl::StatusOr<CommonCheckpoint> choice =
      Choose({Holds(0, {}), Holds(1, {}), Holds(2, {})});
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->id, 0u);
  EXPECT_TRUE(choice->incomplete.empty());
}

TEST(ChooseCommonCheckpointTest, NewestIdOnEveryShardWins) {
  absl::StatusOr<CommonCheckpoint> choice =
      Choose({Holds(0, {10, 20, 30}), Holds(1, {10, 20, 30}),
              Holds(2, {10, 20, 30})});
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->id, 30u);
  EXPECT_TRUE(choice->incomplete.empty());
}

TEST(ChooseCommonCheckpointTest, MissingOrDamagedPartFallsBackTogether) {
  absl::StatusOr<CommonCheckpoint> choice =
      Choose({Holds(0, {10, 20, 30, 40}), Holds(1, {10, 20}, {{30, "torn"}}),
              Holds(2, {10, 20, 30})});
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->id, 20u);
  EXPECT_THAT(
      choice->incomplete,
      ElementsAre(
          Pair(40, "shard 1 has no part of it (no "
                   "/c/shard-1/ckpt-000000000040.bin); shard 2 has no part "
                   "of it (no /c/shard-2/ckpt-000000000040.bin)"),
          Pair(30, "shard 1's part is unusable: torn")));
}

TEST(ChooseCommonCheckpointTest, ShardWithNothingRefusesNamingIdAndShard) {
  absl::StatusOr<CommonCheckpoint> choice =
      Choose({Holds(0, {7}), Holds(1, {7}), Holds(2, {})});
  ASSERT_EQ(choice.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(choice.status().message(),
            "no checkpoint id on the test shards is complete on every shard; "
            "the newest, 7: shard 2 has no part of it (no "
            "/c/shard-2/ckpt-000000000007.bin). Refusing to serve a model "
            "mixed from different times. Fix: put back the missing or "
            "damaged part, or start every server with "
            "--allow_inconsistent_restore (each shard restores its own "
            "newest valid checkpoint), or move them away to start from the "
            "initial values");
}

TEST(ChooseCommonCheckpointTest, OnlyDamagedPartsStillRefuse) {
  absl::StatusOr<CommonCheckpoint> choice =
      Choose({Holds(0, {}, {{5, "bad checksum"}}), Holds(1, {})});
  ASSERT_EQ(choice.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(choice.status().message()),
              ::testing::HasSubstr("the newest, 5: shard 0's part is "
                                   "unusable: bad checksum; shard 1 has no "
                                   "part of it"));
}

TEST(ChooseCommonCheckpointTest, UnseenShardLacksEveryId) {
  ShardCheckpoints unseen = Holds(1, {});
  unseen.unseen = "its directory /c/shard-1 does not exist";
  absl::StatusOr<CommonCheckpoint> choice = Choose({Holds(0, {3}), unseen});
  ASSERT_EQ(choice.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(choice.status().message()),
              ::testing::HasSubstr("the newest, 3: shard 1: its directory "
                                   "/c/shard-1 does not exist."));
}

TEST(CommonPruneThresholdTest, KeepsTheNewestCommonIds) {
  // Common: 40, 30, 10 (20 is not on shard 1; 50 only on shard 0).
  const std::vector<ShardCheckpoints> shards = {
      Holds(0, {10, 20, 30, 40, 50}), Holds(1, {10, 30, 40}),
      Holds(2, {10, 20, 30, 40})};
  EXPECT_EQ(CommonPruneThreshold(shards, 1), 40u);
  EXPECT_EQ(CommonPruneThreshold(shards, 2), 30u);
  EXPECT_EQ(CommonPruneThreshold(shards, 3), 10u);
  EXPECT_EQ(CommonPruneThreshold(shards, 9), 10u);  // fewer: keep them all
}

TEST(CommonPruneThresholdTest, NothingCommonOrDamagedPrunesNothing) {
  EXPECT_EQ(CommonPruneThreshold({Holds(0, {10}), Holds(1, {20})}, 2), 0u);
  EXPECT_EQ(CommonPruneThreshold(
                {Holds(0, {10}), Holds(1, {}, {{10, "torn"}})}, 1),
            0u);
}

}  // namespace
}  // namespace ps
