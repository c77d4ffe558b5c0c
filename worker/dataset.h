// In-memory classification data sets and their deterministic sharding.
//
// A Dataset holds `size()` examples as a dense row-major feature matrix
// (size() x num_features, float32) and one integer class label per example in
// [0, num_classes). The readers (idx_reader.h, libsvm_reader.h) produce it;
// data_loader.h picks the reader from the training config.
//
// Thread safety: a Dataset is a plain value; concurrent const access is safe.
#ifndef PS_WORKER_DATASET_H_
#define PS_WORKER_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ps::worker {

struct Dataset {
  int num_features = 0;
  int num_classes = 0;
  std::vector<float> features;  // size() * num_features, row-major
  std::vector<int32_t> labels;  // size()

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  // Features of example `i`. REQUIRES: 0 <= i < size().
  absl::Span<const float> row(int64_t i) const {
    return absl::MakeConstSpan(features).subspan(i * num_features,
                                                 num_features);
  }
  // OK when the sizes agree and every label is in [0, num_classes);
  // otherwise INVALID_ARGUMENT naming `what` and the first problem.
  absl::Status Validate(const std::string& what) const;
};

// How the training set is cut into equal shards, one per worker.
enum class ShardMode {
  // Worker w of W gets examples [w * m, (w + 1) * m) with m = size / W.
  kContiguous,
  // Worker w of W gets examples w, w + W, w + 2W, ... (m of them).
  kStrided,
};

// "contiguous" | "strided"; INVALID_ARGUMENT otherwise.
absl::StatusOr<ShardMode> ParseShardMode(const std::string& name);
const char* ShardModeName(ShardMode mode);

// Worker `index`'s shard of `data` among `count` workers. Every shard has
// exactly floor(size / count) examples (the remainder is dropped), so all
// workers run the same number of steps per epoch. INVALID_ARGUMENT when
// index is not in [0, count) or a shard would be empty.
absl::StatusOr<Dataset> ShardDataset(const Dataset& data, int index, int count,
                                     ShardMode mode);

// Copies examples `indices` of `data` into `features` (indices.size() *
// num_features floats, resized) and `labels`. REQUIRES: valid indices.
void GatherBatch(const Dataset& data, absl::Span<const int64_t> indices,
                 std::vector<float>* features, std::vector<int32_t>* labels);

// The example order of one epoch: 0..n-1 when `shuffle` is false, else a
// permutation that depends only on (seed, epoch, stream) (std::mt19937_64 and
// a Fisher-Yates shuffle of our own, so it is the same on every platform).
std::vector<int64_t> EpochOrder(int64_t n, bool shuffle, uint64_t seed,
                                int epoch, int stream);

}  // namespace ps::worker

#endif  // PS_WORKER_DATASET_H_
