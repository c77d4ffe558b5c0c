// What the launcher prints about the cluster when a worker looks stuck:
// each process's state as the kernel sees it (running, sleeping, stopped,
// ...) and each shard's own view from GetStats (every table's sync step and
// version, every worker's clock and liveness).
#ifndef PS_DEPLOY_LAUNCHER_CLUSTER_STATUS_H_
#define PS_DEPLOY_LAUNCHER_CLUSTER_STATUS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/config.h"

namespace ps::launcher {

// The state letter of /proc/<pid>/stat in words: "running", "sleeping",
// "waiting for I/O", "stopped" (SIGSTOP and friends), "zombie", ...;
// "gone" when the process does not exist.
std::string OsProcessState(pid_t pid);

struct ProcessStatus {
  std::string name;  // "server 0"
  pid_t pid = -1;    // -1: not running
  std::string exit;  // with pid -1: how it ended ("exited with code 0")
};

// Status lines, without a prefix: "processes: server 0 pid 12 sleeping,
// worker 0 exited with code 0, ..."; then per shard "shard 0 at 127.0.0.1:4000: table mlp step 812
// version 812; worker 0 clock 813 live, worker 1 clock 700 evicted", or one
// line naming why the shards could not be asked. `config` names the
// servers' real addresses; GetStats waits at most `timeout_ms` (the caller
// is blocked that long at most twice: connect, then the call).
std::vector<std::string> ClusterStatusLines(
    const ClusterConfig& config, const std::vector<ProcessStatus>& processes,
    int64_t timeout_ms);

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_CLUSTER_STATUS_H_
