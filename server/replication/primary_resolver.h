// Where each shard's primary is now, from etcd's election views (one
// ElectionView per shard on one etcd connection): what a client of a
// replicated cluster plugs into ClientOptions::primary_address, so its data
// requests follow the primary across failovers.
//
// Thread safety: thread-safe. Owns the views' threads (joined by the
// destructor); must outlive every client it was given to.
#ifndef PS_SERVER_REPLICATION_PRIMARY_RESOLVER_H_
#define PS_SERVER_REPLICATION_PRIMARY_RESOLVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config.h"
#include "server/replication/election_view.h"
#include "server/replication/etcd_client.h"

namespace ps::replication {

class PrimaryResolver {
 public:
  // Watches every shard of `config` (replication.etcd_endpoints, the
  // cluster id of ClusterIdOf). INVALID_ARGUMENT for bad endpoints.
  static absl::StatusOr<std::unique_ptr<PrimaryResolver>> Create(
      const ClusterConfig& config);

  // The published address of shard `shard`'s current leader; "" when none
  // is known (between a primary's death and the next election, or before
  // the first answer from etcd).
  std::string Address(int shard) const;
  // Address() as a ClientOptions::primary_address.
  std::function<std::string(int)> AsFunction() const {
    return [this](int shard) { return Address(shard); };
  }
  // Waits until every shard has a leader; DEADLINE_EXCEEDED naming the
  // first shard without one.
  absl::Status WaitForPrimaries(absl::Duration timeout) const;

 private:
  PrimaryResolver() = default;

  std::unique_ptr<EtcdClient> etcd_;
  std::vector<std::unique_ptr<ElectionView>> views_;  // by shard
};

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_PRIMARY_RESOLVER_H_
