// ps_ctl's commands, as a library the binary's main() and tests call.
//
//   status      every shard: address, gRPC health, tables (kind,
//               consistency, size, per-shard version / step / elements /
//               rows), workers (clock, live) as each shard sees them; for a
//               replicated cluster each shard's primary, term and in_sync
//               set (from etcd)
//   stats       per-table throughput counters (pushes, pulls, bytes in / out,
//               applied updates), per shard and summed
//   checkpoint  the Checkpoint RPC on every shard, waiting until durable
//
// Every command first health-checks every shard in parallel (fail fast,
// `timeout` each); a shard that is unreachable or not serving is named with
// its address and the command fails (exit code 1) without waiting out the
// SDK's connect timeout. Then it connects with the public client SDK
// (client/client.h) as a non-worker client.
//
// Output: aligned human-readable tables, or with `json` one JSON object on a
// line (see the README in this directory for the fields).
//
// Thread safety: RunCommand may be called from any thread; it owns the
// threads it starts (one per shard probe) and joins them before returning.
#ifndef PS_DEPLOY_CTL_CTL_H_
#define PS_DEPLOY_CTL_CTL_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/client.h"
#include "common/config.h"

namespace ps::ctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // a server unreachable, an RPC failed
inline constexpr int kExitUsage = 2;  // bad command line or config

struct CtlOptions {
  std::string command;  // "status", "stats" or "checkpoint"
  // servers, tls, auth token; tables (from a config) are checked by the
  // SDK's handshake, empty = adopt the servers' tables.
  ClientOptions client;
  bool json = false;
  // Health probes and, for status / stats, the SDK's RPCs. Default 3 s.
  absl::Duration timeout = absl::Seconds(3);
  // How long `checkpoint` waits for the shards. Default 10 min.
  absl::Duration checkpoint_timeout = absl::Minutes(10);
  // Replicated clusters (replication.factor > 1; set from the config): the
  // etcd holding each shard's primary and in_sync set, and the cluster's id
  // there. Then every command probes each shard's elected primary instead
  // of servers[i], and `status` also shows the primaries, their terms and
  // the in_sync sets.
  std::vector<std::string> etcd_endpoints;
  EtcdTlsConfig etcd_tls;  // replication.etcd_tls
  std::string cluster_id;
};

// Runs one command; writes its report to `out` and errors (each naming the
// server concerned) to `err`. Returns the process exit code.
int RunCommand(const CtlOptions& options, std::ostream& out, std::ostream& err);

// `text` as a JSON string literal (quotes, escapes; bytes >= 0x80 are passed
// through, control characters escaped as \u00XX).
std::string JsonString(const std::string& text);

}  // namespace ps::ctl

#endif  // PS_DEPLOY_CTL_CTL_H_
