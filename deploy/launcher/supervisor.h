// Restarts crashed processes, as Kubernetes restarts the pods of the
// manifests: what happens when a member of the ProcessSet exits.
//
//  - A worker that exits 0 has finished; it is not restarted.
//  - Any other exit (a non-zero code or a signal; for a server, any exit
//    while the job runs) is a crash. A member that had shown it works
//    (ProcessSet::Member::ready) is started again with the same command
//    line after a delay: restart_delay_s before its first restart, doubling
//    with each further one up to kMaxRestartDelayS. A server keeps its port
//    (its command line names it) and restores its newest checkpoint; a
//    worker keeps its index and rejoins.
//  - Each member may be restarted max_restarts times after crashes; the
//    next crash fails the job, naming the member and every exit it had.
//  - A member that crashes before it was ever ready fails the job at once:
//    that is a start-up error (bad command, config or data), which a retry
//    cannot fix.
//  - A kill injected by the launcher (InjectKill) is no crash: the member is
//    restarted after restart_delay_s, outside its budget.
//
// Thread safety: not thread-safe (the launcher's main loop owns it).
#ifndef PS_DEPLOY_LAUNCHER_SUPERVISOR_H_
#define PS_DEPLOY_LAUNCHER_SUPERVISOR_H_

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "deploy/launcher/console.h"
#include "deploy/launcher/process_set.h"

namespace ps::launcher {

struct RestartPolicy {
  int max_restarts = 3;          // per member, after crashes; 0 = none
  double restart_delay_s = 1.0;  // before a member's first restart
};

// The longest delay before a restart.
inline constexpr double kMaxRestartDelayS = 30.0;

class Supervisor {
 public:
  using Member = ProcessSet::Member;

  // `processes` and `console` must outlive the supervisor.
  Supervisor(ProcessSet* processes, Console* console, RestartPolicy policy)
      : processes_(processes), console_(console), policy_(policy) {}

  // SIGKILLs running member `m` as an injected fault. Returns its pid.
  pid_t InjectKill(Member* m);

  // Decides about `m`, whose process exited (ProcessSet::TakeExited): OK
  // when it finished or a restart is scheduled; ABORTED naming it and its
  // exit(s) when the job must fail (see above).
  absl::Status OnExit(Member* m);

  // Starts the restarts that are due; returns the members restarted.
  // INTERNAL when a process cannot be started.
  absl::StatusOr<std::vector<Member*>> RestartDue();

  // Whether a restart of a worker (true) or server (false) is scheduled.
  bool RestartPending(bool workers) const;
  // Restarts done for workers (true) or servers (false), injected included.
  int restarts(bool workers) const {
    return workers ? worker_restarts_ : server_restarts_;
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct State {
    bool injected_kill = false;  // its next exit was injected
    std::vector<std::string> crashes;  // "exited with code 1 (pid 12)"
    int restarts = 0;                  // after crashes
    bool restart_pending = false;
    bool restart_injected = false;
    Clock::time_point exited_at;
    Clock::time_point restart_at;
  };

  // Schedules a restart `delay_s` after s->exited_at.
  void Schedule(State* s, double delay_s, bool injected);
  absl::Status BudgetSpent(const Member& m, const State& s) const;

  ProcessSet* const processes_;
  Console* const console_;
  const RestartPolicy policy_;
  std::map<Member*, State> states_;  // by member, in address order
  int worker_restarts_ = 0;
  int server_restarts_ = 0;
};

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_SUPERVISOR_H_
