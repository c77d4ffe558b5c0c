// ps_launch end to end: real ps_server and ps_worker processes on a tiny
// libsvm data set, and a failing worker; any trainer through --worker_cmd
// (the worker contract); --servers_only; the progress bar; the temporary
// directory. Supervision has its own test (ps_launch_supervision_test.cc).
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "deploy/launcher/ps_launch_harness.h"
#include "gtest/gtest.h"

namespace ps::launcher::testing {
namespace {

TEST(PsLaunchTest, TrainsAndReportsResultCsvAndPlot) {
  const std::string dir = TempDir();
  const std::string config = WriteConfig(dir);
  LaunchRun run = RunLaunch(absl::StrCat("--config=", config, " --out_dir=", dir,
                                   "/out"));
  ASSERT_EQ(run.exit_code, 0) << Joined(run);
  int results = 0, server_lines = 0, worker_lines = 0;
  std::string csv_path;
  for (const std::string& l : run.lines) {
    if (l.rfind("RESULT ", 0) == 0) ++results;
    if (l.rfind("[server 1] ", 0) == 0) ++server_lines;
    if (l.rfind("[worker 1] ", 0) == 0) ++worker_lines;
    if (l.rfind("[launch] metrics: ", 0) == 0) csv_path = l.substr(18);
  }
  EXPECT_EQ(results, 1) << Joined(run);
  EXPECT_GT(server_lines, 0);
  // The role shows once: the launcher's label, not the child's own prefix
  // ("[server 1] [<time>] [info] ...").
  const std::regex relayed_log(
      "\\[(server|worker) [01]\\] \\[[0-9: .-]{23}\\] \\[[a-z]+\\] .*");
  int log_lines = 0;
  for (const std::string& l : run.lines) {
    if (l.find("] [info] ") == std::string::npos) continue;
    ++log_lines;
    EXPECT_TRUE(std::regex_match(l, relayed_log)) << l;
  }
  EXPECT_GT(log_lines, 0);
  EXPECT_GT(worker_lines, 0);
  const std::regex result(
      "RESULT model=softmax mode=sync servers=2 workers=2 epochs=3 "
      "test_accuracy=0\\.[0-9]{4} wall_s=[0-9.]+ samples_per_s=[0-9.]+ "
      "server_restarts=0");
  EXPECT_TRUE(std::regex_match(run.lines.back(), result)) << run.lines.back();
  // The problem is linearly separable: training must have learned it.
  const double acc = TestAccuracy(run.lines.back());
  EXPECT_GT(acc, 0.8);

  ASSERT_FALSE(csv_path.empty()) << Joined(run);
  std::ifstream csv(csv_path);
  std::string header, row;
  ASSERT_TRUE(std::getline(csv, header));
  EXPECT_EQ(header, "time_s,step,epoch,loss,test_accuracy");
  int rows = 0;
  while (std::getline(csv, row)) ++rows;
  EXPECT_GT(rows, 3);
  if (system("command -v gnuplot > /dev/null") == 0) {
    const std::string png = csv_path.substr(0, csv_path.size() - 4) + ".png";
    EXPECT_EQ(access(png.c_str(), R_OK), 0) << png;
  }
}

TEST(PsLaunchTest, OverridesServersWorkersAndConsistency) {
  const std::string dir = TempDir();
  const std::string config = WriteConfig(dir);
  LaunchRun run = RunLaunch(absl::StrCat(
      "--config=", config, " --out_dir=", dir,
      "/out --servers=1 --workers=3 --consistency=async --epochs=1"));
  ASSERT_EQ(run.exit_code, 0) << Joined(run);
  EXPECT_EQ(run.lines.back().rfind(
                "RESULT model=softmax mode=async servers=1 workers=3 epochs=1 "
                "test_accuracy=",
                0),
            0u)
      << run.lines.back();
}

TEST(PsLaunchTest, FailingWorkerIsNamedWithItsExitCode) {
  const std::string dir = TempDir();
  const std::string config = WriteConfig(dir);
  LaunchRun run = RunLaunch(absl::StrCat("--config=", config, " --out_dir=", dir,
                                   "/out --worker_bin=/bin/false"));
  EXPECT_EQ(run.exit_code, 1) << Joined(run);
  const std::regex failed(
      "ps_launch: FAILED: ABORTED: worker [01] \\(pid [0-9]+\\) exited with "
      "code 1");
  EXPECT_TRUE(std::regex_match(run.lines.back(), failed)) << Joined(run);
  for (const std::string& l : run.lines) {
    EXPECT_NE(l.rfind("RESULT ", 0), 0u) << l;
  }
}

TEST(PsLaunchTest, BadKillOptionsAreUsageErrors) {
  const std::string dir = TempDir();
  const std::string config = WriteConfig(dir);
  LaunchRun run = RunLaunch(
      absl::StrCat("--config=", config, " --kill_server=2 --kill_after_s=1"));
  EXPECT_EQ(run.exit_code, 2) << Joined(run);
  EXPECT_NE(Joined(run).find("--kill_server=2 but the cluster has 2 server(s)"),
            std::string::npos)
      << Joined(run);
  run = RunLaunch(absl::StrCat("--config=", config, " --kill_server=1"));
  EXPECT_EQ(run.exit_code, 2) << Joined(run);
  EXPECT_NE(Joined(run).find("--kill_server and --kill_after_s go together"),
            std::string::npos)
      << Joined(run);
}

TEST(PsLaunchTest, BadConfigIsAUsageError) {
  const std::string dir = TempDir();
  {
    std::ofstream out(dir + "/bad.yaml");
    out << "cluster: {servers: [\"127.0.0.1:1\"], num_workers: 0}\n";
  }
  LaunchRun run = RunLaunch(absl::StrCat("--config=", dir, "/bad.yaml"));
  EXPECT_EQ(run.exit_code, 2) << Joined(run);
  EXPECT_NE(Joined(run).find("num_workers"), std::string::npos) << Joined(run);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The value after "[launch] <label>: " in the output, or "".
std::string PathAfter(const std::vector<std::string>& lines,
                      const std::string& label) {
  const std::string prefix = absl::StrCat("[launch] ", label, ": ");
  for (const std::string& l : lines) {
    if (l.rfind(prefix, 0) == 0) return l.substr(prefix.size());
  }
  return "";
}

// A trainer of our own through --worker_cmd: it gets the documented
// arguments and environment, and its protocol lines make the progress,
// every worker's loss curve, the plot and the RESULT line.
TEST(PsLaunchTest, WorkerCmdGetsTheContractAndItsLinesMakeTheResult) {
  const std::string dir = TempDir();
  const std::string config = WriteConfig(dir);
  LaunchRun run = RunLaunch(absl::StrCat(
      "--config=", config, " --out_dir=", dir, "/out --worker_cmd='",
      Runfile("deploy/launcher/testdata/contract_worker.sh"),
      " --mine=1' --worker_flags=--shared=2"));
  ASSERT_EQ(run.exit_code, 0) << Joined(run);
  // Arguments appended in order; the environment names the same config.
  const std::regex args(
      "\\[worker ([01])\\] ARGS --mine=1 --shared=2 "
      "--config=(/[^ ]+/ps_launch_[^ /]+/cluster\\.yaml) --index=([01])");
  int matched = 0;
  std::string config_path;
  for (const std::string& l : run.lines) {
    std::smatch m;
    if (!std::regex_match(l, m, args)) continue;
    ++matched;
    EXPECT_EQ(m[1], m[3]) << l;
    config_path = m[2];
    EXPECT_NE(std::find(run.lines.begin(), run.lines.end(),
                        absl::StrCat("[worker ", m[1].str(),
                                     "] ENV PS_CONFIG=", config_path,
                                     " PS_WORKER_INDEX=", m[1].str(),
                                     " PS_NUM_WORKERS=2")),
              run.lines.end())
        << Joined(run);
  }
  EXPECT_EQ(matched, 2) << Joined(run);
  for (const char* w : {"[worker 0] ", "[worker 1] "}) {
    EXPECT_NE(std::find(run.lines.begin(), run.lines.end(),
                        absl::StrCat(w, "CONFIG readable with addresses")),
              run.lines.end())
        << Joined(run);
  }
  // The trainer's START names the run; its FINAL and DONE lines make the
  // figures: 2 workers x 24 samples over a wall time of 2 s. FINAL's own
  // field auc follows; its samples_per_s=1 does not replace RESULT's.
  const std::regex result(
      "RESULT model=contract mode=sync servers=2 workers=2 epochs=2 "
      "test_accuracy=0\\.8125 wall_s=[0-9.]+ samples_per_s=24\\.0 "
      "server_restarts=0 auc=0\\.9");
  EXPECT_TRUE(std::regex_match(run.lines.back(), result)) << Joined(run);
  EXPECT_EQ(ReadFile(PathAfter(run.lines, "loss of every worker")),
            "worker,time_s,step,epoch,loss\n"
            "0,1.000,1,1,0.900000\n0,2.000,2,1,0.800000\n"
            "0,3.000,3,1,0.700000\n0,4.000,4,2,0.600000\n"
            "0,5.000,5,2,0.500000\n0,6.000,6,2,0.400000\n"
            "1,1.000,1,1,1.000000\n1,2.000,2,1,0.900000\n"
            "1,3.000,3,1,0.800000\n1,4.000,4,2,0.700000\n"
            "1,5.000,5,2,0.600000\n1,6.000,6,2,0.500000\n");
  const std::string csv = PathAfter(run.lines, "metrics");
  const std::string script =
      ReadFile(csv.substr(0, csv.size() - 4) + ".gp");
  EXPECT_NE(script.find("$loss_w1 << EOD\n1.000 1.000000\n"), std::string::npos)
      << script;
  EXPECT_NE(script.find("$loss_w1 using 1:2 with lines lw 1 title "
                        "\"training loss, worker 1\""),
            std::string::npos)
      << script;
}

// ps_worker itself as a worker command trains as well as --worker_bin.
TEST(PsLaunchTest, PsWorkerRunsThroughWorkerCmd) {
  const std::string dir = TempDir();
  const std::string config = WriteConfig(dir);
  LaunchRun run = RunLaunch(absl::StrCat(
      "--config=", config, " --out_dir=", dir, "/out --worker_cmd='",
      Runfile("worker/ps_worker"), " --shard=contiguous'"));
  ASSERT_EQ(run.exit_code, 0) << Joined(run);
  const std::string& last = run.lines.back();
  EXPECT_EQ(last.rfind("RESULT model=softmax(3-3) mode=sync servers=2 "
                       "workers=2 epochs=3 test_accuracy=",
                       0),
            0u)
      << last;
  EXPECT_GT(TestAccuracy(last), 0.8);
}

// --servers_only: the servers come up, their addresses and a config are
// printed, our own workers train against them, and SIGTERM ends it all
// cleanly (exit 0, servers stopped, temporary directory removed).
TEST(PsLaunchTest, ServersOnlyServesOwnWorkersUntilInterrupted) {
  const std::string dir = TempDir();
  const std::string config = WriteConfig(dir);
  BackgroundLaunch launch({"--progress=plain", "--config=" + config,
                           "--servers_only"});
  std::optional<std::string> line = launch.WaitForLine("SERVERS ", 60);
  ASSERT_TRUE(line.has_value()) << launch.Joined();
  const std::regex servers(
      "SERVERS (127\\.0\\.0\\.1:[0-9]+),(127\\.0\\.0\\.1:[0-9]+) "
      "config=(.*/cluster\\.yaml)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(*line, m, servers)) << *line;
  const std::string worker_config = m[3];
  const std::string yaml = ReadFile(worker_config);
  EXPECT_NE(yaml.find(m[1].str()), std::string::npos) << yaml;
  EXPECT_NE(yaml.find(m[2].str()), std::string::npos) << yaml;
  const std::string worker = Runfile("worker/ps_worker");
  const std::string cmd = absl::StrCat(
      worker, " --config=", worker_config, " --index=0 > ", dir,
      "/w0.log 2>&1 & ", worker, " --config=", worker_config, " --index=1 > ",
      dir, "/w1.log 2>&1; a=$?; wait $!; exit $((a + $?))");
  EXPECT_EQ(system(cmd.c_str()), 0) << ReadFile(dir + "/w0.log")
                                    << ReadFile(dir + "/w1.log");
  EXPECT_NE(ReadFile(dir + "/w0.log").find("FINAL worker=0 steps=60 "),
            std::string::npos);
  ASSERT_EQ(kill(launch.pid(), SIGTERM), 0);
  EXPECT_EQ(launch.Finish(), 0) << launch.Joined();
  const std::string out = launch.Joined();
  EXPECT_NE(out.find("[launch] interrupted; stopping the servers\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("[server 1] "), std::string::npos);
  EXPECT_EQ(out.find("RESULT"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(worker_config)) << out;
}

// The last progress bar ends its line: what follows starts a line of its
// own (it used to run into "[launch] metrics: ...").
TEST(PsLaunchTest, LastProgressBarEndsItsLine) {
  const std::string dir = TempDir();
  const std::string config = WriteConfig(dir);
  LaunchRun run = RunLaunch(absl::StrCat("--config=", config, " --out_dir=",
                                         dir, "/out --progress=bar"));
  ASSERT_EQ(run.exit_code, 0) << Joined(run);
  // The final bar, redrawn after "\r\033[K" at the end of its line.
  const std::string bar = absl::StrCat("\r\033[K[", std::string(30, '#'),
                                       "] epoch 3/3 step 60/60 loss ");
  int bar_line = -1;
  for (size_t i = 0; i < run.lines.size(); ++i) {
    const std::string& l = run.lines[i];
    const size_t last = l.rfind("\r\033[K");
    if (last != std::string::npos && l.compare(last, bar.size(), bar) == 0) {
      bar_line = static_cast<int>(i);
    }
  }
  ASSERT_GE(bar_line, 0) << Joined(run);
  EXPECT_EQ(run.lines[bar_line + 1],
            "[launch] all workers finished; stopping the servers");
  for (const std::string& l : run.lines) {
    if (l.find("[launch] metrics: ") != std::string::npos) {
      EXPECT_EQ(l.rfind("[launch] metrics: ", 0), 0u) << l;
    }
  }
  EXPECT_EQ(run.lines.back().rfind("RESULT model=softmax ", 0), 0u);
}

// The temporary directory goes after a failure too, unless --keep_tmp.
TEST(PsLaunchTest, TempDirRemovedAfterFailureUnlessKept) {
  const std::string dir = TempDir();
  const std::string config = WriteConfig(dir);
  const std::string tmp = TempDir();
  auto launch_dirs = [&] {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(tmp)) {
      out.push_back(e.path().string());
    }
    return out;
  };
  const std::string failing = absl::StrCat(
      "--config=", config, " --out_dir=", dir, "/out --worker_bin=/bin/false");
  // RunLaunch sets TMPDIR first; a later assignment wins.
  LaunchRun run = RunLaunch(failing, "TMPDIR=" + tmp);
  EXPECT_EQ(run.exit_code, 1) << Joined(run);
  EXPECT_TRUE(launch_dirs().empty()) << Joined(run);
  run = RunLaunch(failing + " --keep_tmp", "TMPDIR=" + tmp);
  EXPECT_EQ(run.exit_code, 1) << Joined(run);
  std::vector<std::string> kept = launch_dirs();
  ASSERT_EQ(kept.size(), 1u) << Joined(run);
  EXPECT_TRUE(std::filesystem::exists(kept[0] + "/cluster.yaml"));
  EXPECT_NE(Joined(run).find("[launch] temporary files kept in " + kept[0]),
            std::string::npos)
      << Joined(run);
}

TEST(PsLaunchTest, WorkerCmdAndServersOnlyUsageErrors) {
  const std::string dir = TempDir();
  const std::string config = WriteConfig(dir);
  LaunchRun run = RunLaunch(absl::StrCat("--config=", config,
                                         " --worker_cmd=true --worker_bin=",
                                         Runfile("worker/ps_worker")));
  EXPECT_EQ(run.exit_code, 2) << Joined(run);
  EXPECT_NE(Joined(run).find("--worker_cmd and --worker_bin exclude each other"),
            std::string::npos)
      << Joined(run);
  run = RunLaunch(absl::StrCat("--config=", config,
                               " --servers_only --kill_server=0 "
                               "--kill_after_s=1"));
  EXPECT_EQ(run.exit_code, 2) << Joined(run);
  EXPECT_NE(Joined(run).find("cannot go with --servers_only"),
            std::string::npos)
      << Joined(run);
}

}  // namespace
}  // namespace ps::launcher::testing
