#include "deploy/launcher/process_set.h"

#include <poll.h>
#include <signal.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace ps::launcher {

absl::Status ProcessSet::Spawn(const std::string& name, bool is_worker,
                               int index, std::vector<std::string> argv) {
  ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> process,
                   ChildProcess::Start(std::move(argv),
                                       {absl::StrCat(kLogPrefixEnvVar, "=")}));
  auto member = std::make_unique<Member>();
  member->name = name;
  member->is_worker = is_worker;
  member->index = index;
  member->process = std::move(process);
  members_.push_back(std::move(member));
  return absl::OkStatus();
}

bool ProcessSet::Pump(int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<Member*> owners;
  for (const std::unique_ptr<Member>& m : members_) {
    if (m->process->output_fd() >= 0) {
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
      interrupted = true;
      continue;
    }
    m->process->ReadOutput(
        [this, m](const std::string& line) { on_line_(*m, line); });
  }
  for (const std::unique_ptr<Member>& m : members_) {
    Member* member = m.get();
    member->process->Reap([this, member](const std::string& line) {
      on_line_(*member, line);
    });
  }
  return interrupted;
}

std::vector<ProcessSet::Member*> ProcessSet::TakeExited() {
  std::vector<Member*> out;
  for (const std::unique_ptr<Member>& m : members_) {
    if (!m->process->running() && !m->reported) {
      m->reported = true;
      out.push_back(m.get());
    }
  }
  return out;
}

ProcessSet::Member* ProcessSet::FindRunning(bool is_worker, int index) {
  for (const std::unique_ptr<Member>& m : members_) {
    if (m->is_worker == is_worker && m->index == index &&
        !m->process->exited()) {
      return m.get();
    }
  }
  return nullptr;
}

bool ProcessSet::AnyRunning(bool workers) const {
  for (const std::unique_ptr<Member>& m : members_) {
    if (m->is_worker == workers && !m->process->exited()) return true;
  }
  return false;
}

void ProcessSet::Stop(std::optional<bool> workers, double grace_s) {
  auto selected = [&](const Member& m) {
    return !m.process->exited() && (!workers || m.is_worker == *workers);
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
    if (m->process->running() && (!workers || m->is_worker == *workers)) {
      return true;
    }
  }
  return false;
}

}  // namespace ps::launcher
