// The membership rules of WorkerRegistry (worker_registry.h), driven with
// explicit times: liveness checks run at the monitor's interval unless a test
// simulates a stall of the server by leaving a gap.
#include "server/worker_registry.h"

#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/membership_error.h"

namespace ps {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

const absl::Time kStart = absl::FromUnixSeconds(1000);
constexpr uint64_t kA = 0xA, kB = 0xB, kC = 0xC;

absl::Time At(int64_t ms) { return kStart + absl::Milliseconds(ms); }

// Runs the liveness checks a running server would between `from_ms`
// (exclusive) and `to_ms` (inclusive); returns every eviction, in order.
std::vector<int> RunChecks(WorkerRegistry& registry, int64_t from_ms,
                           int64_t to_ms) {
  std::vector<int> evicted;
  const int64_t step = absl::ToInt64Milliseconds(registry.check_interval());
  for (int64_t t = from_ms + step;; t += step) {
    t = std::min(t, to_ms);
    WorkerRegistry::Check check = registry.EvictExpired(At(t));
    EXPECT_EQ(check.stalled, absl::ZeroDuration()) << "at " << t;
    evicted.insert(evicted.end(), check.evicted.begin(), check.evicted.end());
    if (t == to_ms) break;
  }
  return evicted;
}

proto::MembershipState RefusalState(const absl::Status& status) {
  std::optional<proto::MembershipError> error = GetMembershipError(status);
  return error.has_value() ? error->state() : proto::MEMBERSHIP_MEMBER;
}

absl::StatusOr<WorkerRegistry::Registration> Join(WorkerRegistry& registry,
                                                  int worker, uint64_t session,
                                                  int64_t ms,
                                                  const std::string& job = "j",
                                                  int64_t min_clock = 0) {
  return registry.Register(worker, session, job, min_clock, At(ms));
}

TEST(WorkerRegistryTest, PendingWorkersCountUntilJoinTimeout) {
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(1000),
                          kStart);
  EXPECT_EQ(registry.check_interval(), absl::Milliseconds(25));
  EXPECT_EQ(registry.stall_gap(), absl::Milliseconds(75));
  EXPECT_THAT(registry.LiveWorkers(), UnorderedElementsAre(0u, 1u));
  EXPECT_THAT(RunChecks(registry, 0, 950), IsEmpty());
  // Worker 0 shows up; worker 1 never does.
  ASSERT_TRUE(Join(registry, 0, kA, 950).ok());
  EXPECT_THAT(RunChecks(registry, 950, 1025), ElementsAre(1));
  EXPECT_THAT(registry.LiveWorkers(), UnorderedElementsAre(0u));
  // Worker 0's deadline is its last request + 100 ms.
  EXPECT_EQ(registry.Touch(0, kA, At(1000)), proto::MEMBERSHIP_MEMBER);
  EXPECT_THAT(RunChecks(registry, 1025, 1100), IsEmpty());
  EXPECT_THAT(RunChecks(registry, 1100, 1125), ElementsAre(0));
  EXPECT_EQ(registry.Touch(0, kA, At(1130)), proto::MEMBERSHIP_EVICTED);
  EXPECT_FALSE(registry.IsLive(0));
}

TEST(WorkerRegistryTest, ServerStallGrantsAFullTimeoutBeforeJudging) {
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  ASSERT_TRUE(Join(registry, 0, kA, 0).ok());
  ASSERT_TRUE(Join(registry, 1, kB, 0).ok());
  EXPECT_THAT(RunChecks(registry, 0, 50), IsEmpty());
  // The server is stopped from 50 ms to 1000 ms: both workers look silent
  // for 10 timeouts, but that silence is the server's.
  WorkerRegistry::Check check = registry.EvictExpired(At(1000));
  EXPECT_THAT(check.evicted, IsEmpty());
  EXPECT_EQ(check.stalled, absl::Milliseconds(950));
  EXPECT_THAT(registry.LiveWorkers(), UnorderedElementsAre(0u, 1u));
  // Worker 0 is heard after the resume; worker 1 (really dead) is judged a
  // full timeout after it.
  EXPECT_EQ(registry.Touch(0, kA, At(1060)), proto::MEMBERSHIP_MEMBER);
  EXPECT_THAT(RunChecks(registry, 1000, 1100), IsEmpty());
  EXPECT_THAT(RunChecks(registry, 1100, 1125), ElementsAre(1));
  EXPECT_TRUE(registry.IsLive(0));
  // A gap just below the stall threshold is an ordinary (late) check.
  EXPECT_EQ(registry.Touch(0, kA, At(1140)), proto::MEMBERSHIP_MEMBER);
  check = registry.EvictExpired(At(1200));
  EXPECT_EQ(check.stalled, absl::ZeroDuration());
  EXPECT_THAT(check.evicted, IsEmpty());
}

TEST(WorkerRegistryTest, FloorClockIsMinCountingClockAndRejoinStartsThere) {
  WorkerRegistry registry(3, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  for (int w = 0; w < 3; ++w) ASSERT_TRUE(Join(registry, w, kA + w, 0).ok());
  EXPECT_EQ(*registry.AdvanceClock(0, kA, 1, At(10)), 1);
  EXPECT_EQ(*registry.AdvanceClock(0, kA, 2, At(20)), 2);
  EXPECT_EQ(*registry.AdvanceClock(1, kB, 1, At(20)), 1);
  EXPECT_EQ(registry.FloorClock(), 0);  // worker 2 is at 0
  // Worker 2 goes silent; 0 and 1 keep heartbeating.
  EXPECT_THAT(RunChecks(registry, 0, 90), IsEmpty());
  registry.Touch(0, kA, At(90));
  registry.Touch(1, kB, At(90));
  EXPECT_THAT(RunChecks(registry, 90, 150), ElementsAre(2));
  EXPECT_EQ(registry.FloorClock(), 1);
  // Its calls are refused, saying where the job is.
  absl::Status refused = registry.AdvanceClock(2, kC, 1, At(151)).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  std::optional<proto::MembershipError> error = GetMembershipError(refused);
  ASSERT_TRUE(error.has_value()) << refused;
  EXPECT_EQ(error->state(), proto::MEMBERSHIP_EVICTED);
  EXPECT_EQ(error->current_step(), 1);
  EXPECT_EQ(error->worker_id(), 2u);
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr("call Rejoin()"));
  // Worker 2 (same process) rejoins at the current step, not its stale 0.
  absl::StatusOr<WorkerRegistry::Registration> r = Join(registry, 2, kC, 160);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->clock, 1);
  EXPECT_TRUE(r->admitted);
  EXPECT_FALSE(r->new_generation);
  EXPECT_EQ(registry.FloorClock(), 1);
  // A live worker re-registering keeps its own clock.
  EXPECT_EQ(Join(registry, 0, kA, 160)->clock, 2);
  EXPECT_FALSE(Join(registry, 0, kA, 160)->admitted);
}

TEST(WorkerRegistryTest, AdmissionSkipsTheStepItAlreadyPushedInto) {
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  ASSERT_TRUE(Join(registry, 0, kA, 0).ok());
  ASSERT_TRUE(Join(registry, 1, kB, 0).ok());
  // Both at clock 0 (step 0 open); worker 1 pushes into step 0 and stops.
  registry.RecordPush(1, kB, 0);
  registry.RecordPush(1, kC, 0);  // not its session: ignored
  for (int t = 25; t <= 150; t += 25) registry.Touch(0, kA, At(t));
  EXPECT_THAT(RunChecks(registry, 0, 150), ElementsAre(1));
  EXPECT_EQ(registry.FloorClock(), 0);  // worker 0 has not clocked yet
  // Back, worker 1 starts past step 0: its push there already counts.
  absl::StatusOr<WorkerRegistry::Registration> r = Join(registry, 1, kB, 160);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->clock, 1);
  // Step 0's members: only worker 0 (worker 1 is a pusher of it).
  EXPECT_THAT(registry.MembersOfStep(0), UnorderedElementsAre(0u));
  EXPECT_THAT(registry.MembersOfStep(1), UnorderedElementsAre(0u, 1u));

  // A worker that had not pushed into the open step takes part in it.
  WorkerRegistry other(2, absl::Milliseconds(100), absl::Milliseconds(100),
                       kStart);
  ASSERT_TRUE(Join(other, 0, kA, 0).ok());
  ASSERT_TRUE(Join(other, 1, kB, 0).ok());
  for (int t = 25; t <= 150; t += 25) other.Touch(0, kA, At(t));
  EXPECT_THAT(RunChecks(other, 0, 150), ElementsAre(1));
  EXPECT_EQ(Join(other, 1, kB, 160)->clock, 0);
  EXPECT_THAT(other.MembersOfStep(0), UnorderedElementsAre(0u, 1u));
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
  EXPECT_EQ(registry.Leave(7, kA, At(3)).code(),
            absl::StatusCode::kInvalidArgument);
  RunChecks(registry, 3, 200);
  EXPECT_EQ(RefusalState(registry.AdvanceClock(0, 2, At(201)).status()),
            proto::MEMBERSHIP_EVICTED);
  EXPECT_EQ(RefusalState(registry.ArriveAtBarrier(0, 0, 0, At(201))),
            proto::MEMBERSHIP_EVICTED);
}

TEST(WorkerRegistryTest, NewProcessReplacesTheOldOne) {
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  ASSERT_TRUE(Join(registry, 0, kA, 0).ok());
  ASSERT_TRUE(Join(registry, 1, kB, 0).ok());
  ASSERT_TRUE(registry.AdvanceClock(0, kA, 1, At(10)).ok());
  ASSERT_TRUE(registry.AdvanceClock(1, kB, 1, At(10)).ok());
  ASSERT_TRUE(registry.AdvanceClock(1, kB, 2, At(10)).ok());
  // Worker 0 crashed at clock 1 (step 1 open, it had pushed into it) and
  // its restarted process registers before the old one was evicted.
  registry.RecordPush(0, kA, 1);
  absl::StatusOr<WorkerRegistry::Registration> r = Join(registry, 0, kC, 20);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->admitted);
  EXPECT_EQ(r->clock, 2);
  EXPECT_EQ(registry.FloorClock(), 2);  // step 1 is complete
  // The old process is refused everywhere from now on.
  EXPECT_EQ(registry.Touch(0, kA, At(21)), proto::MEMBERSHIP_REPLACED);
  EXPECT_EQ(RefusalState(registry.AdvanceClock(0, kA, 2, At(21)).status()),
            proto::MEMBERSHIP_REPLACED);
  EXPECT_EQ(RefusalState(Join(registry, 0, kA, 21).status()),
            proto::MEMBERSHIP_REPLACED);
  EXPECT_EQ(RefusalState(registry.Leave(0, kA, At(21))),
            proto::MEMBERSHIP_REPLACED);
  EXPECT_TRUE(registry.IsLive(0));
  EXPECT_EQ(registry.MembershipOf(0, kC), proto::MEMBERSHIP_MEMBER);
  EXPECT_EQ(*registry.AdvanceClock(0, kC, 3, At(22)), 3);
}

TEST(WorkerRegistryTest, LeaveStopsCountingAtOnce) {
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  ASSERT_TRUE(Join(registry, 0, kA, 0).ok());
  ASSERT_TRUE(Join(registry, 1, kB, 0).ok());
  ASSERT_TRUE(registry.AdvanceClock(1, kB, 1, At(1)).ok());
  ASSERT_TRUE(registry.ArriveAtBarrier(1, kB, 0, At(1)).ok());
  EXPECT_FALSE(registry.BarrierComplete(0));
  EXPECT_EQ(registry.FloorClock(), 0);
  ASSERT_TRUE(registry.Leave(0, kA, At(2)).ok());
  ASSERT_TRUE(registry.Leave(0, kA, At(3)).ok());  // idempotent
  EXPECT_EQ(registry.FloorClock(), 1);
  EXPECT_TRUE(registry.BarrierComplete(0));
  EXPECT_THAT(registry.LiveWorkers(), UnorderedElementsAre(1u));
  // The process that left is refused; a new process of worker 0 (a
  // restart) is admitted in the same job.
  EXPECT_EQ(registry.Touch(0, kA, At(4)), proto::MEMBERSHIP_LEFT);
  EXPECT_EQ(RefusalState(Join(registry, 0, kA, 4).status()),
            proto::MEMBERSHIP_LEFT);
  absl::StatusOr<WorkerRegistry::Registration> r = Join(registry, 0, kC, 5);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->new_generation);
  EXPECT_EQ(r->clock, 1);
  EXPECT_EQ(r->barriers_completed, 1u);
}

TEST(WorkerRegistryTest, AnotherJobWaitsForTheRunningOneThenStartsClean) {
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  absl::StatusOr<WorkerRegistry::Registration> first =
      Join(registry, 0, kA, 0, "job-a");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->job_id, "job-a");
  EXPECT_EQ(first->job_generation, 1u);
  EXPECT_EQ(first->job_start_clock, 0);
  ASSERT_TRUE(Join(registry, 1, kB, 0, "job-a").ok());
  for (int c = 1; c <= 7; ++c) {
    ASSERT_TRUE(registry.AdvanceClock(0, kA, c, At(1)).ok());
    ASSERT_TRUE(registry.AdvanceClock(1, kB, c, At(1)).ok());
  }
  ASSERT_TRUE(registry.ArriveAtBarrier(0, kA, 0, At(1)).ok());
  ASSERT_TRUE(registry.ArriveAtBarrier(1, kB, 0, At(1)).ok());
  // Job b while job a's workers are live: refused, naming job a.
  absl::Status refused = Join(registry, 0, kC, 2, "job-b").status();
  std::optional<proto::MembershipError> error = GetMembershipError(refused);
  ASSERT_TRUE(error.has_value()) << refused;
  EXPECT_EQ(error->state(), proto::MEMBERSHIP_OTHER_JOB);
  EXPECT_EQ(error->job_id(), "job-a");
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr("serves job 'job-a' (generation 1), whose "
                                   "worker(s) 0, 1 are live"));
  // Worker 0 leaves; worker 1 crashed (evicted): job b starts clean.
  ASSERT_TRUE(registry.Leave(0, kA, At(3)).ok());
  EXPECT_THAT(RunChecks(registry, 3, 125), ElementsAre(1));
  absl::StatusOr<WorkerRegistry::Registration> b =
      Join(registry, 1, kC, 130, "job-b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b->new_generation);
  EXPECT_EQ(b->job_generation, 2u);
  EXPECT_EQ(b->job_start_clock, 7);
  EXPECT_EQ(b->clock, 7);
  EXPECT_EQ(b->barriers_completed, 0u);
  EXPECT_FALSE(registry.BarrierComplete(0));
  // Worker 0 of job b is pending (waited for); job a's processes are not
  // members of job b, whatever they send.
  EXPECT_THAT(registry.LiveWorkers(), UnorderedElementsAre(0u, 1u));
  EXPECT_EQ(registry.Heartbeat(0, kA, "job-a", At(131)),
            proto::MEMBERSHIP_OTHER_JOB);
  EXPECT_EQ(registry.Touch(0, kA, At(131)), proto::MEMBERSHIP_OTHER_JOB);
  EXPECT_EQ(registry.Heartbeat(1, kB, "job-b", At(131)),
            proto::MEMBERSHIP_REPLACED);
  proto::StatsResponse stats;
  registry.FillStats(At(131), &stats);
  EXPECT_EQ(stats.job_id(), "job-b");
  EXPECT_EQ(stats.job_generation(), 2u);
  EXPECT_EQ(stats.workers(0).state(), "pending");
  EXPECT_EQ(stats.workers(1).state(), "live");
}

TEST(WorkerRegistryTest, SameJobIdStartsANewGenerationOnlyAfterEveryoneLeft) {
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  ASSERT_TRUE(Join(registry, 0, kA, 0, "").ok());
  ASSERT_TRUE(Join(registry, 1, kB, 0, "").ok());
  ASSERT_TRUE(registry.AdvanceClock(0, kA, 1, At(1)).ok());
  ASSERT_TRUE(registry.AdvanceClock(1, kB, 1, At(1)).ok());
  ASSERT_TRUE(registry.AdvanceClock(1, kB, 2, At(1)).ok());
  // Worker 0 leaves, worker 1 crashes: its restart rejoins the same job.
  ASSERT_TRUE(registry.Leave(0, kA, At(2)).ok());
  EXPECT_THAT(RunChecks(registry, 2, 125), ElementsAre(1));
  absl::StatusOr<WorkerRegistry::Registration> r =
      Join(registry, 1, kC, 130, "");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->new_generation);
  EXPECT_EQ(r->clock, 2);
  // Once every worker that joined has left, the next run starts clean.
  ASSERT_TRUE(registry.Leave(1, kC, At(131)).ok());
  r = Join(registry, 0, 0xD, 140, "");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->new_generation);
  EXPECT_EQ(r->job_generation, 2u);
  EXPECT_EQ(r->job_start_clock, 2);
  EXPECT_EQ(registry.FloorClock(), 2);
}

TEST(WorkerRegistryTest, RestoredShardAdoptsTheJobAndTheRunningProcesses) {
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  ASSERT_TRUE(
      registry.ImportState({WorkerState{5, 1}, WorkerState{4, 1}}, 4, 1).ok());
  // The processes of the running job keep heartbeating this restarted
  // shard: it learns their job and sessions from them.
  EXPECT_EQ(registry.Heartbeat(0, kA, "job-a", At(1)),
            proto::MEMBERSHIP_MEMBER);
  EXPECT_EQ(registry.Touch(1, kB, At(1)), proto::MEMBERSHIP_MEMBER);
  EXPECT_EQ(registry.Touch(1, kC, At(2)), proto::MEMBERSHIP_REPLACED);
  proto::StatsResponse stats;
  registry.FillStats(At(2), &stats);
  EXPECT_EQ(stats.job_id(), "job-a");
  EXPECT_EQ(stats.job_start_clock(), -1);
  EXPECT_EQ(stats.workers(0).clock(), 5);
  EXPECT_EQ(stats.workers(1).state(), "live");
  absl::StatusOr<WorkerRegistry::Registration> r =
      Join(registry, 0, kA, 3, "job-a");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->clock, 5);
  EXPECT_EQ(r->job_start_clock, -1);
}

TEST(WorkerRegistryTest, RestartMeetsTheWorkersAgainAsAfterARestore) {
  // A backup's registry: the snapshot's, then nothing for a long time (its
  // own monitor evicted everyone); it becomes primary at At(1000).
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  ASSERT_TRUE(
      registry.ImportState({WorkerState{5, 1}, WorkerState{4, 1}}, 4, 1).ok());
  size_t evicted = 0;
  for (int t = 25; t <= 200; t += 25) {
    evicted += registry.EvictExpired(At(t)).evicted.size();
  }
  ASSERT_EQ(evicted, 2u);
  ASSERT_EQ(registry.LiveWorkers().size(), 0u);
  ASSERT_EQ(registry.FloorClock(), 5);  // nobody counting: the highest
  registry.Restart(At(1000));
  // Pending again (counting, holding the floor) with a fresh join deadline,
  // clocks kept, the floor recomputed from them (evictions by a registry
  // nobody talked to must not complete steps without worker 1's push); the
  // running processes are adopted by their next request and caught up to
  // the clock it carries.
  EXPECT_EQ(registry.LiveWorkers().size(), 2u);
  EXPECT_EQ(registry.FloorClock(), 4);
  EXPECT_EQ(registry.EvictExpired(At(1050)).evicted.size(), 0u);
  EXPECT_EQ(registry.Touch(0, kA, At(1060)), proto::MEMBERSHIP_MEMBER);
  EXPECT_EQ(registry.Touch(1, kB, At(1060)), proto::MEMBERSHIP_MEMBER);
  EXPECT_TRUE(registry.CatchUp(0, 9, /*confirms=*/true));
  EXPECT_TRUE(registry.CatchUp(1, 9, /*confirms=*/true));
  EXPECT_EQ(registry.FloorClock(), 9);
  EXPECT_EQ(registry.Touch(1, kC, At(1070)), proto::MEMBERSHIP_REPLACED);
}

TEST(WorkerRegistryTest, TakeOverGoesOnFromTheReplicatedMembership) {
  // The old primary's registry: worker 0 live, 1 left, 2 re-registered by
  // a new process (kC replaced by 0xD), 3 evicted; a barrier completed.
  constexpr uint64_t kD = 0xD, kE = 0xE;
  WorkerRegistry primary(4, absl::Milliseconds(100), absl::Seconds(10),
                         kStart);
  uint64_t version = primary.membership_version();
  auto changed = [&] {
    const uint64_t now = primary.membership_version();
    const bool moved = now > version;
    version = now;
    return moved;
  };
  for (int w = 0; w < 4; ++w) {
    ASSERT_TRUE(Join(primary, w, kA + w, 0).ok());
    EXPECT_TRUE(changed()) << "registration of " << w;
  }
  ASSERT_TRUE(primary.AdvanceClock(0, kA, 1, At(10)).ok());
  EXPECT_EQ(primary.Heartbeat(0, kA, "j", At(10)), proto::MEMBERSHIP_MEMBER);
  EXPECT_FALSE(changed()) << "clocks and heartbeats are no membership change";
  ASSERT_TRUE(primary.Leave(1, kB, At(20)).ok());
  EXPECT_TRUE(changed());
  ASSERT_TRUE(Join(primary, 2, kD, 20).ok());
  EXPECT_TRUE(changed());
  for (int t = 25; t <= 200; t += 25) {
    ASSERT_TRUE(primary.AdvanceClock(0, kA, 1, At(t)).ok());  // heartbeats
    ASSERT_EQ(primary.Touch(2, kD, At(t)), proto::MEMBERSHIP_MEMBER);
    primary.EvictExpired(At(t));
  }
  ASSERT_FALSE(primary.IsLive(3));
  EXPECT_TRUE(changed()) << "worker 3's eviction";
  ASSERT_TRUE(primary.ArriveAtBarrier(0, kA, 0, At(200)).ok());
  EXPECT_TRUE(changed());
  ASSERT_TRUE(primary.ArriveAtBarrier(2, kD, 0, At(200)).ok());
  ASSERT_TRUE(primary.BarrierComplete(0));
  const WorkerMembership replicated = primary.ExportMembership();
  EXPECT_EQ(replicated.version(), primary.membership_version());

  // A backup's registry: nobody talked to it, its monitor evicted everyone.
  WorkerRegistry backup(4, absl::Milliseconds(100), absl::Seconds(10),
                        kStart);
  for (int t = 25; t <= 20000; t += 25) backup.EvictExpired(At(t));
  ASSERT_EQ(backup.LiveWorkers().size(), 0u);
  ASSERT_TRUE(backup.TakeOver(replicated, At(30000)).ok());
  EXPECT_GT(backup.membership_version(), replicated.version());
  // Nobody is pending: the workers that left or were evicted are not
  // waited for (after a Restart every one would be, for join_timeout).
  EXPECT_THAT(backup.LiveWorkers(), UnorderedElementsAre(0u, 2u));
  EXPECT_EQ(backup.Touch(1, kB, At(30010)), proto::MEMBERSHIP_LEFT);
  EXPECT_EQ(backup.Touch(2, kC, At(30010)), proto::MEMBERSHIP_REPLACED);
  EXPECT_EQ(backup.Touch(2, kD, At(30010)), proto::MEMBERSHIP_MEMBER);
  EXPECT_EQ(backup.Touch(3, kA + 3, At(30010)), proto::MEMBERSHIP_EVICTED);
  EXPECT_TRUE(backup.BarrierComplete(0));
  // The job is the same: another one is refused while members are live.
  EXPECT_EQ(RefusalState(Join(backup, 3, kE, 30010, "other").status()),
            proto::MEMBERSHIP_OTHER_JOB);
  // Live members are judged by heartbeat_timeout from the takeover on:
  // worker 0, silent, is evicted after 100 ms, not join_timeout's 10 s.
  EXPECT_THAT(RunChecks(backup, 30000, 30090), IsEmpty());
  ASSERT_EQ(backup.Touch(2, kD, At(30090)), proto::MEMBERSHIP_MEMBER);
  EXPECT_THAT(RunChecks(backup, 30090, 30150), ElementsAre(0));
  // Clocks are caught up by the next request that carries one.
  EXPECT_EQ(backup.FloorClock(), 0);  // worker 2's clock (admitted at 0)
  EXPECT_TRUE(backup.CatchUp(2, 4, /*confirms=*/true));
  EXPECT_EQ(backup.FloorClock(), 4);
  // A membership of another cluster size is refused.
  WorkerRegistry three(3, absl::Milliseconds(100), absl::Seconds(10), kStart);
  EXPECT_EQ(three.TakeOver(replicated, At(30000)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(WorkerRegistryTest, MinClockAlignsARejoinAcrossShards) {
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  ASSERT_TRUE(Join(registry, 0, kA, 0).ok());
  ASSERT_TRUE(Join(registry, 1, kB, 0).ok());
  for (int c = 1; c <= 3; ++c) {
    ASSERT_TRUE(registry.AdvanceClock(0, kA, c, At(1)).ok());
  }
  // Worker 1 is live here at 0 but another shard admitted it at 3.
  absl::StatusOr<WorkerRegistry::Registration> r =
      Join(registry, 1, kB, 2, "j", /*min_clock=*/3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->clock, 3);
  EXPECT_EQ(registry.FloorClock(), 3);
  EXPECT_THAT(registry.MembersOfStep(0), UnorderedElementsAre(0u));
}

TEST(WorkerRegistryTest, LiveRejoinAfterAPartialPushSkipsThatStep) {
  // This shard still has worker 0 live at clock 3 and got its push for
  // step 3; another shard evicted it. Its Rejoin() registers here too: it
  // moves past step 3, where its push already counts, and is no member of
  // step 3 (so a second push there would not be asked of it).
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  ASSERT_TRUE(Join(registry, 0, kA, 0).ok());
  ASSERT_TRUE(Join(registry, 1, kB, 0).ok());
  for (int c = 1; c <= 3; ++c) {
    ASSERT_TRUE(registry.AdvanceClock(0, kA, c, At(1)).ok());
    ASSERT_TRUE(registry.AdvanceClock(1, kB, c, At(1)).ok());
  }
  registry.RecordPush(0, kA, 3);
  absl::StatusOr<WorkerRegistry::Registration> r = Join(registry, 0, kA, 2);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->clock, 4);
  EXPECT_THAT(registry.MembersOfStep(3), UnorderedElementsAre(1u));
  // Without a push in its step, a live re-registration keeps the clock.
  EXPECT_EQ(Join(registry, 1, kB, 3)->clock, 3);
}

TEST(WorkerRegistryTest, BarrierCompletesWhenAllCountingArriveOrOnEviction) {
  WorkerRegistry registry(3, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  ASSERT_TRUE(registry.ArriveAtBarrier(0, kA, 0, At(1)).ok());
  ASSERT_TRUE(registry.ArriveAtBarrier(1, kB, 0, At(1)).ok());
  EXPECT_FALSE(registry.BarrierComplete(0));
  ASSERT_TRUE(registry.ArriveAtBarrier(2, kC, 0, At(2)).ok());
  EXPECT_TRUE(registry.BarrierComplete(0));
  EXPECT_FALSE(registry.BarrierComplete(1));
  // Generation 1: worker 2 dies before arriving.
  ASSERT_TRUE(registry.ArriveAtBarrier(0, kA, 1, At(50)).ok());
  ASSERT_TRUE(registry.ArriveAtBarrier(1, kB, 1, At(50)).ok());
  EXPECT_FALSE(registry.BarrierComplete(1));
  EXPECT_THAT(RunChecks(registry, 2, 125), ElementsAre(2));
  EXPECT_TRUE(registry.BarrierComplete(1));
  // A re-admitted worker does not hold back completed generations.
  absl::StatusOr<WorkerRegistry::Registration> r = Join(registry, 2, kC, 130);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->barriers_completed, 2u);
  EXPECT_TRUE(registry.BarrierComplete(1));
  EXPECT_FALSE(registry.BarrierComplete(2));
}

TEST(WorkerRegistryTest, StatsReportEveryWorker) {
  WorkerRegistry registry(2, absl::Milliseconds(100), absl::Milliseconds(100),
                          kStart);
  ASSERT_TRUE(registry.AdvanceClock(1, 1, At(10)).ok());
  proto::StatsResponse stats;
  registry.FillStats(At(30), &stats);
  ASSERT_EQ(stats.workers_size(), 2);
  EXPECT_EQ(stats.workers(0).clock(), 0);
  EXPECT_EQ(stats.workers(0).ms_since_heartbeat(), 30);
  EXPECT_EQ(stats.workers(0).state(), "pending");
  EXPECT_EQ(stats.workers(1).clock(), 1);
  EXPECT_EQ(stats.workers(1).ms_since_heartbeat(), 20);
  EXPECT_TRUE(stats.workers(1).live());
  EXPECT_EQ(stats.workers(1).state(), "live");
  EXPECT_EQ(stats.job_generation(), 1u);
}

}  // namespace
}  // namespace ps
