// Pure planning of data requests: how a dense range or a batch of sparse keys
// is cut into per-shard wire requests, and how sparse results are scattered
// back to the caller's key order. No I/O; deterministic; thread-compatible.
#ifndef PS_CLIENT_REQUEST_PLANNER_H_
#define PS_CLIENT_REQUEST_PLANNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace ps {

// One dense wire request: global elements [offset, offset + length) of one
// shard. `first_chunk` marks the first chunk of each shard's piece.
struct DenseChunk {
  uint32_t shard = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool first_chunk = false;
  bool operator==(const DenseChunk& o) const {
    return shard == o.shard && offset == o.offset && length == o.length &&
           first_chunk == o.first_chunk;
  }
};

// `value_bytes` below is the size of one value on the wire (the table's
// value type: 4 for float32, 2 for float16 / bfloat16).

// Elements per dense chunk for a chunk size in bytes (at least 1).
uint64_t DenseChunkElements(int64_t chunk_bytes,
                            size_t value_bytes = sizeof(float));

// Cuts [offset, offset + length) of a dense table of `table_size` elements
// over `num_shards` shards into chunks of at most DenseChunkElements(
// chunk_bytes, value_bytes) elements, in increasing offset order.
// REQUIRES: offset + length <= table_size, num_shards > 0.
std::vector<DenseChunk> PlanDense(uint64_t offset, uint64_t length,
                                  uint64_t table_size, uint32_t num_shards,
                                  int64_t chunk_bytes,
                                  size_t value_bytes = sizeof(float));

// Plan of a sparse operation on `keys` (any order, duplicates allowed).
//
// The unique keys are ordered by (shard, key): `unique_keys[u]` is the u-th.
// The caller positions holding unique key u are
// `positions[position_begin[u] .. position_begin[u + 1])`, increasing.
// Each request covers unique keys [first_unique, first_unique + num_keys), all
// on `shard` and sorted increasingly (what the server requires).
struct SparsePlan {
  struct Request {
    uint32_t shard = 0;
    uint64_t first_unique = 0;
    uint64_t num_keys = 0;
    bool first_chunk = false;  // first request of this shard
    bool operator==(const Request& o) const {
      return shard == o.shard && first_unique == o.first_unique &&
             num_keys == o.num_keys && first_chunk == o.first_chunk;
    }
  };

  std::vector<uint64_t> unique_keys;
  std::vector<uint64_t> position_begin;  // unique_keys.size() + 1 entries
  std::vector<uint64_t> positions;       // keys.size() entries
  std::vector<Request> requests;

  absl::Span<const uint64_t> RequestKeys(const Request& r) const {
    return absl::MakeConstSpan(unique_keys).subspan(r.first_unique, r.num_keys);
  }
};

// Keys per sparse request: each key costs 8 bytes of key plus `dim` values
// (pushed or returned); at least 1.
uint64_t SparseChunkKeys(int64_t chunk_bytes, uint32_t dim,
                         size_t value_bytes = sizeof(float));

// Plans a sparse operation. `shard_of(key)` gives a key's shard (< num_shards).
// REQUIRES: dim > 0, num_shards > 0.
template <typename ShardOf>
SparsePlan PlanSparse(absl::Span<const uint64_t> keys, uint32_t dim,
                      uint32_t num_shards, int64_t chunk_bytes,
                      ShardOf shard_of, size_t value_bytes = sizeof(float));

// The summed gradient rows of `plan`'s request `r`, in request key order:
// for each unique key, the sum of the rows of `grads` (keys.size() * dim
// floats in caller order) at its positions, summed in increasing position
// order. Written to out[0, r.num_keys * dim) (every element of it).
void SumRows(const SparsePlan& plan, const SparsePlan::Request& r,
             absl::Span<const float> grads, uint32_t dim, float* out);

// Copies the rows `values` (r.num_keys * dim floats, request key order) to
// every caller position of each key in `out` (keys.size() * dim floats).
void ScatterRows(const SparsePlan& plan, const SparsePlan::Request& r,
                 absl::Span<const float> values, uint32_t dim,
                 absl::Span<float> out);

// Implementation detail of PlanSparse: `shards[i]` is the shard of keys[i].
SparsePlan PlanSparseWithShards(absl::Span<const uint64_t> keys,
                                absl::Span<const uint32_t> shards,
                                uint32_t dim, uint32_t num_shards,
                                int64_t chunk_bytes, size_t value_bytes);

template <typename ShardOf>
SparsePlan PlanSparse(absl::Span<const uint64_t> keys, uint32_t dim,
                      uint32_t num_shards, int64_t chunk_bytes,
                      ShardOf shard_of, size_t value_bytes) {
  std::vector<uint32_t> shards(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) shards[i] = shard_of(keys[i]);
  return PlanSparseWithShards(keys, shards, dim, num_shards, chunk_bytes,
                              value_bytes);
}

}  // namespace ps

#endif  // PS_CLIENT_REQUEST_PLANNER_H_
