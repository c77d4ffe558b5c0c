#include "client/request_planner.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/partition.h"

namespace ps {

uint64_t DenseChunkElements(int64_t chunk_bytes, size_t value_bytes) {
  const int64_t elements = chunk_bytes / static_cast<int64_t>(value_bytes);
  return elements > 0 ? static_cast<uint64_t>(elements) : 1;
}

std::vector<DenseChunk> PlanDense(uint64_t offset, uint64_t length,
                                  uint64_t table_size, uint32_t num_shards,
                                  int64_t chunk_bytes, size_t value_bytes) {
  const uint64_t per_chunk = DenseChunkElements(chunk_bytes, value_bytes);
  std::vector<DenseChunk> chunks;
  for (const DenseSlice& slice :
       SplitDenseRange(offset, length, table_size, num_shards)) {
    bool first = true;
    for (uint64_t pos = slice.range.begin; pos < slice.range.end;) {
      const uint64_t n = std::min(per_chunk, slice.range.end - pos);
      chunks.push_back(DenseChunk{slice.shard, pos, n, first});
      first = false;
      pos += n;
    }
  }
  return chunks;
}

uint64_t SparseChunkKeys(int64_t chunk_bytes, uint32_t dim,
                         size_t value_bytes) {
  const int64_t per_key =
      static_cast<int64_t>(sizeof(uint64_t)) +
      static_cast<int64_t>(dim) * static_cast<int64_t>(value_bytes);
  const int64_t keys = chunk_bytes / per_key;
  return keys > 0 ? static_cast<uint64_t>(keys) : 1;
}

SparsePlan PlanSparseWithShards(absl::Span<const uint64_t> keys,
                                absl::Span<const uint32_t> shards,
                                uint32_t dim, uint32_t num_shards,
                                int64_t chunk_bytes, size_t value_bytes) {
  SparsePlan plan;
  const uint64_t n = keys.size();
  // Order by (shard, key, position): equal keys become adjacent runs with
  // their positions increasing, and each shard's keys are sorted. An LSD
  // radix sort of (key, position, shard) records, which starts in position
  // order and is stable: one counting pass per key byte that any key uses,
  // then one by shard. (A comparison sort of positions through lookups was a
  // quarter of a client's CPU for 10,000-key batches.)
  struct Entry {
    uint64_t key;
    uint64_t position;
    uint32_t shard;
  };
  std::vector<Entry> order(n), scratch(n);
  uint64_t key_bits = 0;
  for (uint64_t i = 0; i < n; ++i) {
    order[i] = Entry{keys[i], i, shards[i]};
    key_bits |= keys[i];
  }
  std::vector<uint64_t> starts;
  auto stable_pass = [&](size_t buckets, auto bucket_of) {
    starts.assign(buckets + 1, 0);
    for (const Entry& e : order) ++starts[bucket_of(e) + 1];
    for (size_t b = 0; b < buckets; ++b) starts[b + 1] += starts[b];
    for (const Entry& e : order) scratch[starts[bucket_of(e)]++] = e;
    order.swap(scratch);
  };
  for (int shift = 0; shift < 64 && (key_bits >> shift) != 0; shift += 8) {
    stable_pass(256, [shift](const Entry& e) { return (e.key >> shift) & 0xff; });
  }
  if (num_shards > 1) {
    stable_pass(num_shards, [](const Entry& e) { return e.shard; });
  }
  plan.positions.resize(n);
  std::vector<uint32_t> unique_shard;
  for (uint64_t i = 0; i < n; ++i) {
    plan.positions[i] = order[i].position;
    if (i == 0 || order[i].key != order[i - 1].key) {
      plan.unique_keys.push_back(order[i].key);
      plan.position_begin.push_back(i);
      unique_shard.push_back(order[i].shard);
    }
  }
  plan.position_begin.push_back(n);

  const uint64_t per_request = SparseChunkKeys(chunk_bytes, dim, value_bytes);
  const uint64_t num_unique = plan.unique_keys.size();
  for (uint64_t u = 0; u < num_unique;) {
    const uint32_t shard = unique_shard[u];
    uint64_t end = u;
    while (end < num_unique && unique_shard[end] == shard) ++end;
    bool first = true;
    for (uint64_t begin = u; begin < end;) {
      const uint64_t count = std::min(per_request, end - begin);
      plan.requests.push_back(SparsePlan::Request{shard, begin, count, first});
      first = false;
      begin += count;
    }
    u = end;
  }
  return plan;
}

void SumRows(const SparsePlan& plan, const SparsePlan::Request& r,
             absl::Span<const float> grads, uint32_t dim, float* out) {
  const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
  char* dst = reinterpret_cast<char*>(out);
  std::vector<float> sum(dim);
  for (uint64_t u = r.first_unique; u < r.first_unique + r.num_keys; ++u) {
    const uint64_t begin = plan.position_begin[u];
    const uint64_t end = plan.position_begin[u + 1];
    const float* first_row = grads.data() + plan.positions[begin] * dim;
    if (end - begin == 1) {
      std::memcpy(dst, first_row, row_bytes);
    } else {
      std::copy(first_row, first_row + dim, sum.begin());
      for (uint64_t i = begin + 1; i < end; ++i) {
        const float* row = grads.data() + plan.positions[i] * dim;
        for (uint32_t d = 0; d < dim; ++d) sum[d] += row[d];
      }
      std::memcpy(dst, sum.data(), row_bytes);
    }
    dst += row_bytes;
  }
}

void ScatterRows(const SparsePlan& plan, const SparsePlan::Request& r,
                 absl::Span<const float> values, uint32_t dim,
                 absl::Span<float> out) {
  const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
  for (uint64_t j = 0; j < r.num_keys; ++j) {
    const uint64_t u = r.first_unique + j;
    const float* src = values.data() + j * dim;
    for (uint64_t i = plan.position_begin[u]; i < plan.position_begin[u + 1];
         ++i) {
      std::memcpy(out.data() + plan.positions[i] * dim, src, row_bytes);
    }
  }
}

}  // namespace ps
