// A child process of a multi-process test (a worker, a trainer): started
// with fork/exec, stdout and stderr into a log file, killed (SIGKILL) and
// reaped by the destructor if it still runs, so no exit path of a test
// leaves it behind.
//
// Thread safety: not thread-safe; drive it from the test's main thread.
#ifndef PS_TESTS_TEST_PROCESS_H_
#define PS_TESTS_TEST_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace ps::testing {

class TestProcess {
 public:
  // Runs argv[0] (a path) with `argv`, its output appended to `log_path`.
  static absl::StatusOr<std::unique_ptr<TestProcess>> Start(
      const std::vector<std::string>& argv, const std::string& log_path);
  ~TestProcess();

  TestProcess(const TestProcess&) = delete;
  TestProcess& operator=(const TestProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Sends `signal`; false when the process is gone.
  bool Signal(int signal);
  // Waits up to `timeout` for the exit; returns the wait status, or nullopt
  // while it still runs. Once reaped, returns the same status again.
  std::optional<int> Wait(absl::Duration timeout);
  // The log so far.
  std::string Log() const;

 private:
  TestProcess(pid_t pid, std::string log_path)
      : pid_(pid), log_path_(std::move(log_path)) {}

  pid_t pid_;
  std::string log_path_;
  std::optional<int> status_;
};

// The integer in `path` (a progress file written by temp file + rename),
// or 0.
int64_t ReadProgress(const std::string& path);

// $TEST_TMPDIR, or /tmp.
std::string TestTempDir();

}  // namespace ps::testing

#endif  // PS_TESTS_TEST_PROCESS_H_
