#include "tests/checkpoint_cluster_util.h"

#include <signal.h>

#include <filesystem>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/checkpoint_file.h"
#include "tests/test_process.h"

namespace ps::testing {

std::string CheckpointedTableYaml(uint64_t size, absl::string_view consistency,
                                  absl::string_view dir,
                                  absl::string_view more_server_lines) {
  return absl::StrCat(R"(
tables:
  - name: w
    kind: dense
    size: )", size, R"(
    consistency: )", consistency, R"(
    optimizer: {type: sgd, learning_rate: 1.0}
server:
  checkpoint_dir: ")", dir, "\"\n", more_server_lines);
}

std::string FreshTestDir(const std::string& name) {
  const std::string dir = absl::StrCat(TestTempDir(), "/", name);
  std::filesystem::remove_all(dir);
  return dir;
}

void AddToAll(LocalCluster& cluster, uint64_t size, float delta) {
  absl::StatusOr<std::unique_ptr<Client>> client = cluster.Connect(-1);
  ASSERT_TRUE(client.ok()) << client.status();
  const std::vector<float> grad(size, -delta);
  ASSERT_TRUE((*client)->PushDense(0, 0, grad).Wait().ok());
}

std::vector<float> PullAll(LocalCluster& cluster, uint64_t size) {
  absl::StatusOr<std::unique_ptr<Client>> client = cluster.Connect(-1);
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return {};
  std::vector<float> values(size, -1.0f);
  absl::Status s = (*client)->PullDense(0, 0, absl::MakeSpan(values)).Wait();
  EXPECT_TRUE(s.ok()) << s;
  return values;
}

uint64_t CoordinatedCheckpoint(LocalCluster& cluster) {
  absl::SleepFor(absl::Milliseconds(3));  // ids are ms: never the same twice
  absl::StatusOr<std::unique_ptr<Client>> client = cluster.Connect(-1);
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return 0;
  absl::StatusOr<std::vector<std::string>> paths = (*client)->Checkpoint();
  EXPECT_TRUE(paths.ok()) << paths.status();
  if (!paths.ok() || paths->size() != cluster.addresses().size()) return 0;
  std::vector<uint64_t> ids;
  for (const std::string& path : *paths) {
    const size_t at = path.rfind("/ckpt-") + 6;
    uint64_t id = 0;
    EXPECT_TRUE(absl::SimpleAtoi(path.substr(at, path.size() - at - 4), &id))
        << path;
    ids.push_back(id);
  }
  EXPECT_THAT(ids, ::testing::Each(ids[0]));
  return ids[0];
}

std::string CheckpointPartPath(const std::string& root, int shard,
                               int num_shards, uint64_t id) {
  return absl::StrCat(ShardCheckpointDir(root, static_cast<uint32_t>(shard),
                                         static_cast<uint32_t>(num_shards)),
                      "/", CheckpointFileName(id));
}

void KillAll(LocalCluster& cluster, int signal) {
  for (size_t i = 0; i < cluster.addresses().size(); ++i) {
    ASSERT_TRUE(cluster.KillServer(static_cast<int>(i), signal).ok());
  }
}

void CheckpointTwiceThenKill(LocalCluster& cluster, uint64_t size,
                             uint64_t* older, uint64_t* newer) {
  AddToAll(cluster, size, 1);
  *older = CoordinatedCheckpoint(cluster);
  AddToAll(cluster, size, 1);
  *newer = CoordinatedCheckpoint(cluster);
  AddToAll(cluster, size, 1);
  ASSERT_GT(*newer, *older);
  KillAll(cluster, SIGKILL);  // no final checkpoint
}

}  // namespace ps::testing
