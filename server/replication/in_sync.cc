#include "server/replication/in_sync.h"

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/replication/keys.h"

namespace ps::replication {

std::string NewReplicaId(const std::string& address) {
  return absl::StrCat(
      address, "/",
      absl::Hex(absl::Uniform<uint64_t>(absl::BitGen()), absl::kZeroPad16));
}

absl::string_view ReplicaAddress(absl::string_view id) {
  return id.substr(0, id.rfind('/'));
}

absl::StatusOr<std::optional<std::vector<std::string>>> ReadInSync(
    const EtcdClient& etcd, const std::string& cluster_id, uint32_t shard) {
  etcdserverpb::RangeRequest range;
  range.set_key(InSyncKey(cluster_id, shard));
  absl::StatusOr<etcdserverpb::RangeResponse> r = etcd.Range(range);
  if (!r.ok()) return r.status();
  if (r->kvs_size() == 0) return std::nullopt;
  return std::vector<std::string>(absl::StrSplit(r->kvs(0).value(), ','));
}

}  // namespace ps::replication
