#include "tests/replication/relay_ceiling.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/bench/transport_bench_process.h"

namespace ps::testing {
namespace {

constexpr char kLoopback[] = "127.0.0.1";

// The exit status as words, for error messages.
std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("killed by signal ", WTERMSIG(status));
  return absl::StrCat("wait status ", status);
}

}  // namespace

int RunRelayCeilingRole(const std::string& role, const std::string& port_file,
                        int next_port, pid_t parent_pid) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have died before prctl took effect.
  if (getppid() != parent_pid) return 1;
  // A client that goes away mid-answer must not kill the relay silently.
  signal(SIGPIPE, SIG_IGN);
  if (role == kTcpPeerRole) return bench::RunTcpPeer(kLoopback, port_file);
  if (role == kTcpRelayRole) {
    return bench::RunTcpRelay(kLoopback, port_file, kLoopback, next_port);
  }
  std::fprintf(stderr, "unknown --role=%s\n", role.c_str());
  return 2;
}

absl::StatusOr<std::unique_ptr<RelayCeiling>> RelayCeiling::Start() {
  // Not make_unique: the constructor is private. From here on, the
  // destructor cleans up whatever was started.
  std::unique_ptr<RelayCeiling> ceiling(new RelayCeiling());
  std::string dir = TestTempDir() + "/relay_ceiling_XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", dir, " failed"));
  }
  ceiling->dir_ = dir;
  absl::StatusOr<int> port = ceiling->StartChild(kTcpPeerRole, {}, &ceiling->peer_);
  if (!port.ok()) return port.status();
  ceiling->peer_port_ = *port;
  port = ceiling->StartChild(kTcpRelayRole, {absl::StrCat("--next_port=", *port)},
                             &ceiling->relay_);
  if (!port.ok()) return port.status();
  ceiling->relay_port_ = *port;
  return ceiling;
}

RelayCeiling::~RelayCeiling() {
  relay_.reset();
  peer_.reset();
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

absl::StatusOr<int> RelayCeiling::StartChild(const std::string& role,
                                             const std::vector<std::string>& extra,
                                             std::unique_ptr<TestProcess>* child) {
  const std::string port_file = absl::StrCat(dir_, "/", role, ".port");
  std::vector<std::string> argv = {bench::SelfPath(), absl::StrCat("--role=", role),
                                   absl::StrCat("--port_file=", port_file),
                                   absl::StrCat("--parent_pid=", getpid())};
  argv.insert(argv.end(), extra.begin(), extra.end());
  absl::StatusOr<std::unique_ptr<TestProcess>> started =
      TestProcess::Start(argv, absl::StrCat(dir_, "/", role, ".log"));
  if (!started.ok()) return started.status();
  *child = std::move(*started);
  // The port file appears through a rename, so it is complete when it exists.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    std::ifstream in(port_file);
    int port = 0;
    if (in >> port) return port;
    if (std::optional<int> status = (*child)->Wait(absl::Milliseconds(20))) {
      return absl::InternalError(absl::StrCat(role, " ", DescribeExit(*status),
                                              " before listening: ", (*child)->Log()));
    }
  }
  return absl::DeadlineExceededError(
      absl::StrCat(role, " wrote no port in 30 s: ", (*child)->Log()));
}

absl::StatusOr<std::vector<bench::Timing>> RelayCeiling::Measure(
    bool relayed, const std::vector<bench::Exchange>& exchanges,
    const std::function<int(const bench::Exchange&)>& reps) {
  std::vector<bench::Timing> timings = bench::MeasureTcpExchanges(
      kLoopback, relayed ? relay_port_ : peer_port_, exchanges, 1, reps);
  for (const bench::Timing& t : timings) {
    if (!t.measured()) {
      return absl::UnavailableError(absl::StrCat(
          "a TCP ", relayed ? "relayed" : "direct",
          " exchange broke; relay: ", relay_->Log(), " peer: ", peer_->Log()));
    }
  }
  return timings;
}

absl::Status RelayCeiling::Stop() {
  bench::StopTcpPeer(kLoopback, relay_port_);
  for (TestProcess* child : {relay_.get(), peer_.get()}) {
    const std::optional<int> status = child->Wait(absl::Seconds(10));
    if (!status.has_value() || *status != 0) {
      return absl::InternalError(absl::StrCat(
          child == relay_.get() ? kTcpRelayRole : kTcpPeerRole, " ",
          status.has_value() ? DescribeExit(*status) : "still runs 10 s after the stop",
          ": ", child->Log()));
    }
  }
  return absl::OkStatus();
}

}  // namespace ps::testing
