// Paused processes in a sync job (SIGSTOP / SIGCONT, as a long GC pause or a
// stalled VM does), with real server and worker processes:
//  - a worker paused longer than heartbeat_timeout_ms is evicted, the job
//    goes on without it, and once resumed it rejoins at the job's step and
//    finishes: no abort, no hang, and exact values;
//  - a server paused longer than heartbeat_timeout_ms evicts nobody when it
//    resumes (the silence was its own).
//
// 2 servers, 2 workers (tests/membership_worker): table "w" (dense, sync,
// SGD at learning rate 1), every worker pushes 1.0 per element per step, so
// every sync step subtracts exactly 1 whatever its members: after a job of
// N steps every element is exactly -N, which also proves that no step was
// applied twice, skipped, or diluted by a member that did not push.
#include <signal.h>
#include <sys/wait.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"
#include "tests/test_process.h"

namespace ps::testing {
namespace {

constexpr int kSize = 101;

ClusterSpec Spec() {
  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = 2;
  spec.body_yaml = R"(
tables:
  - name: w
    kind: dense
    size: 101
    consistency: sync
    optimizer: {type: sgd, learning_rate: 1.0}
server:
  heartbeat_timeout_ms: 1000
  worker_join_timeout_ms: 30000
client:
  heartbeat_interval_ms: 100
  rpc_timeout_ms: 30000
)";
  return spec;
}

class MembershipPauseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
        LocalCluster::Start(Spec());
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
  }

  // Starts worker `w` for a job of `steps` steps.
  void StartWorker(int w, int steps, int delay_ms) {
    const std::string dir = TestTempDir();
    progress_[w] = absl::StrCat(dir, "/pause_progress_", w);
    unlink(progress_[w].c_str());
    const std::string log = absl::StrCat(dir, "/pause_worker_", w, ".log");
    unlink(log.c_str());
    absl::StatusOr<std::unique_ptr<TestProcess>> p = TestProcess::Start(
        {RunfilePath("tests/membership_worker"),
         "--config=" + cluster_->config_path(),
         "--servers=" + absl::StrJoin(cluster_->addresses(), ","),
         absl::StrCat("--worker_id=", w), absl::StrCat("--steps=", steps),
         absl::StrCat("--step_delay_ms=", delay_ms),
         "--progress_file=" + progress_[w]},
        log);
    ASSERT_TRUE(p.ok()) << p.status();
    workers_[w] = *std::move(p);
  }

  // Waits until worker `w` finished `step` steps (false after 30 s).
  bool WaitForStep(int w, int64_t step) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (ReadProgress(progress_[w]) < step) {
      if (absl::Now() > deadline) return false;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return true;
  }

  // Stops worker `w` for `pause` while the other one must go on.
  void PauseWorker(int w, absl::Duration pause) {
    const int other = 1 - w;
    ASSERT_TRUE(workers_[w]->Signal(SIGSTOP));
    const absl::Time stopped = absl::Now();
    const int64_t other_before = ReadProgress(progress_[other]);
    absl::SleepFor(pause);
    const int64_t other_after = ReadProgress(progress_[other]);
    ASSERT_TRUE(workers_[w]->Signal(SIGCONT));
    std::printf("worker %d stopped %.0f ms; worker %d went from step %lld "
                "to %lld meanwhile\n",
                w, absl::ToDoubleMilliseconds(absl::Now() - stopped), other,
                static_cast<long long>(other_before),
                static_cast<long long>(other_after));
    // The job did not wait for the paused worker (after the eviction).
    EXPECT_GE(other_after, other_before + 10)
        << workers_[other]->Log();
  }

  void ExpectBothFinish(int steps) {
    for (int w = 0; w < 2; ++w) {
      std::optional<int> status = workers_[w]->Wait(absl::Seconds(60));
      ASSERT_TRUE(status.has_value())
          << "worker " << w << " hangs:\n" << workers_[w]->Log();
      EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
          << "worker " << w << " status " << *status << "\n"
          << workers_[w]->Log();
      EXPECT_NE(workers_[w]->Log().find(absl::StrCat(
                    "DONE worker=", w, " steps=", steps)),
                std::string::npos)
          << workers_[w]->Log();
    }
  }

  // Every element is exactly -steps, every shard applied `steps` steps.
  void ExpectExactValues(int steps) {
    absl::StatusOr<std::unique_ptr<Client>> reader = cluster_->Connect(-1);
    ASSERT_TRUE(reader.ok()) << reader.status();
    std::vector<float> w(kSize, 123.0f);
    ASSERT_TRUE((*reader)->PullDense(0, 0, absl::MakeSpan(w)).Wait().ok());
    for (int i = 0; i < kSize; ++i) {
      ASSERT_EQ(w[i], -1.0f * steps) << "element " << i;
    }
    absl::StatusOr<std::vector<ShardStats>> stats = (*reader)->GetStats();
    ASSERT_TRUE(stats.ok()) << stats.status();
    for (const ShardStats& shard : *stats) {
      EXPECT_EQ(shard.tables[0].step, steps) << "shard " << shard.shard_index;
      // Both workers left when they finished.
      for (const ShardStats::Worker& worker : shard.workers) {
        EXPECT_EQ(worker.state, "left") << "shard " << shard.shard_index
                                        << " worker " << worker.worker_id;
      }
    }
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<TestProcess> workers_[2];
  std::string progress_[2];
};

TEST_F(MembershipPauseTest, PausedWorkersRejoinAndTheJobFinishesExactly) {
  constexpr int kSteps = 260;
  StartWorker(0, kSteps, 10);
  StartWorker(1, kSteps, 10);
  // Worker 1 stops mid-job for 2.5 heartbeat timeouts, then worker 0 (the
  // one that evaluates in ps_worker) does.
  ASSERT_TRUE(WaitForStep(1, 20)) << workers_[1]->Log();
  PauseWorker(1, absl::Milliseconds(2500));
  ASSERT_TRUE(WaitForStep(1, 140)) << workers_[1]->Log();
  PauseWorker(0, absl::Milliseconds(2500));
  ExpectBothFinish(kSteps);
  ExpectExactValues(kSteps);
  for (int w = 0; w < 2; ++w) {
    const std::string log = workers_[w]->Log();
    EXPECT_NE(log.find(absl::StrCat("EVICTED worker=", w)), std::string::npos)
        << log;
    EXPECT_NE(log.find(absl::StrCat("REJOINED worker=", w)),
              std::string::npos)
        << log;
  }
  for (int s = 0; s < 2; ++s) {
    const std::string log = cluster_->ServerLog(s);
    EXPECT_NE(log.find("evicted worker 1"), std::string::npos) << log;
    EXPECT_NE(log.find("admitted worker 1"), std::string::npos) << log;
    EXPECT_NE(log.find("evicted worker 0"), std::string::npos) << log;
  }
}

TEST_F(MembershipPauseTest, PauseOverTheEndOfTheJob) {
  // Worker 1 stops just before the last steps and resumes after worker 0
  // finished (its barrier completed without worker 1, and it left).
  constexpr int kSteps = 120;
  StartWorker(0, kSteps, 10);
  StartWorker(1, kSteps, 10);
  ASSERT_TRUE(WaitForStep(1, kSteps - 30)) << workers_[1]->Log();
  ASSERT_TRUE(workers_[1]->Signal(SIGSTOP));
  std::optional<int> first = workers_[0]->Wait(absl::Seconds(30));
  ASSERT_TRUE(first.has_value()) << workers_[0]->Log();
  ASSERT_TRUE(workers_[1]->Signal(SIGCONT));
  ExpectBothFinish(kSteps);
  ExpectExactValues(kSteps);
}

TEST_F(MembershipPauseTest, PausedServerEvictsNobody) {
  constexpr int kSteps = 150;
  StartWorker(0, kSteps, 10);
  StartWorker(1, kSteps, 10);
  ASSERT_TRUE(WaitForStep(0, 30)) << workers_[0]->Log();
  // Server 1 is stopped for 3 heartbeat timeouts.
  const pid_t server = cluster_->server_pid(1);
  ASSERT_EQ(kill(server, SIGSTOP), 0);
  absl::SleepFor(absl::Milliseconds(3000));
  ASSERT_EQ(kill(server, SIGCONT), 0);
  ExpectBothFinish(kSteps);
  ExpectExactValues(kSteps);
  for (int w = 0; w < 2; ++w) {
    EXPECT_EQ(workers_[w]->Log().find("EVICTED"), std::string::npos)
        << workers_[w]->Log();
  }
  const std::string log1 = cluster_->ServerLog(1);
  EXPECT_NE(log1.find("this server made no progress for"), std::string::npos)
      << log1;
  for (int s = 0; s < 2; ++s) {
    const std::string log = cluster_->ServerLog(s);
    EXPECT_EQ(log.find("evicted worker"), std::string::npos) << log;
  }
}

}  // namespace
}  // namespace ps::testing
