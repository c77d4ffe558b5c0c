// A replicated cluster's state in etcd (replication.factor > 1), for ps_ctl:
// what `ps_ctl status` shows of each shard (its elected primary, term and
// in_sync set; server/replication/DESIGN.md, section 2), and
// `ps_ctl clear-replication`, which deletes a stopped cluster's keys so that
// a new run under the same cluster id can start.
//
// Thread safety: stateless functions.
#ifndef PS_DEPLOY_CTL_REPLICATION_STATUS_H_
#define PS_DEPLOY_CTL_REPLICATION_STATUS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/config.h"

namespace ps::ctl {

struct ShardReplication {
  uint32_t shard = 0;
  std::string primary;  // the leader's address; "" while none is elected
  int64_t term = 0;     // the leader's term (0 while none)
  // Replica ids ("<address>/<incarnation>") of the replicas holding every
  // acknowledged push; empty before the shard's first primary.
  std::vector<std::string> in_sync;
};

// Reads shards [0, num_shards) of cluster `cluster_id` from etcd at
// `etcd_endpoints` (over TLS per `etcd_tls`). UNAVAILABLE (naming the
// endpoints) when etcd does not answer within `timeout`; a bad TLS file:
// EtcdCredentials's error.
absl::StatusOr<std::vector<ShardReplication>> ReadReplication(
    const std::vector<std::string>& etcd_endpoints,
    const EtcdTlsConfig& etcd_tls, const std::string& cluster_id,
    uint32_t num_shards, absl::Duration timeout);

// What ClearReplication deleted.
struct ClearedReplication {
  int64_t deleted_keys = 0;
  // Each shard as it was just before (no primary: nobody was running).
  std::vector<ShardReplication> shards;
};

// Deletes every key of cluster `cluster_id` (ClusterKeyPrefix in
// server/replication/keys.h: the shards' in_sync sets and elections), but
// only while no replica of shards [0, num_shards) runs. A running replica
// always holds a key in its shard's election; a stopped or killed one's key
// goes with its lease (within replication.lease_ttl_s). The check and the
// delete are one etcd transaction, so a replica that starts in between
// makes it delete nothing. A replica alive but cut off from etcd holds no
// key either (it went with its lease), so the caller must know the servers
// are stopped; the check only catches the ones still connected.
//
// This is what a new run under the same cluster id needs after a run whose
// servers all died (a set left from it names replicas that no longer exist,
// so no new replica may become primary). It discards the acknowledged state
// those replicas held, which is gone with them anyway.
//
// FAILED_PRECONDITION naming the running replicas' addresses (nothing
// deleted); UNAVAILABLE and TLS errors as ReadReplication.
absl::StatusOr<ClearedReplication> ClearReplication(
    const std::vector<std::string>& etcd_endpoints,
    const EtcdTlsConfig& etcd_tls, const std::string& cluster_id,
    uint32_t num_shards, absl::Duration timeout);

}  // namespace ps::ctl

#endif  // PS_DEPLOY_CTL_REPLICATION_STATUS_H_
