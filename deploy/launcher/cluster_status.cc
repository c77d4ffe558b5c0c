#include "deploy/launcher/cluster_status.h"

#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/client.h"

namespace ps::launcher {
namespace {

std::string ShardLine(const ShardStats& s) {
  std::vector<std::string> tables, workers;
  for (const ShardStats::Table& t : s.tables) {
    tables.push_back(
        absl::StrCat("table ", t.name, " step ", t.step, " version ", t.version));
  }
  for (const ShardStats::Worker& w : s.workers) {
    workers.push_back(absl::StrCat("worker ", w.worker_id, " clock ", w.clock,
                                   w.live ? " live" : " evicted"));
  }
  return absl::StrCat("shard ", s.shard_index, " at ", s.address, ": ",
                      tables.empty() ? "no tables" : absl::StrJoin(tables, ", "),
                      "; ",
                      workers.empty() ? "no workers" : absl::StrJoin(workers, ", "));
}

}  // namespace

std::string OsProcessState(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  if (pid <= 0 || !std::getline(in, stat)) return "gone";
  // "pid (comm) S ...": comm may hold spaces and parentheses; the state
  // follows the last ')'.
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return "unknown";
  switch (stat[paren + 2]) {
    case 'R':
      return "running";
    case 'S':
      return "sleeping";
    case 'D':
      return "waiting for I/O";
    case 'T':
      return "stopped";
    case 't':
      return "stopped by a debugger";
    case 'Z':
      return "zombie";
    default:
      return absl::StrCat("state ", std::string(1, stat[paren + 2]));
  }
}

std::vector<std::string> ClusterStatusLines(
    const ClusterConfig& config, const std::vector<ProcessStatus>& processes,
    int64_t timeout_ms) {
  std::vector<std::string> lines;
  std::vector<std::string> states;
  for (const ProcessStatus& p : processes) {
    states.push_back(p.pid > 0 ? absl::StrCat(p.name, " pid ", p.pid, " ",
                                              OsProcessState(p.pid))
                               : absl::StrCat(p.name, " ", p.exit));
  }
  lines.push_back(absl::StrCat("processes: ", absl::StrJoin(states, ", ")));
  ClientOptions options = ClientOptions::FromConfig(config, -1);
  options.client.rpc_timeout_ms = timeout_ms;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  absl::StatusOr<std::vector<ShardStats>> stats =
      client.ok() ? (*client)->GetStats() : client.status();
  if (!stats.ok()) {
    lines.push_back(absl::StrCat("shards: GetStats failed: ",
                                 stats.status().ToString()));
    return lines;
  }
  for (const ShardStats& s : *stats) lines.push_back(ShardLine(s));
  return lines;
}

}  // namespace ps::launcher
