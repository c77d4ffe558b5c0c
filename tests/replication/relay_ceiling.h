// replication_bench's ceiling: what any primary-backup scheme that waits for
// its backup's ack must at least pay on this machine, measured with raw TCP
// between processes (tests/bench/transport_bench_ceiling.h):
//
//   direct:   bench -> peer                    (one connection, ping-pong)
//   relayed:  bench -> relay -> peer           (the relay answers the bench
//             only after the peer answered it; the payload is passed on cut-
//             through, as it arrives, so it is a best case for throughput)
//
// The peer and the relay are child processes of the bench, started from the
// bench's own binary (/proc/self/exe) in the roles below, bound to
// 127.0.0.1, with PR_SET_PDEATHSIG so that nothing outlives a crashed bench.
//
// Thread safety: not thread-safe; drive it from one thread.
#ifndef PS_TESTS_REPLICATION_RELAY_CEILING_H_
#define PS_TESTS_REPLICATION_RELAY_CEILING_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/bench/transport_bench_ceiling.h"
#include "tests/test_process.h"

namespace ps::testing {

// The roles; a binary that uses RelayCeiling must, when started with
// `--role=<one of them> --port_file=F [--next_port=P] --parent_pid=Q`, return
// RunRelayCeilingRole(role, F, P, Q) from main (those four flag names).
inline constexpr char kTcpPeerRole[] = "tcp_peer";
inline constexpr char kTcpRelayRole[] = "tcp_relay";

// The child side: sets PR_SET_PDEATHSIG, ignores SIGPIPE and runs the peer
// (RunTcpPeer) or the relay in front of the peer at 127.0.0.1:next_port
// (RunTcpRelay) until stopped. Returns the process's exit code (1 when the
// process that started it, `parent_pid`, is already gone; 2 for an unknown
// role).
int RunRelayCeilingRole(const std::string& role, const std::string& port_file,
                        int next_port, pid_t parent_pid);

class RelayCeiling {
 public:
  // Starts the peer, then the relay in front of it (their port files and
  // logs in a new directory under $TEST_TMPDIR or /tmp).
  static absl::StatusOr<std::unique_ptr<RelayCeiling>> Start();
  // SIGKILLs what still runs, reaps it and removes the directory.
  ~RelayCeiling();

  RelayCeiling(const RelayCeiling&) = delete;
  RelayCeiling& operator=(const RelayCeiling&) = delete;

  // Each exchange ping-ponged reps(exchange) times (after two warm-ups) on
  // one new connection, to the peer directly or through the relay; an
  // error when any exchange went unmeasured (a connection broke).
  absl::StatusOr<std::vector<bench::Timing>> Measure(
      bool relayed, const std::vector<bench::Exchange>& exchanges,
      const std::function<int(const bench::Exchange&)>& reps);

  // Sends the relay the stop header (it stops the peer) and waits for both
  // to exit; an error (with their logs) unless both exited with code 0.
  absl::Status Stop();

 private:
  RelayCeiling() = default;
  // Starts `role` (with `extra` flags) and waits for its port file.
  absl::StatusOr<int> StartChild(const std::string& role,
                                 const std::vector<std::string>& extra,
                                 std::unique_ptr<TestProcess>* child);

  std::string dir_;
  std::unique_ptr<TestProcess> peer_, relay_;
  int peer_port_ = 0, relay_port_ = 0;
};

}  // namespace ps::testing

#endif  // PS_TESTS_REPLICATION_RELAY_CEILING_H_
