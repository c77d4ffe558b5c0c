#include "deploy/ctl/replication_status.h"

#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/replication/election_view.h"
#include "server/replication/etcd_client.h"
#include "server/replication/in_sync.h"
#include "server/replication/etcd_options.h"
#include "server/replication/keys.h"

namespace ps::ctl {

absl::StatusOr<std::vector<ShardReplication>> ReadReplication(
    const std::vector<std::string>& etcd_endpoints,
    const EtcdTlsConfig& etcd_tls, const std::string& cluster_id,
    uint32_t num_shards, absl::Duration timeout) {
  replication::EtcdClientOptions options;
  options.endpoints = etcd_endpoints;
  options.call_timeout = timeout;
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      replication::EtcdCredentials(etcd_tls);
  if (!credentials.ok()) return credentials.status();
  options.credentials = *std::move(credentials);
  absl::StatusOr<std::unique_ptr<replication::EtcdClient>> etcd =
      replication::EtcdClient::Create(options);
  if (!etcd.ok()) return etcd.status();
  auto unavailable = [&](const absl::Status& why) {
    return absl::UnavailableError(
        absl::StrCat("etcd ", absl::StrJoin(etcd_endpoints, ","),
                     " (replication state): ", why.message()));
  };
  std::vector<ShardReplication> shards(num_shards);
  for (uint32_t i = 0; i < num_shards; ++i) {
    shards[i].shard = i;
    // The election's own reading of who leads (lowest create revision).
    replication::ElectionView view(
        etcd->get(), replication::PrimaryElectionPrefix(cluster_id, i));
    absl::StatusOr<replication::ElectionSnapshot> election = view.WaitFor(
        [](const replication::ElectionSnapshot& s) { return s.synced; },
        timeout);
    if (!election.ok()) return unavailable(election.status());
    if (election->leader.has_value()) {
      shards[i].primary = election->leader->value;
      shards[i].term = election->leader->create_revision;
    }
    absl::StatusOr<std::optional<std::vector<std::string>>> in_sync =
        replication::ReadInSync(**etcd, cluster_id, i);
    if (!in_sync.ok()) return unavailable(in_sync.status());
    if (in_sync->has_value()) shards[i].in_sync = **in_sync;
  }
  return shards;
}

}  // namespace ps::ctl
