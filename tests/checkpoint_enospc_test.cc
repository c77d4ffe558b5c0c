// A full disk under the final checkpoint (issue 16 "honest exits"), with a
// real ps_server on a real 6 MiB tmpfs: the server starts (its directory
// probe fits), a coordinated checkpoint of its 4 MiB table fits, the final
// (SIGTERM) checkpoint does not (ENOSPC). Asserted: the server exits 1
// naming the failure, leaves no partial file behind and keeps the older
// checkpoint, which a restart on the same full disk restores exactly.
//
// The tmpfs is mounted in a mount namespace private to this test process
// (unshare(CLONE_NEWNS) before any thread exists), so it vanishes with the
// process whatever happens. Skips with the reason where mounting is not
// permitted (not root, or no CAP_SYS_ADMIN in a container).
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/checkpoint_cluster_util.h"
#include "tests/cluster_harness.h"
#include "tests/test_process.h"

namespace ps::testing {
namespace {

using ::testing::Each;
using ::testing::HasSubstr;

constexpr uint64_t kSize = 1 << 20;  // 4 MiB of float32 values

// Mounts a tmpfs of `bytes` at a fresh directory; "" with the reason in
// `why` when this process may not.
std::string MountSmallTmpfs(uint64_t bytes, std::string* why) {
  if (unshare(CLONE_NEWNS) != 0) {
    *why = absl::StrCat("unshare(CLONE_NEWNS): ", std::strerror(errno));
    return "";
  }
  // Mounts made here must not propagate back to the parent namespace.
  if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    *why = absl::StrCat("making / private: ", std::strerror(errno));
    return "";
  }
  const std::string dir = absl::StrCat(TestTempDir(), "/small_disk");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string options = absl::StrCat("size=", bytes);
  if (mount("tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) != 0) {
    *why = absl::StrCat("mount tmpfs: ", std::strerror(errno));
    return "";
  }
  return dir;
}

std::vector<std::string> FilesUnder(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) {
      names.push_back(entry.path().lexically_relative(dir).string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CheckpointEnospcTest, FullDiskUnderTheFinalCheckpointExitsOneAndKeepsTheOlder) {
  std::string why;
  const std::string dir = MountSmallTmpfs(6 << 20, &why);
  if (dir.empty()) GTEST_SKIP() << why;

  ClusterSpec spec;
  spec.num_servers = 1;
  spec.num_workers = 1;
  spec.body_yaml = CheckpointedTableYaml(kSize, "async", dir);
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(spec);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  LocalCluster& c = **cluster;
  {
    absl::StatusOr<std::unique_ptr<Client>> client = c.Connect(-1);
    ASSERT_TRUE(client.ok()) << client.status();
    const std::vector<float> minus_one(kSize, -1.0f);
    ASSERT_TRUE((*client)->PushDense(0, 0, minus_one).Wait().ok());
    absl::StatusOr<std::vector<std::string>> kept = (*client)->Checkpoint();
    ASSERT_TRUE(kept.ok()) << kept.status();  // 4 MiB of 6 fit
    ASSERT_TRUE((*client)->PushDense(0, 0, minus_one).Wait().ok());
  }
  const std::vector<std::string> before = FilesUnder(dir);

  absl::StatusOr<int> status = c.KillServer(0, SIGTERM);
  ASSERT_TRUE(status.ok()) << status.status();
  const std::string log = c.ServerLog(0);
  ASSERT_TRUE(WIFEXITED(*status)) << log;
  EXPECT_EQ(WEXITSTATUS(*status), 1) << log;
  EXPECT_THAT(log, HasSubstr("final checkpoint failed"));
  EXPECT_THAT(log, HasSubstr("No space left on device"));
  // No partial part is left to be mistaken for a checkpoint, and the older
  // one is untouched.
  EXPECT_EQ(FilesUnder(dir), before);

  ASSERT_TRUE(c.RestartServer(0).ok()) << c.ServerLog(0);
  absl::StatusOr<std::unique_ptr<Client>> client = c.Connect(-1);
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<float> values(kSize);
  ASSERT_TRUE((*client)->PullDense(0, 0, absl::MakeSpan(values)).Wait().ok());
  EXPECT_THAT(values, Each(1.0f));  // the first push, in the kept checkpoint
}

}  // namespace
}  // namespace ps::testing
