// Key partitioning: which shard owns which keys of a table.
//
// Computed deterministically from the config on every process; no scheduler.
//  - Dense table of N elements over S shards: contiguous element ranges, the
//    first N % S shards one element larger (balanced to within one element).
//  - Sparse table: an id is mapped into the 64-bit key space by a stable hash
//    (XXH64, seed 0; never absl::Hash, which is salted per process) and the key
//    space is cut into S equal contiguous ranges.
#ifndef PS_COMMON_PARTITION_H_
#define PS_COMMON_PARTITION_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "common/config.h"

namespace ps {

// Half-open element range [begin, end).
struct Range {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
  bool operator==(const Range& o) const { return begin == o.begin && end == o.end; }
};

// Range of dense elements owned by `shard` of `num_shards` for a table of
// `size` elements. REQUIRES: shard < num_shards.
Range DenseShardRange(uint64_t size, uint32_t shard, uint32_t num_shards);

// Shard owning dense element `offset`. REQUIRES: offset < size.
uint32_t DenseShardOf(uint64_t offset, uint64_t size, uint32_t num_shards);

// Stable 64-bit key of a sparse id (same on every process and run).
uint64_t SparseKeyHash(uint64_t id);

// Shard owning sparse id `id`.
uint32_t SparseShardOf(uint64_t id, uint32_t num_shards);

// One piece of a dense range that falls on one shard.
struct DenseSlice {
  uint32_t shard = 0;
  Range range;  // global element offsets
};

// Splits [offset, offset + length) of a table of `size` elements by owner, in
// increasing offset order. REQUIRES: offset + length <= size.
std::vector<DenseSlice> SplitDenseRange(uint64_t offset, uint64_t length,
                                        uint64_t size, uint32_t num_shards);

// Fingerprint of everything the partitioning depends on: the number of shards
// and each table's id, name, kind, size and dim. Client and server compare it
// in the handshake.
uint64_t PartitionFingerprint(uint32_t num_shards,
                              absl::Span<const TableConfig> tables);

}  // namespace ps

#endif  // PS_COMMON_PARTITION_H_
