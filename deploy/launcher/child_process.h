// One child process of the launcher: started by fork/execve in its own
// process group, with its stdout and stderr on one pipe that the launcher
// reads line by line, and stdin from /dev/null.
//
// The child leads its own process group, so a terminal's Ctrl-C reaches
// only the launcher (which then stops its children in order), and signals
// from the launcher reach the whole group (a worker command run through
// /bin/sh and the trainer it starts). The child itself gets SIGTERM if the
// launcher dies (PR_SET_PDEATHSIG); a grandchild (the trainer under sh)
// does not, and ends at its next write to the closed pipe (SIGPIPE).
//
// Thread safety: not thread-safe (the launcher's main loop owns its
// children).
#ifndef PS_DEPLOY_LAUNCHER_CHILD_PROCESS_H_
#define PS_DEPLOY_LAUNCHER_CHILD_PROCESS_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ps::launcher {

class ChildProcess {
 public:
  // Receives one line of the child's output, without its '\n'.
  using LineSink = std::function<void(const std::string&)>;

  // Starts argv[0] (a path; PATH is not searched) with `argv` and this
  // process's environment plus `env` ("NAME=value" entries replace
  // inherited ones of the same name). INTERNAL when pipe() or fork() fails;
  // a failed execve shows as exit code 127 after a line on its output.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(
      std::vector<std::string> argv, const std::vector<std::string>& env);

  // SIGKILLs the process group and reaps a child that is still running;
  // closes the pipe.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Read end of the output pipe; -1 after end of file.
  int output_fd() const { return fd_; }

  // Reads what the pipe holds (one read()); passes each complete line to
  // `sink`. At end of file it passes an unterminated last line too and
  // closes the pipe.
  void ReadOutput(const LineSink& sink);

  // Reaps the child if it has exited (never blocks), SIGKILLs what is left
  // of its process group, then reads the rest of its output and closes the
  // pipe. Returns true when this call reaped it.
  bool Reap(const LineSink& sink);

  // Sends `signo` to the child's process group, unless the child was
  // reaped.
  void Signal(int signo);

  bool exited() const { return exited_; }
  int wstatus() const { return wstatus_; }  // valid once exited()
  // True until the child was reaped and its output read to the end.
  bool running() const { return !exited_ || fd_ >= 0; }

 private:
  ChildProcess(pid_t pid, int fd) : pid_(pid), fd_(fd) {}

  const pid_t pid_;
  int fd_;
  std::string partial_;  // incomplete last line
  bool exited_ = false;
  int wstatus_ = 0;
};

// "exited with code 2", "was killed by signal 9 (Killed)".
std::string ExitText(int wstatus);

// True for a normal exit with code 0.
bool ExitedCleanly(int wstatus);

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_CHILD_PROCESS_H_
