#include "worker/dataset.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"

namespace ps::worker {

absl::Status Dataset::Validate(const std::string& what) const {
  if (num_features <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": no features (num_features=", num_features, ")"));
  }
  if (num_classes < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": need at least 2 classes, got ", num_classes));
  }
  if (features.size() != labels.size() * static_cast<size_t>(num_features)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", features.size(), " feature values for ",
                     labels.size(), " examples of ", num_features, " features"));
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= num_classes) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": example ", i, " has label ", labels[i],
                       " outside [0, ", num_classes, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ShardMode> ParseShardMode(const std::string& name) {
  if (name == "contiguous") return ShardMode::kContiguous;
  if (name == "strided") return ShardMode::kStrided;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown shard mode '", name, "'; allowed: contiguous, strided"));
}

const char* ShardModeName(ShardMode mode) {
  return mode == ShardMode::kContiguous ? "contiguous" : "strided";
}

absl::StatusOr<Dataset> ShardDataset(const Dataset& data, int index, int count,
                                     ShardMode mode) {
  if (count <= 0 || index < 0 || index >= count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker index ", index, " is not in [0, ", count, ")"));
  }
  const int64_t per_shard = data.size() / count;
  if (per_shard == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot split ", data.size(), " examples over ", count,
                     " workers: the shards would be empty"));
  }
  std::vector<int64_t> indices(per_shard);
  for (int64_t i = 0; i < per_shard; ++i) {
    indices[i] = mode == ShardMode::kContiguous ? index * per_shard + i
                                                : i * count + index;
  }
  Dataset shard;
  shard.num_features = data.num_features;
  shard.num_classes = data.num_classes;
  GatherBatch(data, indices, &shard.features, &shard.labels);
  return shard;
}

void GatherBatch(const Dataset& data, absl::Span<const int64_t> indices,
                 std::vector<float>* features, std::vector<int32_t>* labels) {
  const size_t d = data.num_features;
  features->resize(indices.size() * d);
  labels->resize(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    const int64_t src = indices[i];
    std::copy_n(data.features.data() + src * d, d, features->data() + i * d);
    (*labels)[i] = data.labels[src];
  }
}

std::vector<int64_t> EpochOrder(int64_t n, bool shuffle, uint64_t seed,
                                int epoch, int stream) {
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  if (!shuffle || n < 2) return order;
  // std::shuffle's algorithm is implementation-defined; this one is not.
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull +
                      static_cast<uint64_t>(epoch) * 1000003ull +
                      static_cast<uint64_t>(stream) * 7919ull);
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

}  // namespace ps::worker
