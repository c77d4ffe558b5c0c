#include "server/replication/term_fence.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace ps::replication {
namespace {

TEST(TermFenceTest, BackupAdoptsNewerTermsAndRefusesOlderOnes) {
  TermFence fence;
  EXPECT_EQ(fence.highest(), 0);
  EXPECT_TRUE(fence.AdmitFromPrimary(7).ok());
  EXPECT_EQ(fence.highest(), 7);
  EXPECT_TRUE(fence.AdmitFromPrimary(7).ok());  // same primary, next message
  EXPECT_TRUE(fence.AdmitFromPrimary(12).ok());  // a new primary
  EXPECT_EQ(fence.highest(), 12);
  const absl::Status stale = fence.AdmitFromPrimary(7);  // the deposed one
  EXPECT_EQ(stale.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(stale.message(), "stale term 7: this replica has seen term 12");
  EXPECT_EQ(fence.highest(), 12);
  EXPECT_EQ(fence.AdmitFromPrimary(0).code(), absl::StatusCode::kInvalidArgument);
}

TEST(TermFenceTest, ObservedTermFencesTheOldPrimaryBeforeItsFirstMessage) {
  TermFence fence;
  EXPECT_TRUE(fence.AdmitFromPrimary(5).ok());
  EXPECT_EQ(fence.Observe(9), 9);  // the watch saw term 9 elected
  EXPECT_EQ(fence.Observe(3), 9);
  EXPECT_EQ(fence.AdmitFromPrimary(5).code(), absl::StatusCode::kAborted);
}

TEST(TermFenceTest, ClientRequestMustCarryThePrimarysOwnCurrentTerm) {
  TermFence fence;
  fence.Observe(4);
  EXPECT_TRUE(fence.AdmitClientRequest(4, /*my_term=*/4).ok());
  // Not primary at all.
  absl::Status s = fence.AdmitClientRequest(4, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "not primary for term 4 (this replica is not primary); look up the primary again");
  // The client knows a newer term than ours: we are deposed.
  s = fence.AdmitClientRequest(6, 4);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fence.highest(), 6);
  // From now on our own term is stale too, even for a client that is behind.
  s = fence.AdmitClientRequest(4, 4);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(s.message(), "stale term 4: the current term is at least 6; look up the primary again");
  EXPECT_EQ(fence.AdmitClientRequest(-1, 4).code(), absl::StatusCode::kInvalidArgument);
}

TEST(TermFenceTest, ConcurrentObserversKeepTheMaximum) {
  TermFence fence;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&fence, t] {
      for (int64_t term = 1; term <= 10000; ++term) fence.Observe(term * 4 + t);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(fence.highest(), 10000 * 4 + 3);
}

}  // namespace
}  // namespace ps::replication
