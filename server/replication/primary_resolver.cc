#include "server/replication/primary_resolver.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/replication/etcd_options.h"
#include "server/replication/keys.h"

namespace ps::replication {

absl::StatusOr<std::unique_ptr<PrimaryResolver>> PrimaryResolver::Create(
    const ClusterConfig& config) {
  absl::StatusOr<EtcdClientOptions> options =
      EtcdClientOptionsFor(config.replication);
  if (!options.ok()) return options.status();
  options->keepalive_time = absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<EtcdClient>> etcd = EtcdClient::Create(*options);
  if (!etcd.ok()) return etcd.status();
  std::unique_ptr<PrimaryResolver> resolver(new PrimaryResolver());
  resolver->etcd_ = *std::move(etcd);
  const std::string cluster = ClusterIdOf(config);
  for (size_t shard = 0; shard < config.servers.size(); ++shard) {
    resolver->views_.push_back(std::make_unique<ElectionView>(
        resolver->etcd_.get(),
        PrimaryElectionPrefix(cluster, static_cast<uint32_t>(shard))));
  }
  return resolver;
}

std::string PrimaryResolver::Address(int shard) const {
  if (shard < 0 || shard >= static_cast<int>(views_.size())) return "";
  const ElectionSnapshot snapshot = views_[shard]->snapshot();
  return snapshot.leader.has_value() ? snapshot.leader->value : "";
}

absl::Status PrimaryResolver::WaitForPrimaries(absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  for (size_t shard = 0; shard < views_.size(); ++shard) {
    absl::StatusOr<ElectionSnapshot> s = views_[shard]->WaitFor(
        [](const ElectionSnapshot& v) { return v.leader.has_value(); },
        std::max(deadline - absl::Now(), absl::ZeroDuration()));
    if (!s.ok()) {
      return absl::DeadlineExceededError(absl::StrCat(
          "shard ", shard, " has no primary: ", s.status().message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace ps::replication
