// ps_launch end to end: real ps_server and ps_worker processes on a tiny
// libsvm data set, and a failing worker.
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace {

std::string TempDir() {
  const char* dir = getenv("TEST_TMPDIR");
  std::string tmpl = absl::StrCat(dir != nullptr ? dir : "/tmp", "/pl_XXXXXX");
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

std::string Runfile(const std::string& path) {
  const char* srcdir = getenv("TEST_SRCDIR");
  return srcdir != nullptr ? absl::StrCat(srcdir, "/ps/", path) : path;
}

void WriteData(const std::string& path, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::ofstream out(path);
  for (int i = 0; i < n; ++i) {
    const float a = dist(rng), b = dist(rng), c = dist(rng);
    const int label = a + b > 0 ? (c > 0 ? 2 : 1) : 0;
    out << label << " 1:" << a << " 2:" << b << " 3:" << c << "\n";
  }
}

std::string WriteConfig(const std::string& dir) {
  WriteData(dir + "/train.svm", 800, 1);
  WriteData(dir + "/test.svm", 200, 2);
  const std::string path = dir + "/cluster.yaml";
  std::ofstream out(path);
  out << "cluster:\n  servers: [\"127.0.0.1:1\", \"127.0.0.1:2\"]\n"
      << "  num_workers: 2\n"
      << "training:\n  model: softmax\n  dataset: libsvm\n"
      << "  train_file: " << dir << "/train.svm\n"
      << "  test_file: " << dir << "/test.svm\n"
      << "  batch_size: 20\n  epochs: 3\n  eval_every_steps: 10\n"
      << "tables:\n  - name: w\n    kind: dense\n    size: 12\n"
      << "    consistency: sync\n"
      << "    optimizer: {type: sgd, learning_rate: 0.5}\n";
  return path;
}

struct LaunchRun {
  int exit_code = -1;
  std::vector<std::string> lines;
};

LaunchRun RunLaunch(const std::string& args) {
  // ps_launch keeps its temporary directory after a failure (by contract):
  // inside the test's own temp dir, so failure cases leave nothing in /tmp.
  const char* test_tmp = getenv("TEST_TMPDIR");
  const std::string cmd = absl::StrCat(
      test_tmp != nullptr ? absl::StrCat("TMPDIR=", test_tmp, " ") : "",
      Runfile("deploy/launcher/ps_launch"), " --progress=plain ", args,
      " 2>&1");
  LaunchRun run;
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string all;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) all.append(buf, n);
  const int status = pclose(p);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.lines = absl::StrSplit(all, '\n', absl::SkipEmpty());
  return run;
}

std::string Joined(const LaunchRun& run) {
  std::string out;
  for (const std::string& l : run.lines) absl::StrAppend(&out, l, "\n");
  return out;
}

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
  const double acc = std::stod(
      run.lines.back().substr(run.lines.back().find("test_accuracy=") + 14));
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

}  // namespace
