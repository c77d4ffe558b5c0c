#include "deploy/launcher/process_set.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace ps::launcher {

ProcessSet::Member* ProcessSet::Add(std::string name, bool is_worker,
                                    int index, std::vector<std::string> argv,
                                    std::vector<std::string> env) {
  auto member = std::make_unique<Member>();
  member->name = std::move(name);
  member->is_worker = is_worker;
  member->index = index;
  member->argv = std::move(argv);
  member->env = std::move(env);
  member->env.push_back(absl::StrCat(kLogPrefixEnvVar, "="));
  members_.push_back(std::move(member));
  return members_.back().get();
}

absl::Status ProcessSet::Start(Member* m) {
  ASSIGN_OR_RETURN(m->process, ChildProcess::Start(m->argv, m->env));
  m->exit_reported = false;
  return absl::OkStatus();
}

bool ProcessSet::Pump(int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<Member*> owners;
  for (const std::unique_ptr<Member>& m : members_) {
    if (m->process != nullptr && m->process->output_fd() >= 0) {
      fds.push_back({m->process->output_fd(), POLLIN, 0});
      owners.push_back(m.get());
    }
  }
  if (interrupt_fd_ >= 0) {
    fds.push_back({interrupt_fd_, POLLIN, 0});
    owners.push_back(nullptr);
  }
  bool interrupted = false;
  const int n = poll(fds.data(), fds.size(), timeout_ms);
  for (size_t i = 0; n > 0 && i < fds.size(); ++i) {
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    Member* m = owners[i];
    if (m == nullptr) {
      // Consumed, so that stopping the children afterwards does not spin
      // on a readable fd.
      char signals[64];
      (void)!read(interrupt_fd_, signals, sizeof(signals));
      interrupted = true;
      continue;
    }
    m->process->ReadOutput(
        [this, m](const std::string& line) { on_line_(*m, line); });
  }
  for (const std::unique_ptr<Member>& m : members_) {
    Member* member = m.get();
    if (member->process == nullptr) continue;
    member->process->Reap([this, member](const std::string& line) {
      on_line_(*member, line);
    });
  }
  return interrupted;
}

std::vector<ProcessSet::Member*> ProcessSet::TakeExited() {
  std::vector<Member*> out;
  for (const std::unique_ptr<Member>& m : members_) {
    if (m->process != nullptr && !m->process->running() &&
        !m->exit_reported) {
      m->exit_reported = true;
      out.push_back(m.get());
    }
  }
  return out;
}

ProcessSet::Member* ProcessSet::Find(bool is_worker, int index) {
  for (const std::unique_ptr<Member>& m : members_) {
    if (m->is_worker == is_worker && m->index == index) return m.get();
  }
  return nullptr;
}

bool ProcessSet::AnyRunning(bool workers) const {
  for (const std::unique_ptr<Member>& m : members_) {
    if (m->is_worker == workers && m->running()) return true;
  }
  return false;
}

void ProcessSet::Stop(std::optional<bool> workers, double grace_s) {
  auto selected = [&](const Member& m) {
    return m.running() && (!workers || m.is_worker == *workers);
  };
  for (const std::unique_ptr<Member>& m : members_) {
    if (selected(*m)) m->process->Signal(SIGTERM);
  }
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  while (Running(workers) && elapsed_s() < grace_s) Pump(50);
  for (const std::unique_ptr<Member>& m : members_) {
    if (selected(*m)) {
      console_->Message(absl::StrCat(m->name, " did not stop within ", grace_s,
                                     " s; killing it"));
      m->process->Signal(SIGKILL);
    }
  }
  while (Running(workers)) Pump(50);
}

bool ProcessSet::Running(std::optional<bool> workers) const {
  for (const std::unique_ptr<Member>& m : members_) {
    if (m->process != nullptr && m->process->running() &&
        (!workers || m->is_worker == *workers)) {
      return true;
    }
  }
  return false;
}

}  // namespace ps::launcher
