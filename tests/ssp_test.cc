// Stale-synchronous reads: with staleness s = 2 a worker may read at clock c
// only when the slowest live worker is at clock >= c - 2. Also: async never
// blocks, and a slow worker that leaves (or dies: evicted) releases the
// fast one.
#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "tests/cluster_harness.h"

namespace ps::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

std::string Body(const std::string& consistency) {
  return R"(
server:
  heartbeat_timeout_ms: 1500
client:
  heartbeat_interval_ms: 200
tables:
  - name: w
    kind: dense
    size: 64
    consistency: )" +
         consistency + (consistency == "ssp" ? "\n    staleness: 2\n" : "\n");
}

// True when `f` completes within `timeout`.
bool CompletesWithin(const Future& f, milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  while (steady_clock::now() < deadline) {
    if (f.Ready()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return f.Ready();
}

struct TwoWorkers {
  std::unique_ptr<LocalCluster> cluster;
  std::unique_ptr<Client> fast;
  std::unique_ptr<Client> slow;
};

TwoWorkers StartTwoWorkers(const std::string& consistency) {
  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = 2;
  spec.body_yaml = Body(consistency);
  TwoWorkers w;
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(spec);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  if (!cluster.ok()) return w;
  w.cluster = std::move(*cluster);
  absl::StatusOr<std::unique_ptr<Client>> fast = w.cluster->Connect(0);
  absl::StatusOr<std::unique_ptr<Client>> slow = w.cluster->Connect(1);
  EXPECT_TRUE(fast.ok()) << fast.status();
  EXPECT_TRUE(slow.ok()) << slow.status();
  if (fast.ok()) w.fast = std::move(*fast);
  if (slow.ok()) w.slow = std::move(*slow);
  return w;
}

TEST(SspTest, FastWorkerBlocksThreeClocksAheadAndResumes) {
  TwoWorkers w = StartTwoWorkers("ssp");
  ASSERT_NE(w.fast, nullptr);
  ASSERT_NE(w.slow, nullptr);
  std::vector<float> params(64);
  // Clocks 0, 1, 2 are within the bound of the slow worker at clock 0.
  for (int c = 0; c < 3; ++c) {
    ASSERT_EQ(w.fast->clock(), c);
    Future pull = w.fast->PullDense(0, 0, absl::MakeSpan(params));
    ASSERT_TRUE(CompletesWithin(pull, milliseconds(5000))) << "clock " << c;
    ASSERT_TRUE(pull.Wait().ok());
    ASSERT_TRUE(w.fast->Clock().ok());
  }
  // Clock 3 is 3 ahead of the slow worker: the read must wait.
  ASSERT_EQ(w.fast->clock(), 3);
  Future blocked = w.fast->PullDense(0, 0, absl::MakeSpan(params));
  EXPECT_FALSE(CompletesWithin(blocked, milliseconds(700)));
  // The slow worker reaches clock 1 = 3 - 2: the read goes through.
  ASSERT_TRUE(w.slow->Clock().ok());
  ASSERT_TRUE(CompletesWithin(blocked, milliseconds(5000)));
  EXPECT_TRUE(blocked.Wait().ok());
}

TEST(SspTest, AsyncNeverBlocks) {
  TwoWorkers w = StartTwoWorkers("async");
  ASSERT_NE(w.fast, nullptr);
  std::vector<float> params(64);
  for (int c = 0; c < 10; ++c) {
    Future pull = w.fast->PullDense(0, 0, absl::MakeSpan(params));
    ASSERT_TRUE(CompletesWithin(pull, milliseconds(5000))) << "clock " << c;
    ASSERT_TRUE(pull.Wait().ok());
    ASSERT_TRUE(w.fast->Clock().ok());
  }
  EXPECT_EQ(w.fast->clock(), 10);
}

TEST(SspTest, SlowWorkerThatLeavesReleasesTheFastOneAtOnce) {
  TwoWorkers w = StartTwoWorkers("ssp");
  ASSERT_NE(w.fast, nullptr);
  std::vector<float> params(64);
  for (int c = 0; c < 3; ++c) ASSERT_TRUE(w.fast->Clock().ok());
  Future blocked = w.fast->PullDense(0, 0, absl::MakeSpan(params));
  EXPECT_FALSE(CompletesWithin(blocked, milliseconds(300)));
  // The slow worker's client goes away: it leaves the job (a dead process
  // is evicted after the heartbeat timeout instead: fault_worker_kill_test).
  const auto start = steady_clock::now();
  w.slow.reset();
  ASSERT_TRUE(CompletesWithin(blocked, milliseconds(10000)))
      << w.cluster->ServerLog(0);
  EXPECT_TRUE(blocked.Wait().ok());
  // Released by the leave, not by the 1.5 s eviction timeout.
  EXPECT_LT(steady_clock::now() - start, milliseconds(700));
}

TEST(SspTest, SyncStepCompletesAfterDeadWorkerIsEvicted) {
  TwoWorkers w = StartTwoWorkers("sync");
  ASSERT_NE(w.fast, nullptr);
  std::vector<float> grads(64, 1.0f), params(64);
  std::vector<float> before(64);
  ASSERT_TRUE(w.fast->PullDense(0, 0, absl::MakeSpan(before)).Wait().ok());
  w.slow.reset();
  ASSERT_TRUE(w.fast->PushDense(0, 0, grads).Wait().ok());
  ASSERT_TRUE(w.fast->Clock().ok());
  Future pull = w.fast->PullDense(0, 0, absl::MakeSpan(params));
  ASSERT_TRUE(CompletesWithin(pull, milliseconds(10000)))
      << w.cluster->ServerLog(0);
  ASSERT_TRUE(pull.Wait().ok());
  // Step 0 was applied with the surviving worker's gradient alone (SGD with
  // the default learning rate 0.01).
  for (int i = 0; i < 64; ++i) {
    EXPECT_FLOAT_EQ(params[i], before[i] - 0.01f) << i;
  }
}

}  // namespace
}  // namespace ps::testing
