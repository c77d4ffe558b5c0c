// Child processes for the replication tests: a command line started with
// piped stdin / stdout (stderr to a log file), lines read with a timeout
// from several children at once, signals, and a kill + reap on destruction.
// The children should set PR_SET_PDEATHSIG themselves (contender_main does;
// LocalEtcd does for etcd) so nothing outlives a crashed test.
//
// Thread safety: not thread-safe; drive it from the test's main thread.
#ifndef PS_TESTS_REPLICATION_CHILD_PROCESS_H_
#define PS_TESTS_REPLICATION_CHILD_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace ps::testing {

class ChildProcess {
 public:
  // Starts argv (argv[0] an absolute path or runfile path); stderr appends to
  // `stderr_path`.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(
      std::vector<std::string> argv, const std::string& stderr_path);
  // SIGKILLs (if still running) and reaps.
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  // Every line read so far (for failure messages).
  const std::vector<std::string>& lines() const { return lines_; }

  // The next complete stdout line. DEADLINE_EXCEEDED after `timeout`,
  // UNAVAILABLE at end of output.
  absl::StatusOr<std::string> ReadLine(absl::Duration timeout);
  // Sends a signal; SIGKILL also reaps.
  absl::Status Signal(int signal);
  // Closes its stdin (contender_main then resigns and exits) and waits up to
  // `timeout` for the exit; returns the wait status.
  absl::StatusOr<int> CloseAndWait(absl::Duration timeout);

  // The next line from any of `children` (that are still readable), with the
  // index of the child. DEADLINE_EXCEEDED after `timeout`.
  static absl::StatusOr<std::pair<size_t, std::string>> NextLine(
      const std::vector<ChildProcess*>& children, absl::Duration timeout);

 private:
  ChildProcess() = default;
  // Moves one complete line from buffer_ to *line; false if none.
  bool TakeLine(std::string* line);
  // Reads what is available; false at EOF.
  bool Fill();

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  bool eof_ = false;
  std::string name_;
  std::string buffer_;
  std::vector<std::string> lines_;
};

}  // namespace ps::testing

#endif  // PS_TESTS_REPLICATION_CHILD_PROCESS_H_
