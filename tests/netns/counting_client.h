// A client process for the namespace tests: it runs inside a test host
// (TestNetwork::Fork), connects, and answers the test's commands one line
// each, over a table of kCountingTableSize floats that counts pushes (SGD,
// learning rate 1, gradient -1: every applied push adds exactly 1 to every
// value):
//   push N   N pushes of -1 one after the other -> "ok" | "error CODE MS MSG"
//            (stops at the first failure; MS: how long that push took)
//   pull     -> "value V" when every element equals V; else "halves A B"
//               when the first half is all A and the second all B (with 2
//               shards: each shard's value); else "mixed first V0 last VN"
//   p50 N    N pulls of the table -> "p50 MICROSECONDS"
// The first line it sends is "connected" or "error STATUS".
#ifndef PS_TESTS_NETNS_COUNTING_CLIENT_H_
#define PS_TESTS_NETNS_COUNTING_CLIENT_H_

#include <string>

#include "absl/time/time.h"
#include "client/client.h"
#include "tests/netns/netns.h"

namespace ps::testing {

constexpr int kCountingTableSize = 1024;  // floats: 4 KiB

// The `client:` section of the fault tests' cluster configs: keepalive
// notices a silent server within 1.5 s; reconnects start fast and go on
// long enough to outlast any fault a test makes.
inline constexpr char kFaultTestClientYaml[] = R"(client:
  rpc_timeout_ms: 30000
  keepalive_ms: 1000
  keepalive_timeout_ms: 500
  reconnect_initial_backoff_ms: 20
  reconnect_max_backoff_ms: 200
  max_reconnect_attempts: 1000
)";

// The body for TestNetwork::Fork; returns the process's exit code.
int CountingClient(const ClientOptions& options, LineChannel& channel);

// The test's side: sends `command` to a CountingClient (nothing when empty:
// then it reads the next line, e.g. "connected") and returns the reply, or
// the channel's error as text (DEADLINE_EXCEEDED after `timeout`).
std::string Ask(HostProcess& client, const std::string& command,
                absl::Duration timeout = absl::Seconds(60));

}  // namespace ps::testing

#endif  // PS_TESTS_NETNS_COUNTING_CLIENT_H_
