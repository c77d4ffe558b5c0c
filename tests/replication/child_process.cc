#include "tests/replication/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"

namespace ps::testing {

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    std::vector<std::string> argv, const std::string& stderr_path) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const int err_fd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  if (err_fd >= 0) close(err_fd);
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = pid;
  child->stdin_fd_ = in[1];
  child->stdout_fd_ = out[0];
  child->name_ = absl::StrCat("pid ", pid);
  return child;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    kill(pid_, SIGCONT);
    waitpid(pid_, nullptr, 0);
  }
  if (stdin_fd_ >= 0) close(stdin_fd_);
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

bool ChildProcess::TakeLine(std::string* line) {
  const size_t newline = buffer_.find('\n');
  if (newline == std::string::npos) return false;
  *line = buffer_.substr(0, newline);
  buffer_.erase(0, newline + 1);
  lines_.push_back(*line);
  return true;
}

bool ChildProcess::Fill() {
  char chunk[4096];
  const ssize_t n = read(stdout_fd_, chunk, sizeof(chunk));
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  buffer_.append(chunk, static_cast<size_t>(n));
  return true;
}

absl::StatusOr<std::string> ChildProcess::ReadLine(absl::Duration timeout) {
  absl::StatusOr<std::pair<size_t, std::string>> line = NextLine({this}, timeout);
  if (!line.ok()) return line.status();
  return line->second;
}

absl::StatusOr<std::pair<size_t, std::string>> ChildProcess::NextLine(
    const std::vector<ChildProcess*>& children, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    std::vector<pollfd> fds;
    std::vector<size_t> index;
    for (size_t i = 0; i < children.size(); ++i) {
      std::string line;
      if (children[i]->TakeLine(&line)) return std::make_pair(i, line);
      if (!children[i]->eof_) {
        fds.push_back(pollfd{children[i]->stdout_fd_, POLLIN, 0});
        index.push_back(i);
      }
    }
    if (fds.empty()) return absl::UnavailableError("every child's output ended");
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          absl::StrCat("no line after ", absl::FormatDuration(timeout)));
    }
    const int ready = poll(fds.data(), fds.size(),
                           static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("poll: ", strerror(errno)));
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents != 0) children[index[k]]->Fill();
    }
  }
}

absl::Status ChildProcess::Signal(int signal) {
  if (pid_ <= 0) return absl::FailedPreconditionError("child already reaped");
  if (kill(pid_, signal) != 0) {
    return absl::InternalError(absl::StrCat("kill: ", strerror(errno)));
  }
  if (signal == SIGKILL) {
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  return absl::OkStatus();
}

absl::StatusOr<int> ChildProcess::CloseAndWait(absl::Duration timeout) {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  stdin_fd_ = -1;
  const absl::Time deadline = absl::Now() + timeout;
  while (pid_ > 0) {
    int wstatus = 0;
    if (waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;
      return wstatus;
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(name_, " did not exit in time"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return absl::FailedPreconditionError("child already reaped");
}

}  // namespace ps::testing
