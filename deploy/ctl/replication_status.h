// What etcd says about a replicated cluster's shards (replication.factor >
// 1), for `ps_ctl status`: each shard's elected primary (address and term)
// and its in_sync set (server/replication/DESIGN.md, section 2).
//
// Thread safety: a stateless function.
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

}  // namespace ps::ctl

#endif  // PS_DEPLOY_CTL_REPLICATION_STATUS_H_
