#include "common/partition.h"

#include <string>

#include "xxhash.h"

namespace ps {

Range DenseShardRange(uint64_t size, uint32_t shard, uint32_t num_shards) {
  const uint64_t base = size / num_shards;
  const uint64_t extra = size % num_shards;
  // Shards [0, extra) hold base + 1 elements, the rest base.
  const uint64_t begin = shard * base + (shard < extra ? shard : extra);
  const uint64_t len = base + (shard < extra ? 1 : 0);
  return Range{begin, begin + len};
}

uint32_t DenseShardOf(uint64_t offset, uint64_t size, uint32_t num_shards) {
  const uint64_t base = size / num_shards;
  const uint64_t extra = size % num_shards;
  const uint64_t big_span = extra * (base + 1);  // elements in the larger shards
  if (offset < big_span) return static_cast<uint32_t>(offset / (base + 1));
  return static_cast<uint32_t>(extra + (offset - big_span) / base);
}

uint64_t SparseKeyHash(uint64_t id) { return XXH64(&id, sizeof(id), 0); }

uint32_t SparseShardOf(uint64_t id, uint32_t num_shards) {
  // floor(hash * S / 2^64): equal contiguous ranges of the key space.
  const unsigned __int128 wide =
      static_cast<unsigned __int128>(SparseKeyHash(id)) * num_shards;
  return static_cast<uint32_t>(wide >> 64);
}

std::vector<DenseSlice> SplitDenseRange(uint64_t offset, uint64_t length,
                                        uint64_t size, uint32_t num_shards) {
  std::vector<DenseSlice> slices;
  uint64_t pos = offset;
  const uint64_t end = offset + length;
  while (pos < end) {
    const uint32_t shard = DenseShardOf(pos, size, num_shards);
    const Range owned = DenseShardRange(size, shard, num_shards);
    const uint64_t piece_end = owned.end < end ? owned.end : end;
    slices.push_back(DenseSlice{shard, Range{pos, piece_end}});
    pos = piece_end;
  }
  return slices;
}

uint64_t PartitionFingerprint(uint32_t num_shards,
                              absl::Span<const TableConfig> tables) {
  XXH64_state_t* state = XXH64_createState();
  XXH64_reset(state, 0);
  auto add = [state](const void* p, size_t n) { XXH64_update(state, p, n); };
  add(&num_shards, sizeof(num_shards));
  for (const TableConfig& t : tables) {
    const uint32_t kind = static_cast<uint32_t>(t.kind);
    add(&t.table_id, sizeof(t.table_id));
    add(t.name.data(), t.name.size());
    add(&kind, sizeof(kind));
    add(&t.size, sizeof(t.size));
    add(&t.dim, sizeof(t.dim));
  }
  const uint64_t fingerprint = XXH64_digest(state);
  XXH64_freeState(state);
  return fingerprint;
}

}  // namespace ps
