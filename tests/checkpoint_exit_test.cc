// Honest exits around checkpoints, with real ps_server processes:
// - an unusable server.checkpoint_dir is refused before serving (exit 2, a
//   message naming the directory and the fix). Tests run as root, for whom
//   chmod does not make a directory read-only, so the unusable paths are a
//   regular file and a path under one (the chmod case runs only as non-root);
// - a final (SIGTERM) checkpoint that fails makes the server exit 1;
// - a corrupt checkpoint whose rename to .corrupt fails is logged as such.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/checkpoint_cluster_util.h"
#include "tests/cluster_harness.h"
#include "tests/test_process.h"

namespace ps::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string MakeDir(const std::string& name) {
  const std::string dir = absl::StrCat(TestTempDir(), "/", name);
  std::string cmd = absl::StrCat("rm -rf '", dir, "' && mkdir -p '", dir, "'");
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return dir;
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::trunc);
  out << content;
}

std::string ConfigBody(const std::string& checkpoint_dir) {
  return CheckpointedTableYaml(8, "async", checkpoint_dir);
}

// Runs ps_server (one shard) on `checkpoint_dir` and returns its exit status
// and output; it must exit by itself within 20 s.
struct Exit {
  int status = -1;
  std::string log;
};
Exit RunServerExpectingExit(const std::string& work,
                            const std::string& checkpoint_dir) {
  const std::string config = work + "/cluster.yaml";
  WriteFile(config, absl::StrCat("cluster:\n  servers: [\"127.0.0.1:1\"]\n  num_workers: 1\n",
                                 ConfigBody(checkpoint_dir)));
  absl::StatusOr<std::unique_ptr<TestProcess>> server = TestProcess::Start(
      {RunfilePath("server/ps_server"), "--config=" + config, "--index=0",
       "--listen=127.0.0.1:0"},
      work + "/server.log");
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return {};
  Exit exit;
  std::optional<int> status = (*server)->Wait(absl::Seconds(20));
  exit.log = (*server)->Log();
  EXPECT_TRUE(status.has_value()) << "still running: " << exit.log;
  if (status.has_value()) exit.status = *status;
  return exit;
}

TEST(CheckpointExitTest, CheckpointDirThatIsARegularFileIsRefusedAtStart) {
  const std::string work = MakeDir("dir_is_file");
  const std::string file = work + "/not_a_dir";
  WriteFile(file, "x");
  const Exit exit = RunServerExpectingExit(work, file);
  ASSERT_TRUE(WIFEXITED(exit.status)) << exit.log;
  EXPECT_EQ(WEXITSTATUS(exit.status), 2) << exit.log;
  EXPECT_THAT(exit.log, HasSubstr("checkpoint directory " + file +
                                  "/shard-0-of-1 is not usable"));
  EXPECT_THAT(exit.log, HasSubstr("fix: make server.checkpoint_dir a writable "
                                  "directory"));
  EXPECT_THAT(exit.log, Not(HasSubstr("serving on")));
}

TEST(CheckpointExitTest, CheckpointDirUnderARegularFileIsRefusedAtStart) {
  const std::string work = MakeDir("dir_under_file");
  WriteFile(work + "/file", "x");
  const std::string dir = work + "/file/checkpoints";
  const Exit exit = RunServerExpectingExit(work, dir);
  ASSERT_TRUE(WIFEXITED(exit.status)) << exit.log;
  EXPECT_EQ(WEXITSTATUS(exit.status), 2) << exit.log;
  EXPECT_THAT(exit.log, HasSubstr("checkpoint directory " + dir +
                                  "/shard-0-of-1 is not usable"));
  EXPECT_THAT(exit.log, HasSubstr("Not a directory"));
}

TEST(CheckpointExitTest, ReadOnlyCheckpointDirIsRefusedAtStart) {
  if (geteuid() == 0) {
    GTEST_SKIP() << "runs as root: chmod cannot make a directory read-only "
                    "for root (the regular-file cases above cover root)";
  }
  const std::string work = MakeDir("read_only");
  const std::string dir = work + "/ckpt";
  ASSERT_EQ(mkdir(dir.c_str(), 0555), 0);
  const Exit exit = RunServerExpectingExit(work, dir);
  chmod(dir.c_str(), 0755);
  ASSERT_TRUE(WIFEXITED(exit.status)) << exit.log;
  EXPECT_EQ(WEXITSTATUS(exit.status), 2) << exit.log;
  EXPECT_THAT(exit.log, HasSubstr("checkpoint directory " + dir));
}

TEST(CheckpointExitTest, FailedFinalCheckpointExitsNonZero) {
  const std::string dir = MakeDir("final_fails");
  ClusterSpec spec;
  spec.num_servers = 1;
  spec.num_workers = 1;
  spec.body_yaml = ConfigBody(dir);
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(spec);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  {
    absl::StatusOr<std::unique_ptr<Client>> client = (*cluster)->Connect(-1);
    ASSERT_TRUE(client.ok()) << client.status();
    const std::vector<float> ones(8, 1.0f);
    ASSERT_TRUE((*client)->PushDense(0, 0, ones).Wait().ok());
  }
  // The shard's directory becomes a regular file: the final checkpoint can
  // be neither created nor renamed into place.
  const std::string shard_dir = dir + "/shard-0-of-1";
  ASSERT_EQ(std::rename(shard_dir.c_str(), (dir + "/moved").c_str()), 0);
  WriteFile(shard_dir, "in the way");

  absl::StatusOr<int> status = (*cluster)->KillServer(0, SIGTERM);
  ASSERT_TRUE(status.ok()) << status.status();
  const std::string log = (*cluster)->ServerLog(0);
  ASSERT_TRUE(WIFEXITED(*status)) << log;
  EXPECT_EQ(WEXITSTATUS(*status), 1) << log;
  EXPECT_THAT(log, HasSubstr("final checkpoint failed"));
  EXPECT_THAT(log, Not(HasSubstr("shutdown complete")));
}

TEST(CheckpointExitTest, FailedQuarantineRenameIsLoggedAsFailed) {
  const std::string dir = MakeDir("quarantine_fails");
  const std::string shard_dir = dir + "/shard-0-of-1";
  ASSERT_EQ(mkdir(shard_dir.c_str(), 0755), 0);
  // A corrupt checkpoint whose ".corrupt" name is taken by a non-empty
  // directory: rename(2) fails (EISDIR) and the log must say so.
  const std::string bad = shard_dir + "/ckpt-000000000099.bin";
  WriteFile(bad, "not a checkpoint");
  ASSERT_EQ(mkdir((bad + ".corrupt").c_str(), 0755), 0);
  WriteFile(bad + ".corrupt/keep", "x");

  ClusterSpec spec;
  spec.num_servers = 1;
  spec.num_workers = 1;
  spec.body_yaml = ConfigBody(dir);
  // The shard's own files only (without the flag the server refuses to
  // start, since no checkpoint is valid; the rename is logged the same way).
  spec.extra_server_flags = {"--allow_inconsistent_restore"};
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(spec);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string log = (*cluster)->ServerLog(0);
  EXPECT_THAT(log, HasSubstr("renaming " + bad + " to " + bad +
                             ".corrupt failed: Is a directory"));
  EXPECT_THAT(log, HasSubstr("(left in place)"));
  EXPECT_THAT(log, Not(HasSubstr("renamed to " + bad + ".corrupt")));
}

}  // namespace
}  // namespace ps::testing
