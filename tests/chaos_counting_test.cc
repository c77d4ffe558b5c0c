// Chaos, async counting (issue 16 item 7a): a bounded, seeded random schedule
// of SIGSTOP/SIGCONT and SIGKILL (+ restart) of the two ps_server processes
// while 3 client threads push +1 (SGD, learning rate 1, gradient -1) to every
// value of a dense table, with exactly-once request ids.
//
// Semantics asserted, per shard (shard 0 owns values 0..3, shard 1 4..7):
// - a pause (SIGSTOP up to 0.8 s, then SIGCONT) loses nothing and applies
//   nothing twice: the clients' retries carry the same ids;
// - each round ends with a cluster checkpoint (Client::Checkpoint, one id);
// - a SIGKILL loses, by design, what the killed shard applied after the last
//   checkpoint: the test pushes a "tail" after the checkpoint, kills, and
//   asserts the killed shard is back exactly at its checkpointed count while
//   the other shard keeps the tail (a lone restart restores the newest
//   complete set, server/checkpoint_set.h); a "cluster crash" (both killed)
//   brings both back to the checkpointed count.
// So at every point the expected count per shard is known exactly.
//
// The schedule is drawn from a seed printed at the start; PS_CHAOS_SEED
// replays one. Workers as separate processes and network cuts are not part
// of this test (see the report of issue 16).
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/chaos_seed.h"
#include "tests/cluster_harness.h"
#include "tests/test_process.h"

namespace ps::testing {
namespace {

constexpr int kSize = 8;
constexpr int kThreads = 3;
constexpr int kPushesPerThread = 40;
constexpr int kTail = 5;
constexpr int kRounds = 16;

ClusterSpec Spec(const std::string& dir) {
  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = 1;
  spec.body_yaml = absl::StrCat(R"(
tables:
  - name: w
    kind: dense
    size: 8
    consistency: async
    optimizer: {type: sgd, learning_rate: 1.0}
server:
  checkpoint_dir: ")", dir, R"("
client:
  rpc_timeout_ms: 20000
  reconnect_initial_backoff_ms: 20
  reconnect_max_backoff_ms: 200
  max_reconnect_attempts: 1000
)");
  return spec;
}

// `threads` clients each push +1 to every value `pushes` times; every push
// must succeed (pauses are retried through).
void PushAll(LocalCluster& cluster, int threads, int pushes) {
  std::vector<std::thread> workers;
  std::vector<absl::Status> results(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      absl::StatusOr<std::unique_ptr<Client>> client = cluster.Connect(-1);
      if (!client.ok()) {
        results[t] = client.status();
        return;
      }
      const std::vector<float> grad(kSize, -1.0f);
      for (int i = 0; i < pushes && results[t].ok(); ++i) {
        results[t] = (*client)->PushDense(0, 0, grad).Wait();
      }
    });
  }
  for (std::thread& w : workers) w.join();
  for (const absl::Status& s : results) ASSERT_TRUE(s.ok()) << s;
}

std::vector<float> PullAll(LocalCluster& cluster) {
  absl::StatusOr<std::unique_ptr<Client>> client = cluster.Connect(-1);
  EXPECT_TRUE(client.ok()) << client.status();
  std::vector<float> values(kSize, -1.0f);
  if (!client.ok()) return values;
  absl::Status s = (*client)->PullDense(0, 0, absl::MakeSpan(values)).Wait();
  EXPECT_TRUE(s.ok()) << s;
  return values;
}

void ExpectCounts(LocalCluster& cluster, const int64_t expected[2],
                  const std::string& when) {
  const std::vector<float> values = PullAll(cluster);
  for (int k = 0; k < kSize; ++k) {
    EXPECT_EQ(values[k], static_cast<float>(expected[k < 4 ? 0 : 1]))
        << "value " << k << " " << when;
  }
}

TEST(ChaosCountingTest, SeededKillsAndPausesKeepExactCounts) {
  const uint32_t seed = ChaosSeed();
  std::mt19937 rng(seed);
  const std::string dir = TestTempDir() + "/chaos_counting";
  std::filesystem::remove_all(dir);
  absl::StatusOr<std::unique_ptr<LocalCluster>> started =
      LocalCluster::Start(Spec(dir));
  ASSERT_TRUE(started.ok()) << started.status();
  LocalCluster& cluster = **started;

  int64_t expected[2] = {0, 0};  // per shard, exactly
  int64_t checkpointed = 0;      // both shards' count at the last checkpoint
  for (int round = 0; round < kRounds; ++round) {
    // Pushes, with one server paused for a while somewhere in the middle.
    const bool pause = rng() % 2 == 0;
    const int paused = static_cast<int>(rng() % 2);
    const int pause_ms = 200 + static_cast<int>(rng() % 600);
    const int pause_after_ms = static_cast<int>(rng() % 100);
    std::thread pauser;
    if (pause) {
      pauser = std::thread([&, paused, pause_ms, pause_after_ms] {
        absl::SleepFor(absl::Milliseconds(pause_after_ms));
        kill(cluster.server_pid(paused), SIGSTOP);
        absl::SleepFor(absl::Milliseconds(pause_ms));
        kill(cluster.server_pid(paused), SIGCONT);
      });
    }
    PushAll(cluster, kThreads, kPushesPerThread);
    if (pauser.joinable()) pauser.join();
    expected[0] += kThreads * kPushesPerThread;
    expected[1] += kThreads * kPushesPerThread;
    ExpectCounts(cluster, expected,
                 absl::StrCat("after round ", round, " (pause ", pause,
                              " of server ", paused, " for ", pause_ms, " ms)"));

    absl::SleepFor(absl::Milliseconds(3));  // checkpoint ids are ms
    absl::StatusOr<std::unique_ptr<Client>> client = cluster.Connect(-1);
    ASSERT_TRUE(client.ok()) << client.status();
    ASSERT_TRUE((*client)->Checkpoint().ok());
    ASSERT_EQ(expected[0], expected[1]);
    checkpointed = expected[0];

    // Then maybe a crash: a tail of pushes after the checkpoint, and a kill.
    const int event = static_cast<int>(rng() % 3);  // 0 none, 1 one, 2 both
    if (event == 0) continue;
    PushAll(cluster, 1, kTail);
    expected[0] += kTail;
    expected[1] += kTail;
    const int victim = static_cast<int>(rng() % 2);
    for (int i = 0; i < 2; ++i) {
      if (event == 1 && i != victim) continue;
      ASSERT_TRUE(cluster.KillServer(i, SIGKILL).ok());
      expected[i] = checkpointed;  // lost by design: the tail
    }
    for (int i = 0; i < 2; ++i) {
      if (event == 1 && i != victim) continue;
      ASSERT_TRUE(cluster.RestartServer(i).ok()) << cluster.ServerLog(i);
    }
    ExpectCounts(cluster, expected,
                 absl::StrCat("after round ", round, "'s ",
                              event == 1 ? absl::StrCat("kill of server ",
                                                        victim)
                                         : "kill of both servers"));
    if (expected[0] != expected[1]) {
      // Level the shards again (only the lone survivor has the tail): push to
      // the restored shard's values only, so every later round starts even.
      const int behind = expected[0] < expected[1] ? 0 : 1;
      absl::StatusOr<std::unique_ptr<Client>> leveler = cluster.Connect(-1);
      ASSERT_TRUE(leveler.ok()) << leveler.status();
      const std::vector<float> grad(4, -1.0f);
      for (int i = 0; i < kTail; ++i) {
        ASSERT_TRUE((*leveler)->PushDense(0, behind * 4, grad).Wait().ok());
      }
      expected[behind] += kTail;
      ExpectCounts(cluster, expected, "after levelling");
    }
  }
  std::printf("chaos seed %u: %d rounds, final count %lld per value\n", seed,
              kRounds, static_cast<long long>(expected[0]));
}

}  // namespace
}  // namespace ps::testing
