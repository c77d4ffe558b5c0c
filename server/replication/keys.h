// The etcd keys of a replicated cluster (server/replication/DESIGN.md,
// section 2), one home for every process that reads or writes them.
#ifndef PS_SERVER_REPLICATION_KEYS_H_
#define PS_SERVER_REPLICATION_KEYS_H_

#include <cstdint>
#include <string>

#include "common/config.h"

namespace ps::replication {

// The cluster id a config uses: replication.cluster_id, else the stem of the
// config file's name, else "ps".
std::string ClusterIdOf(const ClusterConfig& config);
// "/ps/<cluster_id>/": every key of the cluster (the Kubernetes completion
// hook deletes this prefix after a job).
std::string ClusterKeyPrefix(const std::string& cluster_id);
// "/ps/<cluster_id>/shard/<shard>/".
std::string ShardKeyPrefix(const std::string& cluster_id, uint32_t shard);
// The election of the shard's primary (values: the replicas' addresses).
std::string PrimaryElectionPrefix(const std::string& cluster_id,
                                  uint32_t shard);
// The shard's in_sync set: comma-separated replica ids, written only by the
// primary through Elector::GuardedTxn; only a replica listed there may serve
// as primary.
std::string InSyncKey(const std::string& cluster_id, uint32_t shard);

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_KEYS_H_
