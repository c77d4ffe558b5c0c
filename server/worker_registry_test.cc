#include "server/worker_registry.h"

#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

const absl::Time kStart = absl::FromUnixSeconds(1000);

absl::Time At(int64_t ms) { return kStart + absl::Milliseconds(ms); }

TEST(WorkerRegistryTest, PreRegisteredWorkersAreLiveUntilJoinTimeout) {
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(1000),
                          kStart);
  EXPECT_THAT(registry.LiveWorkers(), UnorderedElementsAre(0u, 1u));
  EXPECT_THAT(registry.EvictExpired(At(999)), IsEmpty());
  // Worker 0 shows up; worker 1 never does.
  EXPECT_TRUE(registry.Touch(0, At(950)));
  EXPECT_THAT(registry.EvictExpired(At(1001)), ElementsAre(1));
  EXPECT_THAT(registry.LiveWorkers(), UnorderedElementsAre(0u));
  // Worker 0's deadline is now its last heartbeat + 100 ms.
  EXPECT_THAT(registry.EvictExpired(At(1050)), IsEmpty());
  EXPECT_THAT(registry.EvictExpired(At(1051)), ElementsAre(0));
  EXPECT_FALSE(registry.Touch(0, At(1052)));  // evicted: must re-register
  EXPECT_FALSE(registry.IsLive(0));
}

TEST(WorkerRegistryTest, FloorClockIsMinLiveClockAndRejoinStartsThere) {
  WorkerRegistry registry(3, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  for (int w = 0; w < 3; ++w) ASSERT_TRUE(registry.Register(w, At(0)).ok());
  EXPECT_EQ(*registry.AdvanceClock(0, 1, At(10)), 1);
  EXPECT_EQ(*registry.AdvanceClock(0, 2, At(20)), 2);
  EXPECT_EQ(*registry.AdvanceClock(1, 1, At(20)), 1);
  EXPECT_EQ(registry.FloorClock(), 0);  // worker 2 is at 0
  // Worker 2 goes silent; 0 and 1 keep heartbeating.
  EXPECT_TRUE(registry.Touch(0, At(90)));
  EXPECT_TRUE(registry.Touch(1, At(90)));
  EXPECT_THAT(registry.EvictExpired(At(150)), ElementsAre(2));
  EXPECT_EQ(registry.FloorClock(), 1);
  // Worker 2 rejoins at the current clock, not its stale 0.
  EXPECT_EQ(*registry.Register(2, At(160)), 1);
  EXPECT_EQ(registry.FloorClock(), 1);
  // A live worker re-registering keeps its own clock.
  EXPECT_EQ(*registry.Register(0, At(160)), 2);
}

TEST(WorkerRegistryTest, ClockRulesAndErrors) {
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  EXPECT_EQ(*registry.AdvanceClock(0, 1, At(1)), 1);
  // A retried Clock call changes nothing.
  EXPECT_EQ(*registry.AdvanceClock(0, 1, At(2)), 1);
  EXPECT_EQ(registry.AdvanceClock(0, 3, At(3)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AdvanceClock(2, 1, At(3)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AdvanceClock(-1, 1, At(3)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Register(5, At(3)).status().code(),
            absl::StatusCode::kInvalidArgument);
  registry.EvictExpired(At(500));
  EXPECT_EQ(registry.AdvanceClock(0, 2, At(501)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(registry.ArriveAtBarrier(0, 0, At(501)).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(WorkerRegistryTest, WithNobodyLiveFloorIsHighestClockReached) {
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  ASSERT_TRUE(registry.AdvanceClock(0, 1, At(1)).ok());
  ASSERT_TRUE(registry.AdvanceClock(0, 2, At(2)).ok());
  ASSERT_TRUE(registry.AdvanceClock(1, 1, At(2)).ok());
  EXPECT_EQ(registry.FloorClock(), 1);
  EXPECT_THAT(registry.EvictExpired(At(1000)), UnorderedElementsAre(0, 1));
  EXPECT_EQ(registry.FloorClock(), 2);
  EXPECT_EQ(*registry.Register(1, At(1001)), 2);
}

TEST(WorkerRegistryTest, BarrierCompletesWhenAllLiveArriveOrOnEviction) {
  WorkerRegistry registry(3, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  ASSERT_TRUE(registry.ArriveAtBarrier(0, 0, At(1)).ok());
  ASSERT_TRUE(registry.ArriveAtBarrier(1, 0, At(1)).ok());
  EXPECT_FALSE(registry.BarrierComplete(0));
  ASSERT_TRUE(registry.ArriveAtBarrier(2, 0, At(2)).ok());
  EXPECT_TRUE(registry.BarrierComplete(0));
  EXPECT_FALSE(registry.BarrierComplete(1));
  // Generation 1: worker 2 dies before arriving.
  ASSERT_TRUE(registry.ArriveAtBarrier(0, 1, At(50)).ok());
  ASSERT_TRUE(registry.ArriveAtBarrier(1, 1, At(50)).ok());
  EXPECT_FALSE(registry.BarrierComplete(1));
  EXPECT_THAT(registry.EvictExpired(At(120)), ElementsAre(2));
  EXPECT_TRUE(registry.BarrierComplete(1));
  // A re-admitted worker does not hold back completed generations.
  ASSERT_TRUE(registry.Register(2, At(130)).ok());
  EXPECT_TRUE(registry.BarrierComplete(1));
  EXPECT_FALSE(registry.BarrierComplete(2));
}

TEST(WorkerRegistryTest, StatsReportEveryWorker) {
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  ASSERT_TRUE(registry.AdvanceClock(1, 1, At(10)).ok());
  google::protobuf::RepeatedPtrField<proto::WorkerStats> stats;
  registry.FillStats(At(30), &stats);
  ASSERT_EQ(stats.size(), 2);
  EXPECT_EQ(stats[0].clock(), 0);
  EXPECT_EQ(stats[0].ms_since_heartbeat(), 30);
  EXPECT_EQ(stats[1].clock(), 1);
  EXPECT_EQ(stats[1].ms_since_heartbeat(), 20);
  EXPECT_TRUE(stats[1].live());
}

}  // namespace
}  // namespace ps
