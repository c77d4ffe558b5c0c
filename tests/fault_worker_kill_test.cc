// A worker process dies in a sync job: the others finish after the eviction
// timeout.
//
// 3 worker processes (tests/fault_worker) train a sync dense table for 40
// steps against 2 server processes, each pushing a gradient of 1 per element
// per step (SGD, lr 1). Worker 2 is SIGKILLed after 8 steps. The servers
// evict it once its heartbeats stop (heartbeat_timeout_ms 1000); workers 0
// and 1 then complete every step. Since a step is only applied once every
// live worker clocked past it, each step is the mean of the pushes of its
// members: every element must end at exactly -40.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"

namespace ps::testing {
namespace {

constexpr int kWorkers = 3;
constexpr int kSteps = 40;
constexpr int kKillAfter = 8;
constexpr int kSize = 101;

int ReadProgress(const std::string& path) {
  std::ifstream in(path);
  int steps = 0;
  if (!(in >> steps)) return 0;
  return steps;
}

// Waits for `pid` up to `timeout`; returns its wait status or -1.
int WaitFor(pid_t pid, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return -1;
}

TEST(FaultWorkerKillTest, SurvivorsFinishAfterEviction) {
  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = kWorkers;
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
  const char* tmp = getenv("TEST_TMPDIR");
  const std::string dir = tmp != nullptr ? tmp : "/tmp";
  const std::string binary = RunfilePath("tests/fault_worker");
  const std::string servers = absl::StrJoin((*cluster)->addresses(), ",");

  std::vector<pid_t> pids(kWorkers);
  std::vector<std::string> progress(kWorkers);
  for (int w = 0; w < kWorkers; ++w) {
    progress[w] = absl::StrCat(dir, "/progress_", w);
    unlink(progress[w].c_str());
    std::vector<std::string> args = {
        binary,
        "--config=" + (*cluster)->config_path(),
        "--servers=" + servers,
        absl::StrCat("--worker_id=", w),
        absl::StrCat("--steps=", kSteps),
        "--progress_file=" + progress[w]};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pids[w] = fork();
    ASSERT_GE(pids[w], 0);
    if (pids[w] == 0) {
      execv(argv[0], argv.data());
      _exit(127);
    }
  }

  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (ReadProgress(progress[2]) < kKillAfter && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  ASSERT_GE(ReadProgress(progress[2]), kKillAfter);
  ASSERT_EQ(kill(pids[2], SIGKILL), 0);
  const absl::Time killed = absl::Now();
  const int killed_status = WaitFor(pids[2], absl::Seconds(10));
  EXPECT_TRUE(WIFSIGNALED(killed_status));
  EXPECT_LT(ReadProgress(progress[2]), kSteps);

  for (int w = 0; w < 2; ++w) {
    const int status = WaitFor(pids[w], absl::Seconds(30));
    if (status == -1) kill(pids[w], SIGKILL);
    ASSERT_NE(status, -1) << "worker " << w << " did not finish";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "worker " << w << " status " << status;
    EXPECT_EQ(ReadProgress(progress[w]), kSteps);
  }
  const absl::Duration after_kill = absl::Now() - killed;
  std::printf("survivors finished %.0f ms after the kill\n",
              absl::ToDoubleMilliseconds(after_kill));
  // They could not finish before the dead worker was evicted.
  EXPECT_GE(after_kill, absl::Milliseconds(900));

  absl::StatusOr<std::unique_ptr<Client>> reader = (*cluster)->Connect(-1);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<float> w(kSize, 123.0f);
  ASSERT_TRUE((*reader)->PullDense(0, 0, absl::MakeSpan(w)).Wait().ok());
  for (int i = 0; i < kSize; ++i) {
    ASSERT_EQ(w[i], -1.0f * kSteps) << "element " << i;
  }
  absl::StatusOr<std::vector<ShardStats>> stats = (*reader)->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  for (const ShardStats& shard : *stats) {
    EXPECT_EQ(shard.tables[0].step, kSteps) << "shard " << shard.shard_index;
    ASSERT_EQ(shard.workers.size(), 3u);
    EXPECT_FALSE(shard.workers[2].live) << "shard " << shard.shard_index;
    EXPECT_LT(shard.workers[2].clock, kSteps);
  }
  const std::string log = (*cluster)->ServerLog(0);
  EXPECT_NE(log.find("evicted worker 2"), std::string::npos) << log;
}

}  // namespace
}  // namespace ps::testing
