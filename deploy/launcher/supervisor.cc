#include "deploy/launcher/supervisor.h"

#include <signal.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace ps::launcher {

pid_t Supervisor::InjectKill(Member* m) {
  states_[m].injected_kill = true;
  m->process->Signal(SIGKILL);
  return m->process->pid();
}

absl::Status Supervisor::OnExit(Member* m) {
  const int wstatus = m->process->wstatus();
  const pid_t pid = m->process->pid();
  if (m->is_worker && ExitedCleanly(wstatus)) return absl::OkStatus();
  State& s = states_[m];
  s.exited_at = Clock::now();
  if (s.injected_kill) {
    s.injected_kill = false;
    Schedule(&s, policy_.restart_delay_s, /*injected=*/true);
    console_->Message(absl::StrCat("chaos: ", m->name, " ", ExitText(wstatus),
                                   " as injected; restarting it"));
    return absl::OkStatus();
  }
  if (!m->ready) {
    console_->Message(absl::StrCat(
        m->name, " failed before it was ready (a start-up error: bad "
        "command, config or data); it is not restarted"));
    return absl::AbortedError(
        absl::StrCat(m->name, " (pid ", pid, ") ", ExitText(wstatus)));
  }
  s.crashes.push_back(absl::StrCat(ExitText(wstatus), " (pid ", pid, ")"));
  if (s.restarts >= policy_.max_restarts) return BudgetSpent(*m, s);
  const double delay_s =
      std::min(kMaxRestartDelayS,
               policy_.restart_delay_s * std::pow(2.0, s.restarts));
  ++s.restarts;
  Schedule(&s, delay_s, /*injected=*/false);
  console_->Message(absl::StrFormat(
      "%s (pid %d) %s; restarting it in %.1f s (restart %d of %d)", m->name,
      pid, ExitText(wstatus), delay_s, s.restarts, policy_.max_restarts));
  return absl::OkStatus();
}

void Supervisor::Schedule(State* s, double delay_s, bool injected) {
  s->restart_pending = true;
  s->restart_injected = injected;
  s->restart_at = s->exited_at + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(delay_s));
}

absl::Status Supervisor::BudgetSpent(const Member& m, const State& s) const {
  if (policy_.max_restarts == 0) {
    return absl::AbortedError(absl::StrCat(m.name, " ", s.crashes.back(),
                                           "; restarts are off "
                                           "(--max_restarts=0)"));
  }
  return absl::AbortedError(absl::StrCat(
      m.name, " crashed ", s.crashes.size(),
      " times, once more than its restart budget (--max_restarts=",
      policy_.max_restarts, "); its exits: ", absl::StrJoin(s.crashes, ", ")));
}

absl::StatusOr<std::vector<Supervisor::Member*>> Supervisor::RestartDue() {
  std::vector<Member*> restarted;
  const Clock::time_point now = Clock::now();
  for (auto& [m, s] : states_) {
    if (!s.restart_pending || now < s.restart_at) continue;
    s.restart_pending = false;
    if (absl::Status status = processes_->Start(m); !status.ok()) {
      return absl::InternalError(absl::StrCat("cannot restart ", m->name, ": ",
                                              status.message()));
    }
    ++(m->is_worker ? worker_restarts_ : server_restarts_);
    const double after_s =
        std::chrono::duration<double>(now - s.exited_at).count();
    if (s.restart_injected) {
      console_->Message(absl::StrFormat("chaos: restarted %s%s (%.1f s after "
                                        "the kill)",
                                        m->name, m->where, after_s));
    } else {
      console_->Message(absl::StrFormat(
          "restarted %s%s as pid %d, %.1f s after its exit (restart %d of %d)",
          m->name, m->where, m->process->pid(), after_s, s.restarts,
          policy_.max_restarts));
    }
    restarted.push_back(m);
  }
  return restarted;
}

bool Supervisor::RestartPending(bool workers) const {
  for (const auto& [member, s] : states_) {
    if (member->is_worker == workers && s.restart_pending) return true;
  }
  return false;
}

}  // namespace ps::launcher
