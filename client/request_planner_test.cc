#include "client/request_planner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/partition.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

TEST(PlanDenseTest, UnevenShardsAndChunks) {
  // 10 elements over 3 shards: [0,4) [4,7) [7,10). 8-byte chunks: 2 floats.
  EXPECT_THAT(PlanDense(1, 8, 10, 3, 8),
              ElementsAre(DenseChunk{0, 1, 2, true}, DenseChunk{0, 3, 1, false},
                          DenseChunk{1, 4, 2, true}, DenseChunk{1, 6, 1, false},
                          DenseChunk{2, 7, 2, true}));
}

TEST(PlanDenseTest, WholeTableOneChunkPerShard) {
  EXPECT_THAT(PlanDense(0, 10, 10, 3, 4 << 20),
              ElementsAre(DenseChunk{0, 0, 4, true}, DenseChunk{1, 4, 3, true},
                          DenseChunk{2, 7, 3, true}));
}

TEST(PlanDenseTest, ChunkSmallerThanAFloatStillMakesProgress) {
  EXPECT_EQ(DenseChunkElements(3), 1u);
  EXPECT_EQ(DenseChunkElements(4 << 20), 1u << 20);
  EXPECT_THAT(PlanDense(5, 2, 7, 1, 1),
              ElementsAre(DenseChunk{0, 5, 1, true}, DenseChunk{0, 6, 1, false}));
}

TEST(PlanDenseTest, ChunksTileTheRangeExactly) {
  const uint64_t size = 1000003, offset = 17, length = 999000;
  const std::vector<DenseChunk> chunks = PlanDense(offset, length, size, 7, 4096);
  uint64_t pos = offset;
  std::map<uint32_t, int> firsts;
  for (const DenseChunk& c : chunks) {
    EXPECT_EQ(c.offset, pos);
    EXPECT_LE(c.length, 1024u);
    EXPECT_GT(c.length, 0u);
    const Range owned = DenseShardRange(size, c.shard, 7);
    EXPECT_GE(c.offset, owned.begin);
    EXPECT_LE(c.offset + c.length, owned.end);
    if (c.first_chunk) ++firsts[c.shard];
    pos += c.length;
  }
  EXPECT_EQ(pos, offset + length);
  EXPECT_EQ(firsts.size(), 7u);
  for (const auto& [shard, n] : firsts) EXPECT_EQ(n, 1) << shard;
}

// Shard function for exact expectations: key % 2.
uint32_t Parity(uint64_t key) { return static_cast<uint32_t>(key % 2); }

TEST(PlanSparseTest, DuplicatesGroupedAndShardsSorted) {
  const std::vector<uint64_t> keys = {7, 4, 9, 4, 2, 7, 7};
  const SparsePlan plan = PlanSparse(keys, 2, 2, 1 << 20, Parity);
  // Shard 0: 2, 4; shard 1: 7, 9.
  EXPECT_THAT(plan.unique_keys, ElementsAre(2, 4, 7, 9));
  EXPECT_THAT(plan.position_begin, ElementsAre(0, 1, 3, 6, 7));
  EXPECT_THAT(plan.positions, ElementsAre(4, 1, 3, 0, 5, 6, 2));
  EXPECT_THAT(plan.requests, ElementsAre(SparsePlan::Request{0, 0, 2, true},
                                         SparsePlan::Request{1, 2, 2, true}));
  EXPECT_THAT(plan.RequestKeys(plan.requests[1]), ElementsAre(7, 9));
}

TEST(PlanSparseTest, SplitsLargeShardGroups) {
  // dim 2: 8 + 8 = 16 bytes per key; 40-byte chunks hold 2 keys.
  EXPECT_EQ(SparseChunkKeys(40, 2), 2u);
  EXPECT_EQ(SparseChunkKeys(1, 1000), 1u);
  const std::vector<uint64_t> keys = {1, 3, 5, 7, 9, 2};
  const SparsePlan plan = PlanSparse(keys, 2, 2, 40, Parity);
  EXPECT_THAT(plan.unique_keys, ElementsAre(2, 1, 3, 5, 7, 9));
  EXPECT_THAT(plan.requests, ElementsAre(SparsePlan::Request{0, 0, 1, true},
                                         SparsePlan::Request{1, 1, 2, true},
                                         SparsePlan::Request{1, 3, 2, false},
                                         SparsePlan::Request{1, 5, 1, false}));
}

TEST(PlanSparseTest, SumsDuplicateGradientsAndScattersRowsBack) {
  const std::vector<uint64_t> keys = {7, 4, 9, 4, 2, 7, 7};
  const uint32_t dim = 2;
  std::vector<float> grads;
  for (size_t i = 0; i < keys.size(); ++i) {
    grads.push_back(1.0f * (i + 1));
    grads.push_back(100.0f * (i + 1));
  }
  const SparsePlan plan = PlanSparse(keys, dim, 2, 1 << 20, Parity);
  // Every element is written (the buffers start as NaN).
  std::vector<float> shard0(plan.requests[0].num_keys * dim, std::nanf(""));
  std::vector<float> shard1(plan.requests[1].num_keys * dim, std::nanf(""));
  SumRows(plan, plan.requests[0], grads, dim, shard0.data());
  SumRows(plan, plan.requests[1], grads, dim, shard1.data());
  // key 2: position 4; key 4: positions 1 and 3.
  EXPECT_THAT(shard0, ElementsAre(5, 500, 2 + 4, 200 + 400));
  // key 7: positions 0, 5, 6; key 9: position 2.
  EXPECT_THAT(shard1, ElementsAre(1 + 6 + 7, 100 + 600 + 700, 3, 300));

  std::vector<float> out(keys.size() * dim, -1.0f);
  const std::vector<float> rows0 = {20, 21, 40, 41};  // keys 2, 4
  const std::vector<float> rows1 = {70, 71, 90, 91};  // keys 7, 9
  ScatterRows(plan, plan.requests[0], rows0, dim, absl::MakeSpan(out));
  ScatterRows(plan, plan.requests[1], rows1, dim, absl::MakeSpan(out));
  EXPECT_THAT(out, ElementsAreArray({70, 71, 40, 41, 90, 91, 40, 41, 20, 21,
                                     70, 71, 70, 71}));
}

TEST(PlanSparseTest, RealHashRoutingKeepsEveryKeyOnItsShard) {
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < 500; ++k) keys.push_back((k * 7919) % 300);
  const SparsePlan plan = PlanSparse(keys, 4, 3, 8 * (8 + 4 * 4), [](uint64_t k) {
    return SparseShardOf(k, 3);
  });
  EXPECT_EQ(plan.unique_keys.size(), 300u);
  EXPECT_EQ(plan.positions.size(), keys.size());
  uint64_t covered = 0;
  for (const SparsePlan::Request& r : plan.requests) {
    EXPECT_EQ(r.first_unique, covered);
    EXPECT_LE(r.num_keys, 8u);
    absl::Span<const uint64_t> ks = plan.RequestKeys(r);
    for (size_t i = 0; i < ks.size(); ++i) {
      EXPECT_EQ(SparseShardOf(ks[i], 3), r.shard);
      if (i > 0) {
        EXPECT_LT(ks[i - 1], ks[i]);
      }
    }
    covered += r.num_keys;
  }
  EXPECT_EQ(covered, 300u);
  for (size_t u = 0; u < plan.unique_keys.size(); ++u) {
    for (uint64_t i = plan.position_begin[u]; i < plan.position_begin[u + 1];
         ++i) {
      EXPECT_EQ(keys[plan.positions[i]], plan.unique_keys[u]);
    }
  }
}

// The radix-sorted plan equals one built from a comparison sort of
// (shard, key, position), for 64-bit keys with duplicates and any shard count.
TEST(PlanSparseTest, MatchesAComparisonSortOnRandomKeys) {
  std::mt19937_64 rng(5);
  for (int iter = 0; iter < 60; ++iter) {
    const uint32_t num_shards = 1 + iter % 5;
    const size_t n = rng() % 3000;
    const int key_bits = 1 + static_cast<int>(rng() % 64);
    std::vector<uint64_t> keys(n);
    for (uint64_t& k : keys) {
      k = key_bits == 64 ? rng() : rng() % (uint64_t{1} << key_bits);
      if (n > 0 && rng() % 4 == 0) k = keys[rng() % n];  // duplicates
    }
    auto shard_of = [num_shards](uint64_t k) { return SparseShardOf(k, num_shards); };
    const SparsePlan plan = PlanSparse(keys, 4, num_shards, 1 << 20, shard_of);

    std::vector<uint64_t> order(n);
    std::iota(order.begin(), order.end(), uint64_t{0});
    std::sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) {
      return std::make_tuple(shard_of(keys[a]), keys[a], a) <
             std::make_tuple(shard_of(keys[b]), keys[b], b);
    });
    ASSERT_EQ(plan.positions, order) << "iter " << iter;
    std::vector<uint64_t> unique;
    for (uint64_t p : order) {
      if (unique.empty() || unique.back() != keys[p]) unique.push_back(keys[p]);
    }
    ASSERT_EQ(plan.unique_keys, unique) << "iter " << iter;
  }
}

TEST(PlanSparseTest, EmptyKeys) {
  const SparsePlan plan = PlanSparse({}, 4, 2, 1024, Parity);
  EXPECT_TRUE(plan.requests.empty());
  EXPECT_THAT(plan.position_begin, ElementsAre(0));
}

}  // namespace
}  // namespace ps
