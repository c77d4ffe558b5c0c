#include "deploy/launcher/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

extern "C" char** environ;

namespace ps::launcher {
namespace {

// This process's environment plus `extra` ("NAME=value" entries replace
// inherited ones of the same name). Built before fork(): the child must not
// allocate.
std::vector<std::string> ChildEnvironment(
    const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    bool replaced = false;
    for (const std::string& x : extra) {
      const std::string name = x.substr(0, x.find('=') + 1);
      if (entry.compare(0, name.size(), name) == 0) replaced = true;
    }
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    std::vector<std::string> argv, const std::vector<std::string>& env) {
  int fds[2];
  // Non-blocking read end: the launcher polls it and drains it after the
  // child exited, when a grandchild may still hold the write end.
  if (pipe2(fds, O_CLOEXEC) != 0 ||
      fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> env_strings = ChildEnvironment(env);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // Own process group: a terminal's Ctrl-C reaches only the launcher.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);  // the launcher already died
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execve(args[0], args.data(), envp.data());
    std::fprintf(stderr, "cannot execute %s: %s\n", args[0],
                 std::strerror(errno));
    _exit(127);
  }
  // Also here, so that a signal to the group cannot precede the child's own
  // setpgid().
  setpgid(pid, pid);
  close(fds[1]);
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, fds[0]));
}

ChildProcess::~ChildProcess() {
  if (!exited_) {
    Signal(SIGKILL);
    waitpid(pid_, &wstatus_, 0);
  }
  if (fd_ >= 0) close(fd_);
}

void ChildProcess::ReadOutput(const LineSink& sink) {
  if (fd_ < 0) return;
  char buf[65536];
  const ssize_t n = read(fd_, buf, sizeof(buf));
  if (n > 0) {
    partial_.append(buf, n);
    size_t start = 0;
    for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos;
         start = nl + 1) {
      sink(partial_.substr(start, nl - start));
    }
    partial_.erase(0, start);
    return;
  }
  if (n < 0 && errno == EINTR) return;
  if (n < 0 && errno == EAGAIN && !exited_) return;
  if (!partial_.empty()) sink(partial_);
  partial_.clear();
  close(fd_);
  fd_ = -1;
}

bool ChildProcess::Reap(const LineSink& sink) {
  if (exited_) return false;
  int wstatus = 0;
  if (waitpid(pid_, &wstatus, WNOHANG) != pid_) return false;
  exited_ = true;
  wstatus_ = wstatus;
  // What the child left running in its group (a trainer under /bin/sh
  // whose shell was killed) must not outlive it: a restart would run next
  // to it. The group id cannot have been reused while such a process
  // exists; with none left this finds no group.
  kill(-pid_, SIGKILL);
  // Drain what the child left in the pipe; stops at end of file, or when
  // the pipe is empty although a grandchild still holds its write end.
  while (fd_ >= 0) ReadOutput(sink);
  return true;
}

void ChildProcess::Signal(int signo) {
  if (exited_) return;
  if (kill(-pid_, signo) != 0) kill(pid_, signo);
}

std::string ExitText(int wstatus) {
  if (WIFEXITED(wstatus)) {
    return absl::StrCat("exited with code ", WEXITSTATUS(wstatus));
  }
  if (WIFSIGNALED(wstatus)) {
    return absl::StrCat("was killed by signal ", WTERMSIG(wstatus), " (",
                        strsignal(WTERMSIG(wstatus)), ")");
  }
  return absl::StrCat("ended with wait status ", wstatus);
}

bool ExitedCleanly(int wstatus) {
  return WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
}

}  // namespace ps::launcher
