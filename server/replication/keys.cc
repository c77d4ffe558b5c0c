#include "server/replication/keys.h"

#include "absl/strings/str_cat.h"

namespace ps::replication {

std::string ClusterIdOf(const ClusterConfig& config) {
  if (!config.replication.cluster_id.empty()) {
    return config.replication.cluster_id;
  }
  std::string stem = config.source_path;
  if (const size_t slash = stem.rfind('/'); slash != std::string::npos) {
    stem = stem.substr(slash + 1);
  }
  if (const size_t dot = stem.find('.'); dot != std::string::npos) {
    stem = stem.substr(0, dot);
  }
  return stem.empty() ? "ps" : stem;
}

std::string ClusterKeyPrefix(const std::string& cluster_id) {
  return absl::StrCat("/ps/", cluster_id, "/");
}

std::string ShardKeyPrefix(const std::string& cluster_id, uint32_t shard) {
  return absl::StrCat(ClusterKeyPrefix(cluster_id), "shard/", shard, "/");
}

std::string PrimaryElectionPrefix(const std::string& cluster_id,
                                  uint32_t shard) {
  return ShardKeyPrefix(cluster_id, shard) + "primary/";
}

std::string InSyncKey(const std::string& cluster_id, uint32_t shard) {
  return ShardKeyPrefix(cluster_id, shard) + "in_sync";
}

}  // namespace ps::replication
