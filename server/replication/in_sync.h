// A shard's in_sync set (keys.h's InSyncKey): the ids of the replicas that
// hold every acknowledged push; only the primary writes it (through
// Elector::GuardedTxn), and only a replica listed there may become primary.
// One home for the id format and for reading the set, shared by the
// replicas, ps_launch and the tests.
#ifndef PS_SERVER_REPLICATION_IN_SYNC_H_
#define PS_SERVER_REPLICATION_IN_SYNC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/replication/etcd_client.h"

namespace ps::replication {

// A new id for a replica process at `address`: "<address>/<random hex>".
// Unique per process, so a replica restarted on the same address (as
// ps_launch and Kubernetes do) is never taken for its predecessor.
std::string NewReplicaId(const std::string& address);

// The address part of a replica id.
absl::string_view ReplicaAddress(absl::string_view id);

// The shard's in_sync ids; nullopt when the key does not exist (the shard
// never had a primary). etcd's error when it does not answer.
absl::StatusOr<std::optional<std::vector<std::string>>> ReadInSync(
    const EtcdClient& etcd, const std::string& cluster_id, uint32_t shard);

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_IN_SYNC_H_
