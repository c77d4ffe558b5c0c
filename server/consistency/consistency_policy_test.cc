// The policies' decisions on their own; their effect on a table (sums,
// versions, steps) is tested through ShardTable (shard_table_test.cc) and
// real servers (tests/sync_equivalence_test.cc, tests/ssp_test.cc).
#include "server/consistency/consistency_policy.h"

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

// Records what a policy asks of its table.
class FakeTable : public TableUpdates {
 public:
  absl::Status Apply(const DataRequestView&, absl::Span<const uint64_t>,
                     int64_t t) override {
    applied_at.push_back(t);
    return absl::OkStatus();
  }
  absl::Status Accumulate(const DataRequestView&,
                          absl::Span<const uint64_t>) override {
    ++accumulated;
    return absl::OkStatus();
  }
  absl::Status ApplyAccumulated(absl::Span<const uint64_t> rows, float scale,
                                int64_t t) override {
    steps_applied.push_back({std::vector<uint64_t>(rows.begin(), rows.end()),
                             scale, t});
    return absl::OkStatus();
  }
  uint64_t LockedVersion() const override { return version; }
  void BumpVersion() override { ++version; }

  struct Step {
    std::vector<uint64_t> rows;
    float scale;
    int64_t t;
  };
  std::vector<int64_t> applied_at;
  int accumulated = 0;
  std::vector<Step> steps_applied;
  uint64_t version = 0;
};

TableConfig Config(Consistency c, TableKind kind = TableKind::kDense) {
  TableConfig t;
  t.name = "t";
  t.kind = kind;
  t.consistency = c;
  t.staleness = c == Consistency::kSsp ? 2 : 0;
  return t;
}

DataRequestView Push(int32_t worker, int64_t clock, bool first_chunk = true) {
  DataRequestView r;
  r.op = proto::PUSH;
  r.worker_id = worker;
  r.clock = clock;
  r.first_chunk = first_chunk;
  return r;
}

TEST(ConsistencyPolicyTest, RegistryPicksThePolicyOfTheMode) {
  for (Consistency c :
       {Consistency::kAsync, Consistency::kSync, Consistency::kSsp}) {
    EXPECT_EQ(CreateConsistencyPolicy(Config(c), 0)->traits().mode, c);
  }
}

TEST(ConsistencyPolicyTest, AsyncAppliesOneVersionPerLogicalPush) {
  auto policy = CreateConsistencyPolicy(Config(Consistency::kAsync), 0);
  WorkerRegistry registry(1, absl::Seconds(10), absl::Seconds(10), absl::Now());
  EXPECT_FALSE(policy->ReadyCondition(Push(0, 5), registry));
  EXPECT_FALSE(policy->HasSteps());
  FakeTable table;
  ASSERT_TRUE(policy->Push(Push(0, 0, true), {}, table).ok());
  ASSERT_TRUE(policy->Push(Push(0, 0, false), {}, table).ok());  // same push
  ASSERT_TRUE(policy->Push(Push(0, 0, true), {}, table).ok());
  EXPECT_EQ(table.applied_at, (std::vector<int64_t>{1, 1, 2}));
  EXPECT_EQ(table.version, 2u);
}

TEST(ConsistencyPolicyTest, SspReadsWaitForTheSlowestWorker) {
  auto policy = CreateConsistencyPolicy(Config(Consistency::kSsp), 0);
  WorkerRegistry registry(2, absl::Seconds(10), absl::Seconds(10), absl::Now());
  DataRequestView pull = Push(0, 3);
  pull.op = proto::PULL;
  WaitList::Ready ready = policy->ReadyCondition(pull, registry);
  ASSERT_TRUE(ready);
  EXPECT_FALSE(ready());  // floor 0 < 3 - 2
  ASSERT_TRUE(registry.AdvanceClock(0, 1, absl::Now()).ok());
  ASSERT_TRUE(registry.AdvanceClock(1, 1, absl::Now()).ok());
  EXPECT_TRUE(ready());  // floor 1 >= 3 - 2
  EXPECT_FALSE(policy->ReadyCondition(Push(0, 3), registry));  // pushes go on
}

TEST(ConsistencyPolicyTest, SyncAccumulatesAndAppliesTheMeanOncePerStep) {
  auto policy =
      CreateConsistencyPolicy(Config(Consistency::kSync, TableKind::kSparse), 4);
  EXPECT_EQ(policy->steps(), 4);
  EXPECT_TRUE(policy->AdmitPush(Push(0, 4), Config(Consistency::kSync)).ok());
  absl::Status late = policy->AdmitPush(Push(0, 3), Config(Consistency::kSync));
  EXPECT_EQ(late.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(late.message(),
            "push for step 3 of sync table 't': that step was already "
            "applied (steps applied: 4)");
  FakeTable table;
  const std::vector<uint64_t> rows_a = {7, 2};
  const std::vector<uint64_t> rows_b = {2, 9};
  ASSERT_TRUE(policy->Push(Push(0, 4), rows_a, table).ok());
  ASSERT_TRUE(policy->Push(Push(1, 4), rows_b, table).ok());
  EXPECT_EQ(table.accumulated, 2);
  EXPECT_TRUE(policy->HasOpenStepPushes());
  EXPECT_EQ(policy->OpenStepPushes(), 2u);
  // Three live workers: worker 2 pushed nothing here but counts (D = 3).
  absl::StatusOr<int64_t> advanced =
      policy->CompleteSteps(7, {0, 1, 2}, table);
  ASSERT_TRUE(advanced.ok());
  EXPECT_EQ(*advanced, 3);  // steps 4, 5, 6; only 4 had pushes
  ASSERT_EQ(table.steps_applied.size(), 1u);
  EXPECT_EQ(table.steps_applied[0].rows, (std::vector<uint64_t>{2, 7, 9}));
  EXPECT_EQ(table.steps_applied[0].scale, 1.0f / 3);
  EXPECT_EQ(table.steps_applied[0].t, 1);
  EXPECT_EQ(table.version, 1u);
  EXPECT_EQ(policy->steps(), 7);
  EXPECT_FALSE(policy->HasOpenStepPushes());
  // An evicted pusher still counts: D = live (1) + pusher 0.
  ASSERT_TRUE(policy->Push(Push(0, 7), rows_a, table).ok());
  ASSERT_TRUE(policy->CompleteSteps(8, {1}, table).ok());
  EXPECT_EQ(table.steps_applied[1].scale, 0.5f);
}

TEST(ConsistencyPolicyTest, SyncReadsWaitForThePreviousStep) {
  auto policy = CreateConsistencyPolicy(Config(Consistency::kSync), 0);
  WorkerRegistry registry(1, absl::Seconds(10), absl::Seconds(10), absl::Now());
  DataRequestView pull = Push(0, 1);
  pull.op = proto::PULL;
  WaitList::Ready ready = policy->ReadyCondition(pull, registry);
  ASSERT_TRUE(ready);
  EXPECT_FALSE(ready());
  FakeTable table;
  ASSERT_TRUE(policy->CompleteSteps(1, {0}, table).ok());
  EXPECT_TRUE(ready());
  policy->Restore(0);
  EXPECT_FALSE(ready());
}

}  // namespace
}  // namespace ps
