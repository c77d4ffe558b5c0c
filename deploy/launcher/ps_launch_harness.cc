#include "deploy/launcher/ps_launch_harness.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace ps::launcher::testing {
namespace {

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

std::string TestTmp() {
  const char* dir = getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

}  // namespace

std::string TempDir() {
  std::string tmpl = absl::StrCat(TestTmp(), "/pl_XXXXXX");
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

std::string Runfile(const std::string& path) {
  const char* srcdir = getenv("TEST_SRCDIR");
  return srcdir != nullptr ? absl::StrCat(srcdir, "/ps/", path) : path;
}

std::string WriteConfig(const std::string& dir, int train_examples) {
  WriteData(dir + "/train.svm", train_examples, 1);
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

int CountMatching(const std::vector<std::string>& lines, const std::regex& re) {
  return static_cast<int>(std::count_if(
      lines.begin(), lines.end(),
      [&](const std::string& l) { return std::regex_match(l, re); }));
}

int CountContaining(const std::vector<std::string>& lines,
                    const std::regex& re) {
  return static_cast<int>(std::count_if(
      lines.begin(), lines.end(),
      [&](const std::string& l) { return std::regex_search(l, re); }));
}

int FirstMatching(const std::vector<std::string>& lines, const std::regex& re) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (std::regex_match(lines[i], re)) return static_cast<int>(i);
  }
  return -1;
}

double TestAccuracy(const std::string& result_line) {
  return std::stod(
      result_line.substr(result_line.find("test_accuracy=") + 14));
}

LaunchRun RunLaunch(const std::string& args, const std::string& env) {
  // ps_launch's temporary directory goes inside the test's own temp dir,
  // so nothing is left in /tmp whatever a case does.
  const std::string cmd =
      absl::StrCat("TMPDIR=", TestTmp(), " ", env, " ",
                   Runfile("deploy/launcher/ps_launch"), " --progress=plain ",
                   args, " 2>&1");
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

BackgroundLaunch::BackgroundLaunch(const std::vector<std::string>& args) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  std::vector<std::string> argv = {Runfile("deploy/launcher/ps_launch")};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const std::string tmpdir = TestTmp();
  pid_ = fork();
  if (pid_ == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    setenv("TMPDIR", tmpdir.c_str(), 1);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  close(fds[1]);
  fd_ = fds[0];
}

BackgroundLaunch::~BackgroundLaunch() {
  if (!exited_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (fd_ >= 0) close(fd_);
}

bool BackgroundLaunch::ReadSome(double timeout_s) {
  if (fd_ < 0) return false;
  pollfd p = {fd_, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(timeout_s * 1000)) <= 0) return true;
  char buf[4096];
  const ssize_t n = read(fd_, buf, sizeof(buf));
  if (n <= 0) {
    if (!partial_.empty()) lines_.push_back(partial_);
    partial_.clear();
    close(fd_);
    fd_ = -1;
    return false;
  }
  partial_.append(buf, n);
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos;
       start = nl + 1) {
    lines_.push_back(partial_.substr(start, nl - start));
  }
  partial_.erase(0, start);
  return true;
}

std::optional<std::string> BackgroundLaunch::WaitForLine(
    const std::string& text, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::duration<double>(timeout_s));
  size_t seen = 0;
  while (true) {
    for (; seen < lines_.size(); ++seen) {
      if (lines_[seen].find(text) != std::string::npos) return lines_[seen];
    }
    const double left = std::chrono::duration<double>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
    if (left <= 0 || !ReadSome(std::min(left, 0.2))) {
      for (; seen < lines_.size(); ++seen) {
        if (lines_[seen].find(text) != std::string::npos) return lines_[seen];
      }
      return std::nullopt;
    }
  }
}

pid_t BackgroundLaunch::ChildWith(const std::vector<std::string>& parts) const {
  std::ifstream children(
      absl::StrCat("/proc/", pid_, "/task/", pid_, "/children"));
  pid_t child;
  while (children >> child) {
    std::ifstream cmdline(absl::StrCat("/proc/", child, "/cmdline"));
    std::stringstream ss;
    ss << cmdline.rdbuf();
    std::string text = ss.str();
    std::replace(text.begin(), text.end(), '\0', ' ');
    bool all = true;
    for (const std::string& part : parts) {
      all = all && text.find(part) != std::string::npos;
    }
    if (all) return child;
  }
  return -1;
}

int BackgroundLaunch::Finish() {
  while (ReadSome(1.0)) {
  }
  int status = 0;
  waitpid(pid_, &status, 0);
  exited_ = true;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string BackgroundLaunch::Joined() const {
  std::string out;
  for (const std::string& l : lines_) absl::StrAppend(&out, l, "\n");
  return out;
}

}  // namespace ps::launcher::testing
