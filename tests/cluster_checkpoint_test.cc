// Consistent cluster checkpoints (server/checkpoint_set.h), with two real
// ps_server processes sharing one checkpoint directory:
// - one shard's newest part truncated: both shards restore the previous
//   common id (exact values), and the newer parts are set aside;
// - one shard's only part deleted: every shard refuses to start, naming the
//   shard and the id; --allow_inconsistent_restore serves (mixed, exactly);
// - SIGTERM of the cluster writes one id on both shards, restored whole;
// - periodic checkpoints share an id (a multiple of the interval, in ms).
//
// The table is dense, 8 values over 2 shards, SGD with learning rate 1, so a
// push of -1 adds exactly 1 to every value.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"
#include "tests/test_process.h"

namespace ps::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kSize = 8;

std::string FreshDir(const std::string& name) {
  const std::string dir = absl::StrCat(TestTempDir(), "/", name);
  std::filesystem::remove_all(dir);
  return dir;
}

ClusterSpec Spec(const std::string& dir, int interval_s) {
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
  checkpoint_dir: ")", dir, "\"\n",
                                interval_s > 0
                                    ? absl::StrCat("  checkpoint_interval_s: ",
                                                   interval_s, "\n")
                                    : "");
  return spec;
}

// Adds `delta` to every value (SGD, learning rate 1: w -= -delta).
void AddToAll(LocalCluster& cluster, float delta) {
  absl::StatusOr<std::unique_ptr<Client>> client = cluster.Connect(-1);
  ASSERT_TRUE(client.ok()) << client.status();
  const std::vector<float> grad(kSize, -delta);
  ASSERT_TRUE((*client)->PushDense(0, 0, grad).Wait().ok());
}

std::vector<float> PullAll(LocalCluster& cluster) {
  absl::StatusOr<std::unique_ptr<Client>> client = cluster.Connect(-1);
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return {};
  std::vector<float> values(kSize, -1.0f);
  absl::Status s = (*client)->PullDense(0, 0, absl::MakeSpan(values)).Wait();
  EXPECT_TRUE(s.ok()) << s;
  return values;
}

// A coordinated checkpoint (Client::Checkpoint: one id for both shards);
// returns that id, read back from the two paths.
uint64_t Checkpoint(LocalCluster& cluster) {
  absl::SleepFor(absl::Milliseconds(3));  // ids are ms: never the same twice
  absl::StatusOr<std::unique_ptr<Client>> client = cluster.Connect(-1);
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return 0;
  absl::StatusOr<std::vector<std::string>> paths = (*client)->Checkpoint();
  EXPECT_TRUE(paths.ok()) << paths.status();
  if (!paths.ok() || paths->size() != 2) return 0;
  std::vector<uint64_t> ids;
  for (const std::string& path : *paths) {
    const size_t at = path.rfind("/ckpt-") + 6;
    uint64_t id = 0;
    EXPECT_TRUE(absl::SimpleAtoi(path.substr(at, path.size() - at - 4), &id))
        << path;
    ids.push_back(id);
  }
  EXPECT_EQ(ids[0], ids[1]);
  return ids[0];
}

std::string PartPath(const std::string& dir, int shard, uint64_t id) {
  return absl::StrCat(dir, "/shard-", shard, "-of-2/ckpt-",
                      absl::StrFormat("%012d", id), ".bin");
}

void KillBoth(LocalCluster& cluster, int signal) {
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(cluster.KillServer(i, signal).ok());
}

TEST(ClusterCheckpointTest, TruncatedNewestPartMakesAllShardsFallBack) {
  const std::string dir = FreshDir("truncated");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(Spec(dir, 0));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  LocalCluster& c = **cluster;
  AddToAll(c, 1);
  const uint64_t older = Checkpoint(c);
  AddToAll(c, 1);
  const uint64_t newer = Checkpoint(c);
  AddToAll(c, 1);
  ASSERT_GT(newer, older);
  KillBoth(c, SIGKILL);  // no final checkpoint

  const std::string damaged = PartPath(dir, 1, newer);
  ASSERT_TRUE(std::filesystem::exists(damaged)) << damaged;
  std::filesystem::resize_file(damaged,
                               std::filesystem::file_size(damaged) / 2);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.RestartServer(i).ok()) << c.ServerLog(i);
  }
  // Both shards are back at `older`: 1 everywhere, never 2 next to 1.
  EXPECT_THAT(PullAll(c), ElementsAre(1, 1, 1, 1, 1, 1, 1, 1));
  for (int i = 0; i < 2; ++i) {
    const std::string log = c.ServerLog(i);
    EXPECT_THAT(log, HasSubstr(absl::StrCat("restored cluster checkpoint ",
                                            older, " (complete on all 2")))
        << log;
    EXPECT_THAT(log, HasSubstr(absl::StrCat("cluster checkpoint ", newer,
                                            " is not complete: ")));
  }
  EXPECT_THAT(c.ServerLog(0),
              HasSubstr("shard 1's part is unusable: checkpoint " + damaged +
                        ": truncated"));
  // Shard 0's newer part pairs with nothing: set aside; shard 1's damaged
  // one likewise.
  EXPECT_TRUE(std::filesystem::exists(PartPath(dir, 0, newer) + ".unmatched"));
  EXPECT_TRUE(std::filesystem::exists(damaged + ".corrupt"));
}

TEST(ClusterCheckpointTest, MissingPartRefusesToServeUnlessOverridden) {
  const std::string dir = FreshDir("missing");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(Spec(dir, 0));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  LocalCluster& c = **cluster;
  AddToAll(c, 1);
  const uint64_t id = Checkpoint(c);
  KillBoth(c, SIGKILL);
  ASSERT_TRUE(std::filesystem::remove(PartPath(dir, 1, id)));

  for (int i = 0; i < 2; ++i) {
    absl::Status started = c.RestartServer(i);
    EXPECT_FALSE(started.ok()) << "shard " << i << " served";
    const std::string log = c.ServerLog(i);
    EXPECT_THAT(log, HasSubstr(absl::StrCat(
                         "the newest, ", id, ": shard 1 has no part of it (no ",
                         dir, "/shard-1-of-2/ckpt-")))
        << log;
    EXPECT_THAT(log, HasSubstr("--allow_inconsistent_restore"));
  }

  c.set_extra_server_flags({"--allow_inconsistent_restore"});
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.RestartServer(i).ok()) << c.ServerLog(i);
  }
  // Shard 0 restored its part, shard 1 has none: the mix the flag allows.
  EXPECT_THAT(PullAll(c), ElementsAre(1, 1, 1, 1, 0, 0, 0, 0));
}

TEST(ClusterCheckpointTest, SigtermCheckpointIsOneIdOnEveryShard) {
  const std::string dir = FreshDir("sigterm");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(Spec(dir, 0));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  LocalCluster& c = **cluster;
  AddToAll(c, 1);
  const uint64_t id = Checkpoint(c);
  AddToAll(c, 2);
  KillBoth(c, SIGTERM);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(std::filesystem::exists(PartPath(dir, i, id + 1))) << i;
  }
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.RestartServer(i).ok()) << c.ServerLog(i);
    EXPECT_THAT(c.ServerLog(i),
                HasSubstr(absl::StrCat("restored cluster checkpoint ", id + 1)));
  }
  EXPECT_THAT(PullAll(c), ElementsAre(3, 3, 3, 3, 3, 3, 3, 3));
}

TEST(ClusterCheckpointTest, PeriodicCheckpointsShareAnIdAtTheIntervalBoundary) {
  const std::string dir = FreshDir("periodic");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(Spec(dir, 1));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  LocalCluster& c = **cluster;
  AddToAll(c, 1);
  // Wait for a boundary after the push that both shards wrote.
  const uint64_t after = static_cast<uint64_t>(absl::ToUnixMillis(absl::Now()));
  uint64_t common = 0;
  for (int tries = 0; tries < 100 && common == 0; ++tries) {
    absl::SleepFor(absl::Milliseconds(100));
    const uint64_t boundary = (after / 1000 + 1) * 1000;
    if (std::filesystem::exists(PartPath(dir, 0, boundary)) &&
        std::filesystem::exists(PartPath(dir, 1, boundary))) {
      common = boundary;
    }
  }
  ASSERT_NE(common, 0u) << c.ServerLog(0) << c.ServerLog(1);
  KillBoth(c, SIGKILL);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.RestartServer(i).ok()) << c.ServerLog(i);
  }
  EXPECT_THAT(PullAll(c), ElementsAre(1, 1, 1, 1, 1, 1, 1, 1));
  EXPECT_THAT(c.ServerLog(0), HasSubstr("restored cluster checkpoint "));
}

}  // namespace
}  // namespace ps::testing
