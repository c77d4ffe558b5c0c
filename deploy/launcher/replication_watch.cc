#include "deploy/launcher/replication_watch.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "server/replication/in_sync.h"
#include "server/replication/etcd_options.h"
#include "server/replication/keys.h"

namespace ps::launcher {

absl::StatusOr<std::unique_ptr<ReplicationWatch>> ReplicationWatch::Create(
    const ClusterConfig& config) {
  absl::StatusOr<replication::EtcdClientOptions> options =
      replication::EtcdClientOptionsFor(config.replication);
  if (!options.ok()) return options.status();
  absl::StatusOr<std::unique_ptr<replication::EtcdClient>> etcd =
      replication::EtcdClient::Create(*options);
  if (!etcd.ok()) return etcd.status();
  absl::StatusOr<std::unique_ptr<replication::PrimaryResolver>> primaries =
      replication::PrimaryResolver::Create(config);
  if (!primaries.ok()) return primaries.status();
  return std::unique_ptr<ReplicationWatch>(new ReplicationWatch(
      config, *std::move(etcd), *std::move(primaries)));
}

ReplicationWatch::ReplicationWatch(
    const ClusterConfig& config, std::unique_ptr<replication::EtcdClient> etcd,
    std::unique_ptr<replication::PrimaryResolver> primaries)
    : num_shards_(static_cast<int>(config.servers.size())),
      replicas_(config.replication.factor),
      cluster_id_(replication::ClusterIdOf(config)),
      etcd_(std::move(etcd)),
      primaries_(std::move(primaries)) {}

std::string ReplicationWatch::Primary(int shard) const {
  return primaries_->Address(shard);
}

std::vector<int> ReplicationWatch::InSyncCounts() const {
  std::vector<int> counts;
  for (int shard = 0; shard < num_shards_; ++shard) {
    absl::StatusOr<std::optional<std::vector<std::string>>> ids =
        replication::ReadInSync(*etcd_, cluster_id_, shard);
    if (!ids.ok()) {
      counts.push_back(-1);
      continue;
    }
    int live = 0;
    for (const std::string& id : ids->value_or(std::vector<std::string>())) {
      live += exited_ids_.contains(id) ? 0 : 1;
    }
    counts.push_back(live);
  }
  return counts;
}

void ReplicationWatch::ReplicaExited(int shard, const std::string& address) {
  absl::StatusOr<std::optional<std::vector<std::string>>> ids =
      replication::ReadInSync(*etcd_, cluster_id_, shard);
  if (ids.ok() && ids->has_value()) {
    for (const std::string& id : **ids) {
      if (replication::ReplicaAddress(id) == address) exited_ids_.insert(id);
    }
  }
  if (shard < static_cast<int>(last_counts_.size()) &&
      last_counts_[shard] >= replicas_) {
    last_counts_[shard] = replicas_ - 1;
  }
}

std::vector<std::string> ReplicationWatch::Changes() {
  std::vector<int> counts = InSyncCounts();
  std::vector<std::string> lines;
  for (int shard = 0; shard < num_shards_; ++shard) {
    if (last_counts_.empty()) break;  // the first call: nothing to compare
    int& now = counts[shard];
    if (now < 0) now = last_counts_[shard];  // etcd did not answer: as before
    if (now == last_counts_[shard]) continue;
    if (now == replicas_) {
      lines.push_back(absl::StrCat("shard ", shard,
                                   ": fully replicated again (", now, " of ",
                                   replicas_, " replicas in sync)"));
    } else {
      lines.push_back(absl::StrCat("shard ", shard, ": ", now, " of ",
                                   replicas_, " replicas in sync"));
    }
  }
  last_counts_ = std::move(counts);
  return lines;
}

std::string ReplicationWatch::Describe(const std::vector<int>& counts) const {
  std::vector<std::string> parts;
  for (int shard = 0; shard < num_shards_; ++shard) {
    const std::string primary = Primary(shard);
    parts.push_back(absl::StrCat(
        "shard ", shard, ": primary ", primary.empty() ? "none" : primary,
        ", ", counts[shard] < 0 ? "etcd did not answer"
                                : absl::StrCat(counts[shard], " of ",
                                               replicas_, " in sync")));
  }
  return absl::StrJoin(parts, "; ");
}

absl::Status ReplicationWatch::WaitFullyReplicated(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    const std::vector<int> counts = InSyncCounts();
    bool full = true;
    for (int shard = 0; shard < num_shards_; ++shard) {
      full = full && counts[shard] == replicas_ && !Primary(shard).empty();
    }
    if (full) {
      last_counts_ = counts;
      return absl::OkStatus();
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("the shards were not fully replicated within ",
                       absl::FormatDuration(timeout), ": ", Describe(counts)));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

}  // namespace ps::launcher
