#include "deploy/ctl/replication_status.h"

#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/replication/election_view.h"
#include "server/replication/etcd_client.h"
#include "server/replication/in_sync.h"
#include "server/replication/etcd_options.h"
#include "server/replication/keys.h"

namespace ps::ctl {
namespace {

// A client of the etcd at `etcd_endpoints` as every process of the cluster
// reaches it (etcd_options.h), with `timeout` per call.
absl::StatusOr<std::unique_ptr<replication::EtcdClient>> ConnectEtcd(
    const std::vector<std::string>& etcd_endpoints,
    const EtcdTlsConfig& etcd_tls, absl::Duration timeout) {
  ReplicationConfig replication;
  replication.etcd_endpoints = etcd_endpoints;
  replication.etcd_tls = etcd_tls;
  ASSIGN_OR_RETURN(replication::EtcdClientOptions options,
                   replication::EtcdClientOptionsFor(replication));
  options.call_timeout = timeout;
  return replication::EtcdClient::Create(options);
}

absl::Status Unavailable(const std::vector<std::string>& etcd_endpoints,
                         const absl::Status& why) {
  return absl::UnavailableError(
      absl::StrCat("etcd ", absl::StrJoin(etcd_endpoints, ","),
                   " (replication state): ", why.message()));
}

// One shard's primary and in_sync set; `contenders` gets the address of
// every replica in its election (the running ones, the primary first).
absl::StatusOr<ShardReplication> ReadShard(
    const replication::EtcdClient& etcd, const std::string& cluster_id,
    uint32_t shard, absl::Duration timeout,
    std::vector<std::string>* contenders) {
  ShardReplication out;
  out.shard = shard;
  // The election's own reading of who leads (lowest create revision).
  replication::ElectionView view(
      &etcd, replication::PrimaryElectionPrefix(cluster_id, shard));
  absl::StatusOr<replication::ElectionSnapshot> election = view.WaitFor(
      [](const replication::ElectionSnapshot& s) { return s.synced; },
      timeout);
  if (!election.ok()) return election.status();
  if (election->leader.has_value()) {
    out.primary = election->leader->value;
    out.term = election->leader->create_revision;
  }
  for (const auto& [revision, candidate] : election->candidates) {
    contenders->push_back(candidate.value);
  }
  absl::StatusOr<std::optional<std::vector<std::string>>> in_sync =
      replication::ReadInSync(etcd, cluster_id, shard);
  if (!in_sync.ok()) return in_sync.status();
  if (in_sync->has_value()) out.in_sync = **in_sync;
  return out;
}

// Shards [0, num_shards) as ReadShard reads them; contenders[i] for shard
// i. Errors: UNAVAILABLE naming `etcd_endpoints`.
absl::StatusOr<std::vector<ShardReplication>> ReadShards(
    const replication::EtcdClient& etcd,
    const std::vector<std::string>& etcd_endpoints,
    const std::string& cluster_id, uint32_t num_shards,
    absl::Duration timeout,
    std::vector<std::vector<std::string>>* contenders) {
  std::vector<ShardReplication> shards;
  contenders->assign(num_shards, {});
  for (uint32_t i = 0; i < num_shards; ++i) {
    absl::StatusOr<ShardReplication> shard =
        ReadShard(etcd, cluster_id, i, timeout, &(*contenders)[i]);
    if (!shard.ok()) return Unavailable(etcd_endpoints, shard.status());
    shards.push_back(*std::move(shard));
  }
  return shards;
}

}  // namespace

absl::StatusOr<std::vector<ShardReplication>> ReadReplication(
    const std::vector<std::string>& etcd_endpoints,
    const EtcdTlsConfig& etcd_tls, const std::string& cluster_id,
    uint32_t num_shards, absl::Duration timeout) {
  ASSIGN_OR_RETURN(std::unique_ptr<replication::EtcdClient> etcd,
                   ConnectEtcd(etcd_endpoints, etcd_tls, timeout));
  std::vector<std::vector<std::string>> contenders;
  return ReadShards(*etcd, etcd_endpoints, cluster_id, num_shards, timeout,
                    &contenders);
}

absl::StatusOr<ClearedReplication> ClearReplication(
    const std::vector<std::string>& etcd_endpoints,
    const EtcdTlsConfig& etcd_tls, const std::string& cluster_id,
    uint32_t num_shards, absl::Duration timeout) {
  ASSIGN_OR_RETURN(std::unique_ptr<replication::EtcdClient> etcd,
                   ConnectEtcd(etcd_endpoints, etcd_tls, timeout));
  std::vector<std::vector<std::string>> contenders;
  ClearedReplication out;
  ASSIGN_OR_RETURN(out.shards, ReadShards(*etcd, etcd_endpoints, cluster_id,
                                          num_shards, timeout, &contenders));
  std::vector<std::string> running;
  etcdserverpb::TxnRequest txn;
  for (uint32_t i = 0; i < num_shards; ++i) {
    if (!contenders[i].empty()) {
      running.push_back(absl::StrCat("shard ", i, ": ",
                                     absl::StrJoin(contenders[i], ", ")));
    }
    // Nobody in the shard's election: for an empty range etcd compares a
    // zero key, whose create revision is 0.
    const std::string election =
        replication::PrimaryElectionPrefix(cluster_id, i);
    etcdserverpb::Compare* nobody = txn.add_compare();
    nobody->set_key(election);
    nobody->set_range_end(replication::PrefixRangeEnd(election));
    nobody->set_target(etcdserverpb::Compare::CREATE);
    nobody->set_result(etcdserverpb::Compare::EQUAL);
    nobody->set_create_revision(0);
  }
  const std::string stop_first =
      "stop every server of the cluster first (a stopped server's election "
      "key goes with its lease, within replication.lease_ttl_s)";
  if (!running.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "replicas of cluster '", cluster_id, "' are running (",
        absl::StrJoin(running, "; "), "); nothing was deleted: ", stop_first));
  }
  const std::string prefix = replication::ClusterKeyPrefix(cluster_id);
  etcdserverpb::DeleteRangeRequest* clear =
      txn.add_success()->mutable_request_delete_range();
  clear->set_key(prefix);
  clear->set_range_end(replication::PrefixRangeEnd(prefix));
  absl::StatusOr<etcdserverpb::TxnResponse> response = etcd->Txn(txn);
  if (!response.ok()) return Unavailable(etcd_endpoints, response.status());
  if (!response->succeeded()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a replica of cluster '", cluster_id,
        "' started while its keys were being cleared; nothing was deleted: ",
        stop_first));
  }
  out.deleted_keys =
      response->responses(0).response_delete_range().deleted();
  return out;
}

}  // namespace ps::ctl
