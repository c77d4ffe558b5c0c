// A test network for multi-process C++ tests: each test "host" is a Linux
// network namespace with one address on the test subnet, all joined by one
// switch; faults (cuts, isolation, link down, loss, rate, delay) are made
// inside the namespaces. README.md in this directory has the safety rules.
//
// The network is built and owned by a separate process (`netns.py serve`,
// one implementation shared with the Python tests) that this class talks to
// over a pipe. When the test process ends in any way (returns, fails an
// ASSERT, throws, gets a signal, crashes) the pipe closes and that process
// kills whatever still runs in the namespaces and removes the namespaces,
// links and the root namespace's blackhole route.
//
// Rules for the test process (the orchestrator):
//  - It stays in the root namespace and never talks to a test address itself
//    (the blackhole route refuses it at once). Servers run through
//    Place()/ExecPrefix(); client code runs through Fork().
//  - Fork() forks without exec: the test process must not have started gRPC
//    (no Client, channel or server in it) before it forks.
//
// Thread safety: not thread-safe; drive it from the test's main thread.
#ifndef PS_TESTS_NETNS_NETNS_H_
#define PS_TESTS_NETNS_NETNS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/cluster_harness.h"

namespace ps::testing {

// Skips the current gtest test when `status` says this machine cannot run
// namespace tests (not root, no `ip`, `ip netns add` refused) or lacks a
// feature (netem delay): such statuses are UNIMPLEMENTED. For use in a TEST
// body or SetUp() (needs "gtest/gtest.h").
#define PS_SKIP_IF_NETNS_UNAVAILABLE(status)                 \
  do {                                                       \
    const absl::Status& ps_netns_status_ = (status);         \
    if (absl::IsUnimplemented(ps_netns_status_)) {           \
      GTEST_SKIP() << ps_netns_status_.message();            \
    }                                                        \
  } while (false)

// One line-oriented pipe pair (either end of a Fork()).
class LineChannel {
 public:
  LineChannel(int read_fd, int write_fd) : read_fd_(read_fd), write_fd_(write_fd) {}
  ~LineChannel();
  LineChannel(const LineChannel&) = delete;
  LineChannel& operator=(const LineChannel&) = delete;

  // Writes `line` and a newline. UNAVAILABLE when the other end is closed.
  absl::Status Send(const std::string& line);
  // The next line without its newline. DEADLINE_EXCEEDED after `timeout`,
  // UNAVAILABLE when the other end closed first.
  absl::StatusOr<std::string> Receive(absl::Duration timeout);

 private:
  const int read_fd_;
  const int write_fd_;
  std::string buffer_;
};

// A child process forked into a host's namespace (TestNetwork::Fork).
// Destroying it SIGKILLs the child if it still runs.
class HostProcess {
 public:
  HostProcess(pid_t pid, int read_fd, int write_fd)
      : pid_(pid), channel_(read_fd, write_fd) {}
  ~HostProcess();

  // The parent's end of the channel the child's body gets.
  LineChannel& channel() { return channel_; }
  pid_t pid() const { return pid_; }
  // Waits for the child's exit: its exit code, or 128 + the signal that
  // killed it. DEADLINE_EXCEEDED after `timeout` (the child keeps running).
  absl::StatusOr<int> Wait(absl::Duration timeout);

 private:
  pid_t pid_;
  LineChannel channel_;
};

// Shape of both directions of one host's link. Zero = not limited.
struct LinkShape {
  int64_t rate_bits_per_s = 0;  // tbf, or netem's rate together with delay
  absl::Duration delay;         // one way, each direction (needs netem)
  absl::Duration jitter;        // (needs netem)
  double loss_percent = 0;      // each direction, in [0, 100]
};

class TestNetwork {
 public:
  // Builds one namespace per host (names [a-z][a-z0-9]{0,11}, at most 200)
  // with addresses .1, .2, ... of the test subnet in the order given.
  // UNIMPLEMENTED (with the reason) where namespaces are not permitted;
  // INTERNAL / INVALID_ARGUMENT for anything else.
  static absl::StatusOr<std::unique_ptr<TestNetwork>> Create(
      const std::vector<std::string>& hosts);

  // Removes everything; waits for the owner process (up to 30 s).
  ~TestNetwork();

  const std::string& subnet() const { return subnet_; }
  // The host's address on the test subnet, e.g. "10.213.0.1" ("" for an
  // unknown host).
  std::string ip(const std::string& host) const;
  // The host's namespace name: a run-unique prefix and the host name.
  std::string netns(const std::string& host) const;
  // Run id: the namespaces' prefix number and the blackhole route's metric.
  int run_id() const { return run_id_; }
  // Empty when delay and jitter work; otherwise why not (e.g. a kernel
  // without sch_netem).
  const std::string& netem_unavailable() const { return netem_unavailable_; }

  // Prefix that runs a command inside `host`: {"/usr/sbin/ip", "netns",
  // "exec", netns(host)}.
  std::vector<std::string> ExecPrefix(const std::string& host) const;
  // A ps_server placement in `host` for ClusterSpec::placements.
  ServerPlacement Place(const std::string& host) const;

  // Faults. Each replaces the previous state of what it names; they are
  // silent to the senders except LinkDown. UNIMPLEMENTED where the feature is
  // missing (delay without netem, loss / cuts without nft).
  absl::Status SetLink(const std::string& host, const LinkShape& shape);
  // Drops every packet between a and b, both ways.
  absl::Status Cut(const std::string& a, const std::string& b);
  // Drops every frame to and from `host`.
  absl::Status Isolate(const std::string& host);
  // Undoes Cut(a, b).
  absl::Status Heal(const std::string& a, const std::string& b);
  // Undoes every cut and isolation.
  absl::Status HealAll();
  // Sets the host's own interface down / up inside its namespace: its new
  // connections fail at once (ENETUNREACH), its peers see silence.
  absl::Status LinkDown(const std::string& host);
  absl::Status LinkUp(const std::string& host);

  // Forks a child that enters `host`'s namespace, runs `body` with its end
  // of a channel to the parent and exits with body's return value. The child
  // keeps only stdin/stdout/stderr and the channel open, and is SIGKILLed
  // when the test process dies.
  absl::StatusOr<std::unique_ptr<HostProcess>> Fork(
      const std::string& host,
      const std::function<int(LineChannel&)>& body) const;

 private:
  struct Host {
    std::string netns;
    std::string ip;
  };
  TestNetwork() = default;
  absl::Status Start(const std::vector<std::string>& hosts);
  absl::Status Command(const std::string& line);

  pid_t owner_pid_ = -1;
  std::unique_ptr<LineChannel> owner_;
  std::string ip_binary_;
  std::string subnet_;
  std::string switch_netns_;
  int run_id_ = 0;
  std::string netem_unavailable_;
  std::map<std::string, Host> hosts_;
};

}  // namespace ps::testing

#endif  // PS_TESTS_NETNS_NETNS_H_
