// A second job against servers that are still running (as with
// `ps_launch --servers_only`, or Kubernetes servers that outlive a worker
// Job), with real processes (tests/membership_worker):
//  - while job A has live workers, job B's workers wait (Connect retries the
//    refusal) and, when A is over, start clean: a new generation at A's last
//    clock, their own first step 0, never a step with A's workers;
//  - a job that cannot wait that long is refused with a message naming the
//    running job;
//  - without job ids, a rerun after a clean run (every worker left) starts
//    clean too.
// Job A's worker 1 is SIGKILLed mid-run (no Leave): A ends once worker 0
// finished and worker 1 was evicted. Every sync step subtracts exactly 1
// (SGD, learning rate 1, every push 1.0), so the table ends at exactly
// -(steps of A + steps of B).
#include <signal.h>
#include <sys/wait.h>

#include <map>
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

class MembershipJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
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
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
        LocalCluster::Start(spec);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
  }

  // Starts worker `w` of job `job`; its progress file is returned.
  std::unique_ptr<TestProcess> StartWorker(const std::string& job, int w,
                                           int steps, int delay_ms,
                                           int rpc_timeout_ms = 0) {
    const std::string name = absl::StrCat(job.empty() ? "nojob" : job, "_", w,
                                          "_", ++started_);
    const std::string log = absl::StrCat(TestTempDir(), "/", name, ".log");
    unlink(log.c_str());
    progress_[name] = absl::StrCat(TestTempDir(), "/", name, ".progress");
    // Names repeat across the tests of this binary (one temp dir): a stale
    // file of an earlier test would report progress this worker never made.
    unlink(progress_[name].c_str());
    absl::StatusOr<std::unique_ptr<TestProcess>> p = TestProcess::Start(
        {RunfilePath("tests/membership_worker"),
         "--config=" + cluster_->config_path(),
         "--servers=" + absl::StrJoin(cluster_->addresses(), ","),
         "--job_id=" + job, absl::StrCat("--worker_id=", w),
         absl::StrCat("--steps=", steps),
         absl::StrCat("--step_delay_ms=", delay_ms),
         absl::StrCat("--rpc_timeout_ms=", rpc_timeout_ms),
         "--progress_file=" + progress_[name]},
        log);
    EXPECT_TRUE(p.ok()) << p.status();
    last_progress_ = progress_[name];
    return p.ok() ? *std::move(p) : nullptr;
  }

  static void ExpectSuccess(TestProcess& p, const std::string& what) {
    std::optional<int> status = p.Wait(absl::Seconds(60));
    ASSERT_TRUE(status.has_value()) << what << " hangs:\n" << p.Log();
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << what << " status " << *status << ":\n" << p.Log();
  }

  std::vector<float> Values() {
    absl::StatusOr<std::unique_ptr<Client>> reader = cluster_->Connect(-1);
    EXPECT_TRUE(reader.ok()) << reader.status();
    std::vector<float> w(kSize, 123.0f);
    if (reader.ok()) {
      EXPECT_TRUE((*reader)->PullDense(0, 0, absl::MakeSpan(w)).Wait().ok());
    }
    return w;
  }

  std::vector<ShardStats> Stats() {
    absl::StatusOr<std::unique_ptr<Client>> reader = cluster_->Connect(-1);
    EXPECT_TRUE(reader.ok()) << reader.status();
    if (!reader.ok()) return {};
    absl::StatusOr<std::vector<ShardStats>> stats = (*reader)->GetStats();
    EXPECT_TRUE(stats.ok()) << stats.status();
    return stats.ok() ? *stats : std::vector<ShardStats>();
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::map<std::string, std::string> progress_;
  std::string last_progress_;
  int started_ = 0;
};

TEST_F(MembershipJobTest, SecondJobWaitsForTheRunningOneThenStartsClean) {
  constexpr int kStepsA = 80, kStepsB = 40;
  std::unique_ptr<TestProcess> a0 = StartWorker("job-a", 0, kStepsA, 15);
  std::unique_ptr<TestProcess> a1 = StartWorker("job-a", 1, kStepsA, 15);
  const std::string a1_progress = last_progress_;
  ASSERT_NE(a1, nullptr);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (ReadProgress(a1_progress) < 20 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  // Job A's worker 1 crashes: it never leaves.
  ASSERT_TRUE(a1->Signal(SIGKILL));
  // Job B starts while job A's worker 0 still trains.
  std::unique_ptr<TestProcess> b0 = StartWorker("job-b", 0, kStepsB, 0);
  std::unique_ptr<TestProcess> b1 = StartWorker("job-b", 1, kStepsB, 0);
  ExpectSuccess(*a0, "job A worker 0");
  ExpectSuccess(*b0, "job B worker 0");
  ExpectSuccess(*b1, "job B worker 1");
  // B waited, and began clean at A's last clock: its first step is 0.
  for (TestProcess* b : {b0.get(), b1.get()}) {
    const std::string log = b->Log();
    EXPECT_NE(log.find("cannot join: this shard serves job 'job-a'"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find(absl::StrCat("job=job-b first_step=0 job_start_clock=",
                                    kStepsA)),
              std::string::npos)
        << log;
  }
  for (float v : Values()) ASSERT_EQ(v, -1.0f * (kStepsA + kStepsB));
  for (const ShardStats& shard : Stats()) {
    EXPECT_EQ(shard.job_id, "job-b");
    EXPECT_EQ(shard.job_generation, 2u);
    EXPECT_EQ(shard.job_start_clock, kStepsA);
    EXPECT_EQ(shard.tables[0].step, kStepsA + kStepsB);
  }
  const std::string log = cluster_->ServerLog(0);
  EXPECT_NE(log.find("job 'job-b' begins (generation 2) at clock 80"),
            std::string::npos)
      << log;
}

TEST_F(MembershipJobTest, JobThatCannotWaitIsRefusedNamingTheRunningOne) {
  std::unique_ptr<TestProcess> a0 = StartWorker("job-a", 0, 400, 10);
  std::unique_ptr<TestProcess> a1 = StartWorker("job-a", 1, 400, 10);
  const std::string a1_progress = last_progress_;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (ReadProgress(a1_progress) < 5 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  std::unique_ptr<TestProcess> b0 =
      StartWorker("job-b", 0, 10, 0, /*rpc_timeout_ms=*/1500);
  std::optional<int> status = b0->Wait(absl::Seconds(30));
  ASSERT_TRUE(status.has_value()) << b0->Log();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 1) << b0->Log();
  EXPECT_NE(b0->Log().find(
                "FAILED_PRECONDITION: RegisterWorker on server 127.0.0.1:"),
            std::string::npos)
      << b0->Log();
  EXPECT_NE(b0->Log().find("worker 0 of job 'job-b' cannot join: this shard "
                           "serves job 'job-a' (generation 1), whose "
                           "worker(s) 0, 1 are live"),
            std::string::npos)
      << b0->Log();
  // Job A never noticed.
  ASSERT_TRUE(a0->Signal(SIGKILL));
  ASSERT_TRUE(a1->Signal(SIGKILL));
  for (const ShardStats& shard : Stats()) EXPECT_EQ(shard.job_id, "job-a");
}

TEST_F(MembershipJobTest, RerunWithoutJobIdsAfterACleanRunStartsClean) {
  constexpr int kSteps = 30;
  for (int run = 1; run <= 2; ++run) {
    std::unique_ptr<TestProcess> w0 = StartWorker("", 0, kSteps, 0);
    std::unique_ptr<TestProcess> w1 = StartWorker("", 1, kSteps, 0);
    ExpectSuccess(*w0, absl::StrCat("run ", run, " worker 0"));
    ExpectSuccess(*w1, absl::StrCat("run ", run, " worker 1"));
    for (TestProcess* w : {w0.get(), w1.get()}) {
      EXPECT_NE(w->Log().find(absl::StrCat("first_step=0 job_start_clock=",
                                           (run - 1) * kSteps)),
                std::string::npos)
          << w->Log();
    }
    for (float v : Values()) ASSERT_EQ(v, -1.0f * run * kSteps);
    for (const ShardStats& shard : Stats()) {
      EXPECT_EQ(shard.job_generation, static_cast<uint64_t>(run));
    }
  }
}

}  // namespace
}  // namespace ps::testing
