#include "tests/netns/netns.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace ps::testing {
namespace {

// The owner process's interpreter: Debian's (see TEAM rules / TOOLCHAIN.md).
constexpr char kPython[] = "/usr/bin/python3";
// Build and start-up of the namespaces; slow only on a very busy machine.
constexpr absl::Duration kStartTimeout = absl::Seconds(60);
constexpr absl::Duration kCommandTimeout = absl::Seconds(60);
constexpr absl::Duration kCloseTimeout = absl::Seconds(30);

// Closes every descriptor but 0-2 and `keep` (in a child after fork: no
// other pipe of the test, e.g. the owner's stdin, may stay open in it).
void CloseAllFdsExcept(const std::vector<int>& keep) {
  std::vector<int> to_close;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (const dirent* entry = readdir(dir)) {
    int fd = -1;
    if (!absl::SimpleAtoi(entry->d_name, &fd) || fd <= 2 || fd == dirfd(dir)) {
      continue;
    }
    if (std::find(keep.begin(), keep.end(), fd) == keep.end()) {
      to_close.push_back(fd);
    }
  }
  closedir(dir);
  for (int fd : to_close) close(fd);
}

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

// Waits for `pid` up to `timeout`; its wait status, or nullopt.
std::optional<int> WaitPid(pid_t pid, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int wstatus = 0;
    const pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid) return wstatus;
    if (r < 0) return 0;  // not our child any more (already reaped)
    if (absl::Now() > deadline) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(5));
  }
}

}  // namespace

// ----------------------------------------------------------------- channel

LineChannel::~LineChannel() {
  close(read_fd_);
  if (write_fd_ != read_fd_) close(write_fd_);
}

absl::Status LineChannel::Send(const std::string& line) {
  const std::string data = line + "\n";
  size_t done = 0;
  while (done < data.size()) {
    // MSG_NOSIGNAL is for sockets; a pipe's reader being gone gives EPIPE
    // with SIGPIPE, which gtest processes leave at its default. Block it.
    sigset_t pipe_set, old_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
    const ssize_t n = write(write_fd_, data.data() + done, data.size() - done);
    const int saved = errno;
    if (n < 0 && saved == EPIPE) {
      timespec zero = {0, 0};
      sigtimedwait(&pipe_set, nullptr, &zero);  // consume the pending SIGPIPE
    }
    pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
    if (n < 0) {
      if (saved == EINTR) continue;
      return absl::UnavailableError(
          absl::StrCat("channel closed: ", strerror(saved)));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> LineChannel::Receive(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    const size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat(
          "no line within ", absl::FormatDuration(timeout)));
    }
    pollfd pfd = {read_fd_, POLLIN, 0};
    const int ready =
        poll(&pfd, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno != EINTR) return Errno("poll");
    if (ready <= 0) continue;
    char chunk[4096];
    const ssize_t n = read(read_fd_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::UnavailableError(absl::StrCat(
          "channel closed by the other end",
          buffer_.empty() ? "" : absl::StrCat(" after '", buffer_, "'")));
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

// ------------------------------------------------------------ host process

HostProcess::~HostProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

absl::StatusOr<int> HostProcess::Wait(absl::Duration timeout) {
  if (pid_ <= 0) return absl::FailedPreconditionError("already waited for");
  const std::optional<int> wstatus = WaitPid(pid_, timeout);
  if (!wstatus.has_value()) {
    return absl::DeadlineExceededError(absl::StrCat(
        "process ", pid_, " still runs after ", absl::FormatDuration(timeout)));
  }
  pid_ = -1;
  return WIFSIGNALED(*wstatus) ? 128 + WTERMSIG(*wstatus)
                               : WEXITSTATUS(*wstatus);
}

// ----------------------------------------------------------------- network

absl::StatusOr<std::unique_ptr<TestNetwork>> TestNetwork::Create(
    const std::vector<std::string>& hosts) {
  std::unique_ptr<TestNetwork> net(new TestNetwork());
  absl::Status started = net->Start(hosts);
  if (!started.ok()) return started;  // ~TestNetwork removes what was built
  return net;
}

absl::Status TestNetwork::Start(const std::vector<std::string>& hosts) {
  int to_owner[2], from_owner[2];
  if (pipe2(to_owner, O_CLOEXEC) != 0) return Errno("pipe2");
  if (pipe2(from_owner, O_CLOEXEC) != 0) {
    close(to_owner[0]);
    close(to_owner[1]);
    return Errno("pipe2");
  }
  const std::string script = RunfilePath("tests/netns/netns.py");
  std::vector<std::string> args = {kPython, script, "serve"};
  args.insert(args.end(), hosts.begin(), hosts.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) return Errno("fork");
  if (pid == 0) {
    // Its own session: a signal to the test's process group (Ctrl-C, Bazel's
    // timeout) must not stop it before it has cleaned up.
    setsid();
    dup2(to_owner[0], STDIN_FILENO);
    dup2(from_owner[1], STDOUT_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(to_owner[0]);
  close(from_owner[1]);
  owner_pid_ = pid;
  owner_ = std::make_unique<LineChannel>(from_owner[0], to_owner[1]);

  while (true) {
    absl::StatusOr<std::string> line = owner_->Receive(kStartTimeout);
    if (!line.ok()) {
      return absl::InternalError(absl::StrCat(
          script, " serve: ", line.status().message()));
    }
    const std::vector<std::string> words =
        absl::StrSplit(*line, absl::MaxSplits(' ', 1));
    const std::string rest = words.size() > 1 ? words[1] : "";
    if (words[0] == "unavailable") return absl::UnimplementedError(rest);
    if (words[0] == "error") return absl::InvalidArgumentError(rest);
    if (words[0] == "subnet") {
      subnet_ = rest;
    } else if (words[0] == "ip") {
      ip_binary_ = rest;
    } else if (words[0] == "switch") {
      switch_netns_ = rest;
    } else if (words[0] == "host") {
      const std::vector<std::string> h = absl::StrSplit(rest, ' ');
      if (h.size() != 3) return absl::InternalError("bad line: " + *line);
      hosts_[h[0]] = Host{h[1], h[2]};
    } else if (words[0] == "netem") {
      netem_unavailable_ = rest == "1" ? "" : rest.substr(2);
    } else if (words[0] == "ready") {
      if (!absl::SimpleAtoi(rest, &run_id_)) {
        return absl::InternalError("bad line: " + *line);
      }
      return absl::OkStatus();
    } else {
      return absl::InternalError("unexpected line from netns.py: " + *line);
    }
  }
}

TestNetwork::~TestNetwork() {
  if (owner_pid_ <= 0) return;
  owner_.reset();  // EOF on the owner's stdin: it removes everything and exits
  if (!WaitPid(owner_pid_, kCloseTimeout).has_value()) {
    // Stuck: kill it; the next run sweeps what it leaves.
    kill(owner_pid_, SIGKILL);
    waitpid(owner_pid_, nullptr, 0);
  }
}

std::string TestNetwork::ip(const std::string& name) const {
  auto it = hosts_.find(name);
  return it == hosts_.end() ? "" : it->second.ip;
}

std::string TestNetwork::netns(const std::string& name) const {
  auto it = hosts_.find(name);
  return it == hosts_.end() ? "" : it->second.netns;
}

std::vector<std::string> TestNetwork::ExecPrefix(
    const std::string& name) const {
  return {ip_binary_, "netns", "exec", netns(name)};
}

ServerPlacement TestNetwork::Place(const std::string& name) const {
  ServerPlacement placement;
  placement.listen_ip = ip(name);
  placement.command_prefix = ExecPrefix(name);
  return placement;
}

absl::Status TestNetwork::Command(const std::string& line) {
  if (owner_ == nullptr) return absl::FailedPreconditionError("not started");
  absl::Status sent = owner_->Send(line);
  if (!sent.ok()) return absl::InternalError(absl::StrCat(line, ": ", sent.message()));
  absl::StatusOr<std::string> reply = owner_->Receive(kCommandTimeout);
  if (!reply.ok()) {
    return absl::InternalError(absl::StrCat(line, ": ", reply.status().message()));
  }
  if (*reply == "ok") return absl::OkStatus();
  if (absl::StartsWith(*reply, "unavailable ")) {
    return absl::UnimplementedError(reply->substr(12));
  }
  return absl::InvalidArgumentError(absl::StrCat(line, ": ", *reply));
}

absl::Status TestNetwork::SetLink(const std::string& name,
                                  const LinkShape& shape) {
  return Command(absl::StrCat(
      "link ", name, " rate_bit=", shape.rate_bits_per_s,
      " delay_us=", absl::ToInt64Microseconds(shape.delay),
      " jitter_us=", absl::ToInt64Microseconds(shape.jitter),
      " loss_pct=", shape.loss_percent));
}

absl::Status TestNetwork::Cut(const std::string& a, const std::string& b) {
  return Command(absl::StrCat("cut ", a, " ", b));
}

absl::Status TestNetwork::Isolate(const std::string& name) {
  return Command("isolate " + name);
}

absl::Status TestNetwork::Heal(const std::string& a, const std::string& b) {
  return Command(absl::StrCat("heal ", a, " ", b));
}

absl::Status TestNetwork::HealAll() { return Command("heal"); }

absl::Status TestNetwork::LinkDown(const std::string& name) {
  return Command("down " + name);
}

absl::Status TestNetwork::LinkUp(const std::string& name) {
  return Command("up " + name);
}

absl::StatusOr<std::unique_ptr<HostProcess>> TestNetwork::Fork(
    const std::string& name,
    const std::function<int(LineChannel&)>& body) const {
  if (hosts_.count(name) == 0) {
    return absl::InvalidArgumentError("unknown host '" + name + "'");
  }
  const std::string ns_path = "/run/netns/" + netns(name);
  int to_child[2], from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0) return Errno("pipe2");
  if (pipe2(from_child, O_CLOEXEC) != 0) {
    close(to_child[0]);
    close(to_child[1]);
    return Errno("pipe2");
  }
  const pid_t parent = getpid();
  fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = fork();
  if (pid < 0) return Errno("fork");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);  // the parent died before prctl
    const int ns_fd = open(ns_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns_fd < 0 || setns(ns_fd, CLONE_NEWNET) != 0) {
      fprintf(stderr, "netns: cannot enter %s: %s\n", ns_path.c_str(),
              strerror(errno));
      _exit(126);
    }
    CloseAllFdsExcept({to_child[0], from_child[1]});
    int code;
    {
      LineChannel channel(to_child[0], from_child[1]);
      code = body(channel);
    }
    fflush(nullptr);
    _exit(code);  // never back into the test framework
  }
  close(to_child[0]);
  close(from_child[1]);
  return std::make_unique<HostProcess>(pid, from_child[0], to_child[1]);
}

}  // namespace ps::testing
