// Consistency waits, eviction and rejoin through the Shard (no gRPC).
#include "server/shard.h"

#include <limits>
#include <memory>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/backend/update_backend.h"
#include "common/bytes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/table_spec_conversion.h"

namespace ps {
namespace {

using ::testing::ElementsAre;

// Collects one asynchronous DataResponse.
struct Result {
  absl::Notification done;
  proto::DataResponse response;
  Shard::DataDone Callback() {
    return [this](proto::DataResponse r) {
      response = std::move(r);
      done.Notify();
    };
  }
};

std::shared_ptr<proto::DataRequest> Req(proto::Op op, uint32_t table,
                                        int worker, int64_t clock,
                                        std::vector<float> grad = {}) {
  auto r = std::make_shared<proto::DataRequest>();
  r->set_request_id(7);
  r->set_op(op);
  r->set_table_id(table);
  r->set_worker_id(worker);
  r->set_clock(clock);
  r->set_offset(0);
  r->set_length(2);
  r->set_first_chunk(true);
  if (!grad.empty()) r->set_values(EncodeRaw<float>(grad));
  return r;
}

std::vector<float> Floats(const std::string& bytes) {
  auto span = ViewRaw<float>(bytes);
  return std::vector<float>(span.begin(), span.end());
}

class ShardTest : public ::testing::Test {
 protected:
  void SetUp() override { MakeShard(/*join_timeout_ms=*/60000); }
  // Tasks the shard scheduled run before it goes.
  void TearDown() override {
    executor_->Stop();
    shard_.reset();
  }

  void MakeShard(int64_t join_timeout_ms) {
    if (executor_ != nullptr) executor_->Stop();
    shard_.reset();
    executor_ = std::make_unique<Executor>(2);
    ClusterConfig config;
    config.servers = {"127.0.0.1:1"};
    config.num_workers = 2;
    config.server.heartbeat_timeout_ms = 60000;
    config.server.worker_join_timeout_ms = join_timeout_ms;
    TableConfig sync;
    sync.name = "sync";
    sync.table_id = 0;
    sync.size = 2;
    sync.consistency = Consistency::kSync;
    sync.optimizer.learning_rate = 1.0f;
    TableConfig ssp = sync;
    ssp.name = "ssp";
    ssp.table_id = 1;
    ssp.consistency = Consistency::kSsp;
    ssp.staleness = 1;
    config.tables = {sync, ssp};
    auto shard = Shard::Create(config, 0, CreateCpuUpdateBackend(),
                               executor_.get());
    ASSERT_TRUE(shard.ok()) << shard.status();
    shard_ = std::move(shard).value();
  }

  absl::StatusOr<int64_t> Clock(int worker, int64_t clock) {
    absl::Notification done;
    absl::StatusOr<int64_t> result;
    shard_->Clock(worker, clock, [&](absl::StatusOr<int64_t> r) {
      result = r;
      done.Notify();
    });
    done.WaitForNotification();
    return result;
  }

  absl::StatusOr<int64_t> Register(int worker, uint64_t session) {
    proto::RegisterWorkerRequest request;
    request.set_worker_id(worker);
    request.set_session_id(session);
    proto::RegisterWorkerResponse response;
    absl::Status s = shard_->RegisterWorker(request, &response);
    if (!s.ok()) return s;
    return response.clock();
  }

  proto::HeartbeatResponse Heartbeat(int worker, uint64_t session) {
    proto::HeartbeatRequest request;
    request.set_worker_id(worker);
    request.set_session_id(session);
    proto::HeartbeatResponse response;
    EXPECT_TRUE(shard_->Heartbeat(request, &response).ok());
    return response;
  }

  proto::DataResponse Do(std::shared_ptr<proto::DataRequest> request) {
    Result result;
    shard_->SubmitData(request, result.Callback());
    result.done.WaitForNotification();
    return result.response;
  }

  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Shard> shard_;
};

TEST_F(ShardTest, EvictionReleasesAWaitingSyncPull) {
  MakeShard(/*join_timeout_ms=*/1000);
  ASSERT_EQ(Do(Req(proto::PUSH, 0, 0, 0, {2, 4})).status_code(), 0);
  ASSERT_TRUE(Clock(0, 1).ok());
  Result pull;
  shard_->SubmitData(Req(proto::PULL, 0, 0, 1), pull.Callback());
  EXPECT_FALSE(pull.done.WaitForNotificationWithTimeout(absl::Milliseconds(100)));
  EXPECT_EQ(shard_->NumWaitingForTesting(), 1);

  // Worker 0 keeps heartbeating; worker 1 never shows up.
  ASSERT_TRUE(Heartbeat(0, 0).registered());
  shard_->CheckLiveness(absl::Now() + absl::Seconds(2));
  ASSERT_TRUE(pull.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(pull.response.status_code(), 0);
  EXPECT_EQ(pull.response.step(), 1);
  // Only worker 0 pushed and only it is live: divisor 1.
  EXPECT_THAT(Floats(pull.response.values()), ElementsAre(-2, -4));

  // Worker 1 must rejoin; its push is refused saying so, and it rejoins at
  // the current step.
  proto::HeartbeatResponse beat = Heartbeat(1, 0);
  EXPECT_FALSE(beat.registered());
  EXPECT_EQ(beat.membership(), proto::MEMBERSHIP_EVICTED);
  EXPECT_EQ(beat.current_step(), 1);
  proto::DataResponse refused = Do(Req(proto::PUSH, 0, 1, 1, {1, 1}));
  EXPECT_EQ(refused.status_code(),
            static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(refused.membership(), proto::MEMBERSHIP_EVICTED);
  EXPECT_EQ(refused.step(), 1);
  EXPECT_NE(refused.status_message().find("call Rejoin()"), std::string::npos)
      << refused.status_message();
  EXPECT_EQ(*Register(1, 0), 1);
  EXPECT_EQ(Do(Req(proto::PUSH, 0, 1, 1, {1, 1})).status_code(), 0);
}

TEST_F(ShardTest, ServerStallEvictsNobody) {
  MakeShard(/*join_timeout_ms=*/1000);
  ASSERT_TRUE(Register(0, 1).ok());
  // The next check comes a minute later: the server itself was stopped.
  shard_->CheckLiveness(absl::Now() + absl::Seconds(61));
  const proto::StatsResponse stats = shard_->GetStats();
  ASSERT_EQ(stats.workers_size(), 2);
  EXPECT_TRUE(stats.workers(0).live());
  EXPECT_TRUE(stats.workers(1).live());
  EXPECT_TRUE(Heartbeat(0, 1).registered());
}

TEST_F(ShardTest, LeaveReleasesAWaitingSyncStep) {
  ASSERT_TRUE(Register(0, 1).ok());
  ASSERT_TRUE(Register(1, 2).ok());
  auto push = Req(proto::PUSH, 0, 0, 0, {2, 4});
  push->set_client_id(1);
  ASSERT_EQ(Do(push).status_code(), 0);
  ASSERT_TRUE(Clock(0, 1).ok());
  Result pull;
  shard_->SubmitData(Req(proto::PULL, 0, 0, 1), pull.Callback());
  EXPECT_FALSE(pull.done.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  proto::LeaveRequest leave;
  leave.set_worker_id(1);
  leave.set_session_id(2);
  ASSERT_TRUE(shard_->Leave(leave).ok());
  ASSERT_TRUE(pull.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_THAT(Floats(pull.response.values()), ElementsAre(-2, -4));
  EXPECT_EQ(shard_->GetStats().workers(1).state(), "left");
}

TEST_F(ShardTest, RestartedProcessSkipsTheStepItsPredecessorPushedInto) {
  ASSERT_TRUE(Register(0, 1).ok());
  ASSERT_TRUE(Register(1, 2).ok());
  auto push = [&](int worker, uint64_t session, int64_t clock, float g) {
    auto r = Req(proto::PUSH, 0, worker, clock, {g, g});
    r->set_client_id(session);
    r->set_request_id(clock * 10 + worker + 1);
    return Do(r).status_code();
  };
  ASSERT_EQ(push(1, 2, 0, 1), 0);
  // Worker 1 crashes after its push; its new process (session 3) starts
  // at step 1, so step 0 is the mean of the two pushes it got.
  EXPECT_EQ(*Register(1, 3), 1);
  ASSERT_EQ(push(0, 1, 0, 3), 0);
  ASSERT_TRUE(Clock(0, 1).ok());
  proto::DataResponse r = Do(Req(proto::PULL, 0, 0, 1));
  EXPECT_EQ(r.step(), 1);
  EXPECT_THAT(Floats(r.values()), ElementsAre(-2, -2));
  // The old process is refused.
  EXPECT_EQ(push(1, 2, 1, 5),
            static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(Heartbeat(1, 2).membership(), proto::MEMBERSHIP_REPLACED);
}

// A push resent after its step completed (its answer was lost, e.g. on a
// connection cut): answered OK from the dedup window with the original's
// step and duplicate = true, and applied once; a new push for that step is
// refused.
TEST_F(ShardTest, PushResentAfterItsStepCompletedIsAnsweredAsADuplicate) {
  ASSERT_TRUE(Register(0, 1).ok());
  ASSERT_TRUE(Register(1, 2).ok());
  auto push = [&](int worker, uint64_t session, uint64_t request_id) {
    auto r = Req(proto::PUSH, 0, worker, 0, {2, 4});
    r->set_client_id(session);
    r->set_request_id(request_id);
    return Do(r);
  };
  const proto::DataResponse first = push(0, 1, 41);
  ASSERT_EQ(first.status_code(), 0);
  EXPECT_FALSE(first.duplicate());
  ASSERT_EQ(push(1, 2, 42).status_code(), 0);
  ASSERT_TRUE(Clock(0, 1).ok());
  ASSERT_TRUE(Clock(1, 1).ok());
  ASSERT_EQ(Do(Req(proto::PULL, 0, 0, 1)).step(), 1);

  const proto::DataResponse resent = push(0, 1, 41);
  EXPECT_EQ(resent.status_code(), 0) << resent.status_message();
  EXPECT_TRUE(resent.duplicate());
  EXPECT_EQ(resent.step(), first.step());
  EXPECT_EQ(resent.version(), first.version());
  const proto::DataResponse late = push(0, 1, 43);
  EXPECT_EQ(late.status_code(),
            static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_FALSE(late.duplicate());
  proto::DataResponse pulled = Do(Req(proto::PULL, 0, 0, 1));
  EXPECT_THAT(Floats(pulled.values()), ElementsAre(-2, -4));  // the mean, once
}

TEST_F(ShardTest, NegativeClockIsRejectedAndChangesNothing) {
  for (int64_t clock : {int64_t{-1}, std::numeric_limits<int64_t>::min()}) {
    EXPECT_EQ(Clock(0, clock).status().code(),
              absl::StatusCode::kInvalidArgument)
        << clock;
  }
  absl::StatusOr<int64_t> first = Clock(0, 1);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, 1);
}

TEST_F(ShardTest, SspPullWaitsOnlyBeyondTheStalenessBound) {
  // Staleness 1: a worker at clock 1 reads while the slowest is at 0.
  ASSERT_TRUE(Clock(0, 1).ok());
  EXPECT_EQ(Do(Req(proto::PULL, 1, 0, 1)).status_code(), 0);
  // Pushes are applied on arrival.
  EXPECT_EQ(Do(Req(proto::PUSH, 1, 0, 1, {1, 1})).version(), 1u);
  ASSERT_TRUE(Clock(0, 2).ok());
  Result pull;
  shard_->SubmitData(Req(proto::PULL, 1, 0, 2), pull.Callback());
  EXPECT_FALSE(pull.done.WaitForNotificationWithTimeout(absl::Milliseconds(100)));
  ASSERT_TRUE(Clock(1, 1).ok());
  ASSERT_TRUE(pull.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(pull.response.status_code(), 0);
  EXPECT_THAT(Floats(pull.response.values()), ElementsAre(-1, -1));
}

TEST_F(ShardTest, SyncPushForAFutureStepWaitsForItsStep) {
  ASSERT_TRUE(Clock(0, 1).ok());
  // Worker 0 pushes for step 1 before step 0 is applied: parked.
  Result push;
  shard_->SubmitData(Req(proto::PUSH, 0, 0, 1, {2, 2}), push.Callback());
  EXPECT_FALSE(push.done.WaitForNotificationWithTimeout(absl::Milliseconds(100)));
  ASSERT_TRUE(Clock(1, 1).ok());  // step 0 applied (empty)
  ASSERT_TRUE(push.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(push.response.status_code(), 0);
  ASSERT_TRUE(Clock(0, 2).ok());
  ASSERT_TRUE(Clock(1, 2).ok());
  proto::DataResponse r = Do(Req(proto::PULL, 0, 1, 2));
  EXPECT_THAT(Floats(r.values()), ElementsAre(-1, -1));  // mean over 2 live
  EXPECT_EQ(r.step(), 2);
  EXPECT_EQ(r.version(), 1u);
}

TEST_F(ShardTest, BarrierAndStop) {
  absl::Notification first;
  absl::Status first_status;
  shard_->Barrier(0, 0, [&](absl::Status s) {
    first_status = s;
    first.Notify();
  });
  EXPECT_FALSE(first.HasBeenNotified());
  absl::Notification second;
  shard_->Barrier(1, 0, [&](absl::Status) { second.Notify(); });
  ASSERT_TRUE(first.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(second.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(first_status.ok());

  // A parked pull fails with UNAVAILABLE on Stop().
  Result pull;
  shard_->SubmitData(Req(proto::PULL, 0, 0, 3), pull.Callback());
  EXPECT_FALSE(pull.done.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  shard_->Stop();
  ASSERT_TRUE(pull.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(pull.response.status_code(),
            static_cast<int>(absl::StatusCode::kUnavailable));
}

// Only pushes are replicated: a table created at run time would live on the
// primary alone and vanish at failover, so a replicated shard refuses new
// tables and still accepts the config's own (idempotent create).
TEST(ShardTablesTest, ReplicatedShardRefusesNewTablesAtRunTime) {
  Executor executor(1);
  ClusterConfig config;
  config.servers = {"127.0.0.1:1"};
  config.replication.factor = 2;
  config.replication.etcd_endpoints = {"127.0.0.1:2379"};
  TableConfig declared;
  declared.name = "declared";
  declared.table_id = 0;
  declared.size = 4;
  config.tables = {declared};
  absl::StatusOr<std::unique_ptr<Shard>> shard =
      Shard::Create(config, 0, CreateCpuUpdateBackend(), &executor);
  ASSERT_TRUE(shard.ok()) << shard.status();
  EXPECT_TRUE((*shard)->CreateTable(ToTableSpec(declared)).ok());

  TableConfig added = declared;
  added.name = "added";
  added.table_id = 1;
  absl::StatusOr<proto::TableSpec> refused =
      (*shard)->CreateTable(ToTableSpec(added));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            "cannot create table 'added' at run time on a replicated shard "
            "(replication.factor > 1): table creation is not replicated yet, "
            "so it would exist on the primary only; declare it in the "
            "config's tables instead");
  EXPECT_EQ((*shard)->FindTableById(1), nullptr);

  config.replication.factor = 1;
  shard = Shard::Create(config, 0, CreateCpuUpdateBackend(), &executor);
  ASSERT_TRUE(shard.ok()) << shard.status();
  EXPECT_TRUE((*shard)->CreateTable(ToTableSpec(added)).ok());
  EXPECT_NE((*shard)->FindTableById(1), nullptr);
  executor.Stop();
}

}  // namespace
}  // namespace ps
