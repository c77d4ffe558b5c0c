// The launcher's children (servers and workers): each a member with a
// stable name and command line, whose process can be started again after
// it exited (supervisor.h decides when). The set relays every member's
// output line by line, reaps exited processes and stops them.
//
// Thread safety: not thread-safe (the launcher's main loop owns it).
#ifndef PS_DEPLOY_LAUNCHER_PROCESS_SET_H_
#define PS_DEPLOY_LAUNCHER_PROCESS_SET_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "deploy/launcher/child_process.h"
#include "deploy/launcher/console.h"

namespace ps::launcher {

class ProcessSet {
 public:
  struct Member {
    std::string name;  // "server 0", "worker 1"
    bool is_worker = false;
    int index = 0;
    // How it is started, and started again: argv[0] is a path; `env`
    // entries ("NAME=value") are added to the launcher's environment.
    std::vector<std::string> argv;
    std::vector<std::string> env;
    // Shown after the name in restart messages, e.g. " on port 41234".
    std::string where;
    // The current (or last) process; null before the first start.
    std::unique_ptr<ChildProcess> process;
    // Set by the launcher once the member has shown that it works (a
    // server reported its port, a worker printed a protocol line); kept
    // across restarts.
    bool ready = false;
    bool exit_reported = false;  // the process's exit went out by TakeExited

    bool running() const { return process != nullptr && !process->exited(); }
  };
  // Receives each output line of `member` (without the newline).
  using LineHandler =
      std::function<void(Member& member, const std::string& line)>;

  // `interrupt_fd`: read end of a pipe that becomes readable when the
  // launch must stop, or -1. `console` (for messages) must outlive this.
  ProcessSet(LineHandler on_line, int interrupt_fd, Console* console)
      : on_line_(std::move(on_line)),
        interrupt_fd_(interrupt_fd),
        console_(console) {}
  // Stops every child still running (SIGTERM, SIGKILL after 5 s).
  ~ProcessSet() { StopAll(5.0); }

  // Adds a member (not started). The pointer stays valid for the set's
  // lifetime.
  Member* Add(std::string name, bool is_worker, int index,
              std::vector<std::string> argv, std::vector<std::string> env);

  // Starts a new process for `m` with its argv and env. The children's own
  // log prefix is switched off ($PS_LOG_PREFIX="", see common/logging.h),
  // since the launcher labels their lines already. REQUIRES: !m->running().
  // INTERNAL when it cannot start.
  absl::Status Start(Member* m);

  // Relays output for up to `timeout_ms` and reaps exited children.
  // Returns true when the interrupt fd fired (what it held is consumed).
  bool Pump(int timeout_ms);

  // Members whose process exited since the last call (each exit reported
  // once), their output read to the end.
  std::vector<Member*> TakeExited();

  // Member `index` of that role, or nullptr.
  Member* Find(bool is_worker, int index);
  const std::vector<std::unique_ptr<Member>>& members() const {
    return members_;
  }

  bool AnyRunning(bool workers) const;

  // SIGTERM to `workers` (true: the workers, false: the servers, nullopt:
  // all), then SIGKILL after `grace_s`; relays output meanwhile.
  void Stop(std::optional<bool> workers, double grace_s);
  void StopAll(double grace_s) { Stop(std::nullopt, grace_s); }

 private:
  // Whether any process of `workers` (as in Stop) is running or has output
  // left.
  bool Running(std::optional<bool> workers) const;

  const LineHandler on_line_;
  const int interrupt_fd_;
  Console* const console_;
  std::vector<std::unique_ptr<Member>> members_;
};

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_PROCESS_SET_H_
