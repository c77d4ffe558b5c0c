// What ps_launch knows of a replicated cluster (replication.factor > 1),
// read from etcd: each shard's primary (PrimaryResolver) and how many of its
// replicas are in its in_sync set. The launcher uses it to start the
// workers only once every shard is fully replicated, to say when a shard is
// not any more and when it is again (after a replica was restarted and
// caught up), and to find the primary that --kill_server kills.
//
// Thread safety: not thread-safe; drive it from the launcher's thread.
#ifndef PS_DEPLOY_LAUNCHER_REPLICATION_WATCH_H_
#define PS_DEPLOY_LAUNCHER_REPLICATION_WATCH_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/config.h"
#include "server/replication/etcd_client.h"
#include "server/replication/primary_resolver.h"

namespace ps::launcher {

class ReplicationWatch {
 public:
  // `config` names the servers' etcd endpoints and cluster id.
  static absl::StatusOr<std::unique_ptr<ReplicationWatch>> Create(
      const ClusterConfig& config);

  // Shard `shard`'s primary address; "" when none is known.
  std::string Primary(int shard) const;

  // Replicas in each shard's in_sync set (by shard); -1 where etcd did not
  // answer.
  std::vector<int> InSyncCounts() const;

  // One line per shard whose in_sync count changed since the previous call
  // (the first call reports nothing): "shard 0: 1 of 2 replicas in sync" or
  // "shard 0: fully replicated again (2 of 2 replicas in sync)".
  std::vector<std::string> Changes();

  // The replica process of `shard` at `address` exited. Its id stays in the
  // in_sync set until the primary (or the next one) rewrites it, so from
  // now on that id is not counted; and the shard counts as not fully
  // replicated, so Changes() reports it fully replicated again even when
  // the set shrank and grew back between two calls.
  void ReplicaExited(int shard, const std::string& address);

  // Waits until every shard has a primary and all its replicas in sync;
  // DEADLINE_EXCEEDED naming each shard's state otherwise.
  absl::Status WaitFullyReplicated(absl::Duration timeout);

 private:
  ReplicationWatch(const ClusterConfig& config,
                   std::unique_ptr<replication::EtcdClient> etcd,
                   std::unique_ptr<replication::PrimaryResolver> primaries);
  std::string Describe(const std::vector<int>& counts) const;

  const int num_shards_;
  const int replicas_;
  const std::string cluster_id_;
  std::unique_ptr<replication::EtcdClient> etcd_;
  std::unique_ptr<replication::PrimaryResolver> primaries_;
  std::vector<int> last_counts_;  // as of the previous Changes()
  // Ids of exited replica processes (ReplicaExited), never counted again.
  absl::flat_hash_set<std::string> exited_ids_;
};

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_REPLICATION_WATCH_H_
