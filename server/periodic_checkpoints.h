// Periodic checkpoints cut at one sync step, run by whoever knows every
// server's address: shard 0's server with server.checkpoint_agreement: peers
// (cluster.servers are the real addresses), and ps_launch for the servers it
// starts (they bind ports the others do not know).
//
// The coordinator: at every multiple of
// server.checkpoint_interval_s of the wall clock it takes one coordinated
// checkpoint of the whole cluster through the client SDK (Client::Checkpoint,
// as `ps_ctl checkpoint` does: one id, two rounds that cut every sync table
// at the same step, server/step_holds.h). The servers keep no timer of their
// own: they write their parts when asked. Without this each shard's
// own timer copied its sync tables at its own next step boundary, so parts
// of one periodic id could be a step apart during training.
//
// A round that fails (a server down or still restoring: it refuses before
// writing anything) is logged and the next boundary tries again; the rule
// of server/checkpoint_set.h (restore the newest complete set) covers an id
// that some shards wrote and one did not.
//
// Thread safety: owns one thread; construction starts it, the destructor
// stops it (an attempt in progress ends within the client's RPC timeout).
#ifndef PS_SERVER_PERIODIC_CHECKPOINTS_H_
#define PS_SERVER_PERIODIC_CHECKPOINTS_H_

#include <memory>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "common/config.h"

namespace ps {

class PeriodicCheckpointCoordinator {
 public:
  // Checkpoints the cluster of `config` every `interval` (> 0).
  PeriodicCheckpointCoordinator(const ClusterConfig& config,
                                absl::Duration interval);
  ~PeriodicCheckpointCoordinator();

  PeriodicCheckpointCoordinator(const PeriodicCheckpointCoordinator&) = delete;
  PeriodicCheckpointCoordinator& operator=(
      const PeriodicCheckpointCoordinator&) = delete;

 private:
  void Loop();
  // One checkpoint; connects first when there is no client yet.
  void CheckpointOnce();

  const ClusterConfig config_;
  const absl::Duration interval_;
  std::unique_ptr<Client> client_;  // the loop's thread only
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace ps

#endif  // PS_SERVER_PERIODIC_CHECKPOINTS_H_
