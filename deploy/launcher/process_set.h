// The launcher's children (servers and workers): starts them, relays their
// output line by line, reaps them and stops them.
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
    std::unique_ptr<ChildProcess> process;
    bool reported = false;      // returned by TakeExited()
    bool chaos_killed = false;  // SIGKILLed by the fault injection
  };
  // Receives each output line of `member` (without the newline).
  using LineHandler =
      std::function<void(const Member& member, const std::string& line)>;

  // `interrupt_fd`: read end of a pipe that becomes readable when the
  // launch must stop, or -1. `console` (for messages) must outlive this.
  ProcessSet(LineHandler on_line, int interrupt_fd, Console* console)
      : on_line_(std::move(on_line)),
        interrupt_fd_(interrupt_fd),
        console_(console) {}
  // Stops every child still running (SIGTERM, SIGKILL after 5 s).
  ~ProcessSet() { StopAll(5.0); }

  // Starts `argv` as a new member. The children's own log prefix is
  // switched off ($PS_LOG_PREFIX="", see common/logging.h), since the
  // launcher labels their lines already. INTERNAL when it cannot start.
  absl::Status Spawn(const std::string& name, bool is_worker, int index,
                     std::vector<std::string> argv);

  // Relays output for up to `timeout_ms` and reaps exited children.
  // Returns true when the interrupt fd fired.
  bool Pump(int timeout_ms);

  // Members that exited since the last call (each reported once), their
  // output read to the end.
  std::vector<Member*> TakeExited();

  // The running (not yet reaped) member `index` of that role, or nullptr.
  Member* FindRunning(bool is_worker, int index);

  bool AnyRunning(bool workers) const;

  // SIGTERM to `workers` (true: the workers, false: the servers, nullopt:
  // all), then SIGKILL after `grace_s`; relays output meanwhile.
  void Stop(std::optional<bool> workers, double grace_s);
  void StopAll(double grace_s) { Stop(std::nullopt, grace_s); }

 private:
  // Whether any member of `workers` (as in Stop) is running or has output
  // left.
  bool Running(std::optional<bool> workers) const;

  const LineHandler on_line_;
  const int interrupt_fd_;
  Console* const console_;
  std::vector<std::unique_ptr<Member>> members_;
};

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_PROCESS_SET_H_
