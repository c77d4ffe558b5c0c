#include "tests/test_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace ps::testing {

absl::StatusOr<std::unique_ptr<TestProcess>> TestProcess::Start(
    const std::vector<std::string>& argv, const std::string& log_path) {
  const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (log < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open ", log_path, ": ", std::strerror(errno)));
  }
  std::vector<std::string> args = argv;
  std::vector<char*> raw;
  for (std::string& a : args) raw.push_back(a.data());
  raw.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(log);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    execv(raw[0], raw.data());
    _exit(127);
  }
  close(log);
  return std::unique_ptr<TestProcess>(new TestProcess(pid, log_path));
}

TestProcess::~TestProcess() {
  if (status_.has_value()) return;
  kill(pid_, SIGKILL);  // ends a stopped (SIGSTOP) process too
  int status = 0;
  waitpid(pid_, &status, 0);
}

bool TestProcess::Signal(int signal) {
  return !status_.has_value() && kill(pid_, signal) == 0;
}

std::optional<int> TestProcess::Wait(absl::Duration timeout) {
  if (status_.has_value()) return status_;
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      status_ = status;
      return status_;
    }
    if (absl::Now() >= deadline) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(10));
  }
}

std::string TestProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

int64_t ReadProgress(const std::string& path) {
  std::ifstream in(path);
  int64_t value = 0;
  if (!(in >> value)) return 0;
  return value;
}

std::string TestTempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

}  // namespace ps::testing
