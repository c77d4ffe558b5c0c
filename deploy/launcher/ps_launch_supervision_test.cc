// ps_launch supervises its cluster as Kubernetes does the manifests', with
// real processes: a server or worker SIGKILLed from outside (not the
// launcher's own --kill_server) is restarted and the job finishes; a
// process that keeps crashing spends its restart budget and the job fails
// naming it and its exits; a worker that makes no progress is named with
// the cluster's status, and fails the job after --stall_fail_s.
#include <signal.h>
#include <unistd.h>

#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "deploy/launcher/ps_launch_harness.h"
#include "gtest/gtest.h"

namespace ps::launcher::testing {
namespace {

// 8000 examples: 200 steps per epoch and worker, long enough to kill
// something mid-training.
std::vector<std::string> LongJob(const std::string& dir, int epochs) {
  return {"--progress=plain", "--config=" + WriteConfig(dir, 8000),
          "--out_dir=" + dir + "/out", absl::StrCat("--epochs=", epochs),
          "--worker_flags=--log_every_steps=10"};
}

TEST(PsLaunchSupervisionTest, SigkilledServerIsRestartedOnItsPortAndRestores) {
  const std::string dir = TempDir();
  BackgroundLaunch launch(LongJob(dir, 40));
  std::optional<std::string> ready = launch.WaitForLine("servers ready at", 60);
  ASSERT_TRUE(ready.has_value()) << launch.Joined();
  const std::string port1 = ready->substr(ready->rfind(":") + 1,
                                          ready->find(" after") -
                                              ready->rfind(":") - 1);
  // Kill once shard 1 has written a checkpoint of the training.
  ASSERT_TRUE(launch.WaitForLine("[worker 1] PROGRESS", 60)) << launch.Joined();
  ASSERT_TRUE(launch.WaitForLine("shard-1-of-2/ckpt-", 30)) << launch.Joined();
  const pid_t victim = launch.ChildWith({"ps_server", "--index=1"});
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  EXPECT_EQ(launch.Finish(), 0) << launch.Joined();
  const std::vector<std::string>& lines = launch.lines();
  EXPECT_EQ(CountMatching(lines, std::regex(absl::StrCat(
                             "\\[launch\\] server 1 \\(pid ", victim,
                             "\\) was killed by signal 9 \\(Killed\\); "
                             "restarting it in 1\\.0 s \\(restart 1 of 3\\)"))),
            1)
      << launch.Joined();
  EXPECT_EQ(CountMatching(lines, std::regex(absl::StrCat(
                             "\\[launch\\] restarted server 1 on port ", port1,
                             " as pid [0-9]+, [0-9.]+ s after its exit "
                             "\\(restart 1 of 3\\)"))),
            1)
      << launch.Joined();
  // After the restart, server 1 restored a checkpoint before serving again.
  const std::string out = launch.Joined();
  const size_t restart = out.find("[launch] restarted server 1");
  ASSERT_NE(restart, std::string::npos);
  const size_t restored = out.find("restored checkpoint", restart);
  const size_t serving = out.find("serving on 127.0.0.1:" + port1, restart);
  EXPECT_NE(restored, std::string::npos) << out.substr(restart);
  EXPECT_LT(restored, serving) << out.substr(restart);
  EXPECT_EQ(CountMatching(lines, std::regex("RESULT model=softmax mode=sync servers=2 "
                                    "workers=2 epochs=40 .* "
                                    "server_restarts=1")),
            1)
      << out;
  EXPECT_GT(TestAccuracy(lines.back()), 0.8) << lines.back();
}

// A killed worker is restarted with its index and rejoins (async: see
// README, "Supervision", for what a restarted sync ps_worker does today).
TEST(PsLaunchSupervisionTest, SigkilledWorkerIsRestartedAndRejoins) {
  const std::string dir = TempDir();
  std::vector<std::string> args = LongJob(dir, 20);
  args.push_back("--consistency=async");
  BackgroundLaunch launch(args);
  ASSERT_TRUE(launch.WaitForLine("[worker 1] PROGRESS", 60)) << launch.Joined();
  const pid_t victim = launch.ChildWith({"ps_worker", "--index=1"});
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  EXPECT_EQ(launch.Finish(), 0) << launch.Joined();
  const std::vector<std::string>& lines = launch.lines();
  EXPECT_EQ(CountMatching(lines, std::regex(absl::StrCat(
                             "\\[launch\\] worker 1 \\(pid ", victim,
                             "\\) was killed by signal 9 \\(Killed\\); "
                             "restarting it in 1\\.0 s \\(restart 1 of 3\\)"))),
            1)
      << launch.Joined();
  EXPECT_EQ(CountMatching(lines, std::regex("\\[launch\\] restarted worker 1 as pid "
                                    "[0-9]+, .*")),
            1);
  EXPECT_EQ(CountMatching(lines, std::regex("\\[worker 1\\] START worker=1 .*")), 2);
  EXPECT_EQ(CountMatching(lines, std::regex("\\[worker 1\\] DONE worker=1 .*")), 1);
  EXPECT_EQ(CountMatching(lines, std::regex("\\[launch\\] restarts: 0 of servers, 1 "
                                    "of workers")),
            1);
  EXPECT_EQ(lines.back().rfind("RESULT model=softmax mode=async ", 0), 0u)
      << launch.Joined();
  EXPECT_GT(TestAccuracy(lines.back()), 0.8) << lines.back();
}

// A worker command that exits non-zero mid-run is restarted too; its
// restart finishes, and the results are its.
TEST(PsLaunchSupervisionTest, CrashedWorkerCommandIsRestarted) {
  const std::string dir = TempDir();
  LaunchRun run = RunLaunch(
      absl::StrCat("--config=", WriteConfig(dir), " --out_dir=", dir,
                   "/out --restart_delay_s=0.1 --worker_cmd=",
                   Runfile("deploy/launcher/testdata/contract_worker.sh")),
      absl::StrCat("CONTRACT_MODE=crash_once CONTRACT_STATE_DIR=", dir));
  ASSERT_EQ(run.exit_code, 0) << Joined(run);
  for (int w = 0; w < 2; ++w) {
    EXPECT_EQ(CountMatching(run.lines,
                    std::regex(absl::StrCat(
                        "\\[launch\\] worker ", w,
                        " \\(pid [0-9]+\\) exited with code 3; restarting "
                        "it in 0\\.1 s \\(restart 1 of 3\\)"))),
              1)
        << Joined(run);
  }
  EXPECT_EQ(CountMatching(run.lines, std::regex("\\[launch\\] restarts: 0 of servers, "
                                        "2 of workers")),
            1);
  EXPECT_TRUE(std::regex_match(
      run.lines.back(),
      std::regex("RESULT model=contract mode=sync servers=2 workers=2 "
                 "epochs=2 test_accuracy=0\\.8125 .* server_restarts=0 "
                 "auc=0\\.9")))
      << Joined(run);
}

TEST(PsLaunchSupervisionTest, SpentRestartBudgetFailsNamingEveryExit) {
  const std::string dir = TempDir();
  const std::string args = absl::StrCat(
      "--config=", WriteConfig(dir), " --out_dir=", dir,
      "/out --restart_delay_s=0.1 --worker_cmd=",
      Runfile("deploy/launcher/testdata/contract_worker.sh"));
  LaunchRun run = RunLaunch(args + " --max_restarts=2", "CONTRACT_MODE=crash");
  EXPECT_EQ(run.exit_code, 1) << Joined(run);
  EXPECT_TRUE(std::regex_match(
      run.lines.back(),
      std::regex("ps_launch: FAILED: ABORTED: worker ([01]) crashed 3 times, "
                 "once more than its restart budget \\(--max_restarts=2\\); "
                 "its exits: exited with code 3 \\(pid [0-9]+\\), exited "
                 "with code 3 \\(pid [0-9]+\\), exited with code 3 "
                 "\\(pid [0-9]+\\)")))
      << Joined(run);
  EXPECT_GE(CountMatching(run.lines, std::regex(".*; restarting it in 0\\.2 s "
                                        "\\(restart 2 of 2\\)")),
            1)
      << Joined(run);
  run = RunLaunch(args + " --max_restarts=0", "CONTRACT_MODE=crash");
  EXPECT_EQ(run.exit_code, 1) << Joined(run);
  EXPECT_TRUE(std::regex_match(
      run.lines.back(),
      std::regex("ps_launch: FAILED: ABORTED: worker [01] exited with code 3 "
                 "\\(pid [0-9]+\\); restarts are off \\(--max_restarts=0\\)")))
      << Joined(run);
}

TEST(PsLaunchSupervisionTest, SilentWorkerIsNamedWithClusterStatus) {
  const std::string dir = TempDir();
  LaunchRun run = RunLaunch(
      absl::StrCat("--config=", WriteConfig(dir), " --out_dir=", dir,
                   "/out --stall_timeout_s=2 --stall_fail_s=5 --worker_cmd=",
                   Runfile("deploy/launcher/testdata/contract_worker.sh")),
      "CONTRACT_MODE=stall_w1");
  EXPECT_EQ(run.exit_code, 1) << Joined(run);
  EXPECT_GE(CountMatching(run.lines,
                  std::regex("\\[launch\\] stall: (.*; )?worker 1 \\(pid "
                             "[0-9]+\\) printed no progress line for [0-9]+ "
                             "s; cluster status:")),
            1)
      << Joined(run);
  EXPECT_GE(CountMatching(run.lines,
                  std::regex("\\[launch\\] status: processes: server 0 pid "
                             "[0-9]+ [a-z]+, server 1 pid [0-9]+ [a-z]+, "
                             "worker 0 (exited with code 0|pid [0-9]+ [a-z]+), "
                             "worker 1 pid [0-9]+ sleeping")),
            1)
      << Joined(run);
  // The shards' own view: the contract worker never talked to them.
  for (int shard = 0; shard < 2; ++shard) {
    EXPECT_GE(CountMatching(run.lines,
                    std::regex(absl::StrCat(
                        "\\[launch\\] status: shard ", shard,
                        " at 127\\.0\\.0\\.1:[0-9]+: table w step 0 version "
                        "0; worker 0 clock 0 live, worker 1 clock 0 live"))),
              1)
        << Joined(run);
  }
  EXPECT_TRUE(std::regex_match(
      run.lines.back(),
      std::regex("ps_launch: FAILED: ABORTED: stalled: (.*; )?worker 1 "
                 "\\(pid [0-9]+\\) printed no progress line for [0-9]+ s "
                 "\\(--stall_fail_s=5; the cluster status is above\\)")))
      << Joined(run);
}

// A server stopped by SIGSTOP stalls the training: the report shows it
// stopped and the shards unable to answer, and the job ends.
TEST(PsLaunchSupervisionTest, StoppedServerShowsInTheStallReport) {
  const std::string dir = TempDir();
  std::vector<std::string> args = LongJob(dir, 40);
  args.push_back("--stall_timeout_s=3");
  args.push_back("--stall_fail_s=8");
  BackgroundLaunch launch(args);
  ASSERT_TRUE(launch.WaitForLine("[worker 1] PROGRESS", 60)) << launch.Joined();
  const pid_t server = launch.ChildWith({"ps_server", "--index=1"});
  ASSERT_GT(server, 0);
  ASSERT_EQ(kill(server, SIGSTOP), 0);
  EXPECT_EQ(launch.Finish(), 1) << launch.Joined();
  const std::vector<std::string>& lines = launch.lines();
  EXPECT_GE(CountMatching(lines, std::regex(absl::StrCat(
                             "\\[launch\\] status: processes: server 0 pid "
                             "[0-9]+ [a-z]+, server 1 pid ",
                             server, " stopped, .*"))),
            1)
      << launch.Joined();
  EXPECT_GE(CountMatching(lines, std::regex("\\[launch\\] status: shards: GetStats "
                                    "failed: .*")),
            1)
      << launch.Joined();
  // The stopped server is named first, as the cause, then the workers.
  EXPECT_TRUE(std::regex_match(
      lines.back(),
      std::regex(absl::StrCat(
          "ps_launch: FAILED: ABORTED: stalled: server 1 \\(pid ", server,
          "\\) is stopped \\(SIGSTOP or a debugger; SIGCONT resumes it\\) "
          "and holds the workers up; worker 0 \\(pid "
          "[0-9]+\\) printed no progress line for [0-9]+ s; worker 1 "
          "\\(pid [0-9]+\\) printed no progress line for [0-9]+ s .*"))))
      << launch.Joined();
  EXPECT_GE(CountMatching(lines, std::regex(absl::StrCat(
                             "\\[launch\\] stall: server 1 \\(pid ", server,
                             "\\) is stopped .*; cluster status:"))),
            1)
      << launch.Joined();
}

}  // namespace
}  // namespace ps::launcher::testing
