// A sync ps_worker SIGKILLed mid-job under ps_launch's supervision: the
// launcher restarts it with its index, the new process replaces the dead
// one on the servers and continues at the job's current step (its batch
// schedule is a function of the step), so both workers end at the same last
// step and the job finishes with its RESULT line, instead of the restarted
// worker re-running its schedule from step 0 into a final-barrier deadlock.
// Real ps_launch, ps_server and ps_worker processes on a small libsvm data
// set (deploy/launcher/ps_launch_harness.h).
#include <signal.h>

#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "deploy/launcher/ps_launch_harness.h"
#include "gtest/gtest.h"

namespace ps::launcher::testing {
namespace {

TEST(MembershipLaunchTest, RestartedSyncWorkerContinuesAtTheJobsStep) {
  const std::string dir = TempDir();
  // 8000 examples: 200 steps per epoch and worker; 15 epochs = 3000 steps.
  BackgroundLaunch launch({"--progress=plain",
                           "--config=" + WriteConfig(dir, 8000),
                           "--out_dir=" + dir + "/out", "--epochs=15",
                           "--worker_flags=--log_every_steps=10",
                           "--stall_timeout_s=20", "--stall_fail_s=60"});
  ASSERT_TRUE(launch.WaitForLine("[worker 1] PROGRESS worker=1 epoch=2", 120))
      << launch.Joined();
  const pid_t victim = launch.ChildWith({"ps_worker", "--index=1"});
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  EXPECT_EQ(launch.Finish(), 0) << launch.Joined();
  const std::vector<std::string>& lines = launch.lines();
  EXPECT_EQ(CountContaining(lines, std::regex(absl::StrCat(
                             "\\[launch\\] worker 1 \\(pid ", victim,
                             "\\) was killed by signal 9"))),
            1)
      << launch.Joined();
  EXPECT_EQ(CountContaining(lines, std::regex("\\[worker 1\\] START worker=1 ")), 2);
  // The restarted worker said where it continued: past step 200.
  std::smatch m;
  int continued_at = -1;
  for (const std::string& l : lines) {
    if (std::regex_search(l, m,
                          std::regex("worker 1: the job is at step ([0-9]+) "
                                     "of 3000: continuing there"))) {
      continued_at = std::stoi(m[1]);
    }
  }
  EXPECT_GT(continued_at, 200) << launch.Joined();
  for (int w = 0; w < 2; ++w) {
    EXPECT_EQ(CountContaining(lines, std::regex(absl::StrCat(
                               "\\[worker ", w, "\\] DONE worker=", w,
                               " steps=3000 "))),
              1)
        << launch.Joined();
  }
  EXPECT_EQ(CountContaining(lines, std::regex("\\[launch\\] stall")), 0)
      << launch.Joined();
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back().rfind("RESULT model=softmax mode=sync servers=2 "
                               "workers=2 epochs=15 ",
                               0),
            0u)
      << launch.Joined();
  const std::string result = lines.back();
  EXPECT_GT(TestAccuracy(result), 0.8)
      << result;
}

}  // namespace
}  // namespace ps::launcher::testing
