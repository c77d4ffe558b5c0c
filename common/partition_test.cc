#include "common/partition.h"

#include <cstdint>
#include <vector>

#include "common/config.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

const uint64_t kSizes[] = {1, 2, 3, 7, 10, 13, 97, 100, 101, 1000};
const uint32_t kShardCounts[] = {1, 2, 3, 4, 5, 7, 16};

std::vector<Range> AllRanges(uint64_t size, uint32_t num_shards) {
  std::vector<Range> ranges;
  for (uint32_t s = 0; s < num_shards; ++s) {
    ranges.push_back(DenseShardRange(size, s, num_shards));
  }
  return ranges;
}

TEST(PartitionTest, DenseRangesAreContiguousBalancedAndCoverTheTable) {
  for (uint64_t n : kSizes) {
    for (uint32_t s : kShardCounts) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " s=" << s);
      const std::vector<Range> ranges = AllRanges(n, s);
      EXPECT_EQ(ranges.front().begin, 0u);
      EXPECT_EQ(ranges.back().end, n);
      for (uint32_t i = 0; i + 1 < s; ++i) {
        EXPECT_EQ(ranges[i].end, ranges[i + 1].begin);
      }
      // The first n % s shards hold one element more; the rest n / s.
      for (uint32_t i = 0; i < s; ++i) {
        EXPECT_LE(ranges[i].begin, ranges[i].end);
        EXPECT_EQ(ranges[i].size(), n / s + (i < n % s ? 1 : 0));
      }
    }
  }
}

TEST(PartitionTest, EveryDenseKeyHasExactlyOneOwner) {
  for (uint64_t n : kSizes) {
    for (uint32_t s : kShardCounts) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " s=" << s);
      const std::vector<Range> ranges = AllRanges(n, s);
      for (uint64_t key = 0; key < n; ++key) {
        int owners = 0;
        uint32_t owner = 0;
        for (uint32_t i = 0; i < s; ++i) {
          if (ranges[i].begin <= key && key < ranges[i].end) {
            ++owners;
            owner = i;
          }
        }
        ASSERT_EQ(owners, 1) << "key " << key;
        ASSERT_EQ(DenseShardOf(key, n, s), owner) << "key " << key;
      }
    }
  }
}

TEST(PartitionTest, FewerElementsThanShards) {
  // 3 elements over 5 shards: one each for shards 0-2, shards 3-4 empty.
  const std::vector<Range> ranges = AllRanges(3, 5);
  const std::vector<Range> expected = {{0, 1}, {1, 2}, {2, 3}, {3, 3}, {3, 3}};
  EXPECT_EQ(ranges, expected);
  EXPECT_EQ(DenseShardOf(0, 3, 5), 0u);
  EXPECT_EQ(DenseShardOf(2, 3, 5), 2u);
}

TEST(PartitionTest, PrimeSizeExactRanges) {
  // 101 = 4 * 25 + 1: shard 0 gets 26, the others 25.
  const std::vector<Range> expected = {{0, 26}, {26, 51}, {51, 76}, {76, 101}};
  EXPECT_EQ(AllRanges(101, 4), expected);
  EXPECT_EQ(DenseShardOf(25, 101, 4), 0u);
  EXPECT_EQ(DenseShardOf(26, 101, 4), 1u);
  EXPECT_EQ(DenseShardOf(100, 101, 4), 3u);
}

TEST(PartitionTest, HugeTableBoundaries) {
  const uint64_t n = (uint64_t{1} << 40) + 3;
  const uint32_t s = 7;
  const std::vector<Range> ranges = AllRanges(n, s);
  EXPECT_EQ(ranges.back().end, n);
  for (uint32_t i = 0; i < s; ++i) {
    EXPECT_EQ(ranges[i].size(), n / s + (i < n % s ? 1 : 0));
    EXPECT_EQ(DenseShardOf(ranges[i].begin, n, s), i);
    EXPECT_EQ(DenseShardOf(ranges[i].end - 1, n, s), i);
    if (i + 1 < s) {
      EXPECT_EQ(ranges[i].end, ranges[i + 1].begin);
    }
  }
}

// Reference split: walk element by element and start a new piece whenever
// the owner changes.
std::vector<DenseSlice> SplitByWalking(uint64_t offset, uint64_t length,
                                       uint64_t size, uint32_t s) {
  std::vector<DenseSlice> slices;
  for (uint64_t k = offset; k < offset + length; ++k) {
    const uint32_t owner = DenseShardOf(k, size, s);
    if (slices.empty() || slices.back().shard != owner) {
      slices.push_back(DenseSlice{owner, Range{k, k + 1}});
    } else {
      slices.back().range.end = k + 1;
    }
  }
  return slices;
}

TEST(PartitionTest, SplitDenseRangeMatchesElementWalk) {
  for (uint64_t n : {1, 5, 23, 64}) {
    for (uint32_t s : {1u, 2u, 3u, 4u, 7u}) {
      for (uint64_t offset = 0; offset <= n; ++offset) {
        for (uint64_t length = 0; offset + length <= n; ++length) {
          const std::vector<DenseSlice> got =
              SplitDenseRange(offset, length, n, s);
          const std::vector<DenseSlice> want =
              SplitByWalking(offset, length, n, s);
          ASSERT_EQ(got.size(), want.size())
              << "n=" << n << " s=" << s << " off=" << offset
              << " len=" << length;
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(got[i].shard, want[i].shard);
            ASSERT_EQ(got[i].range, want[i].range);
          }
        }
      }
    }
  }
}

TEST(PartitionTest, SplitDenseRangeExactPieces) {
  // 10 elements over 3 shards: [0,4) [4,7) [7,10).
  const std::vector<DenseSlice> slices = SplitDenseRange(2, 7, 10, 3);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[0].shard, 0u);
  EXPECT_EQ(slices[0].range, (Range{2, 4}));
  EXPECT_EQ(slices[1].shard, 1u);
  EXPECT_EQ(slices[1].range, (Range{4, 7}));
  EXPECT_EQ(slices[2].shard, 2u);
  EXPECT_EQ(slices[2].range, (Range{7, 9}));
  EXPECT_TRUE(SplitDenseRange(5, 0, 10, 3).empty());
  const std::vector<DenseSlice> whole = SplitDenseRange(0, 10, 10, 1);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].range, (Range{0, 10}));
}

// XXH64 of the 8 little-endian bytes of `id`, seed 0, written out from the
// xxHash specification: an independent check of SparseKeyHash.
uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
uint64_t ReferenceXxh64Of8Bytes(uint64_t id) {
  constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull;
  constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
  constexpr uint64_t kP3 = 0x165667B19E3779F9ull;
  constexpr uint64_t kP4 = 0x85EBCA77C2B2AE63ull;
  constexpr uint64_t kP5 = 0x27D4EB2F165667C5ull;
  uint64_t h = 0 + kP5 + 8;  // seed + P5 + length
  const uint64_t k1 = Rotl(id * kP2, 31) * kP1;
  h ^= k1;
  h = Rotl(h, 27) * kP1 + kP4;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

TEST(PartitionTest, SparseKeyHashGoldenValues) {
  // Pinned once: changing the hash would move every sparse row to another
  // shard and break checkpoints and mixed-version clusters.
  EXPECT_EQ(SparseKeyHash(0), 0x34c96acdcadb1bbbull);
  EXPECT_EQ(SparseKeyHash(1), 0x9f29cb17a2a49995ull);
  EXPECT_EQ(SparseKeyHash(2), 0xeac73e4044e82db0ull);
  EXPECT_EQ(SparseKeyHash(42), 0xb556806fb6d14353ull);
  EXPECT_EQ(SparseKeyHash(12345), 0xf641f64ab4ebb803ull);
  EXPECT_EQ(SparseKeyHash(~uint64_t{0}), 0x85d136adb773c6c9ull);
  for (uint64_t id = 0; id < 1000; ++id) {
    ASSERT_EQ(SparseKeyHash(id * 0x9E3779B97F4A7C15ull),
              ReferenceXxh64Of8Bytes(id * 0x9E3779B97F4A7C15ull));
  }
}

TEST(PartitionTest, SparseShardOfGoldenValuesAndStability) {
  EXPECT_EQ(SparseShardOf(0, 3), 0u);
  EXPECT_EQ(SparseShardOf(1, 3), 1u);
  EXPECT_EQ(SparseShardOf(2, 3), 2u);
  EXPECT_EQ(SparseShardOf(42, 7), 4u);
  EXPECT_EQ(SparseShardOf(12345, 7), 6u);
  EXPECT_EQ(SparseShardOf(~uint64_t{0}, 7), 3u);
  for (uint64_t id = 0; id < 1000; ++id) {
    EXPECT_EQ(SparseShardOf(id, 1), 0u);
    const uint32_t first = SparseShardOf(id, 5);
    EXPECT_LT(first, 5u);
    EXPECT_EQ(SparseShardOf(id, 5), first);  // same answer every time
    // The key space is cut into equal contiguous ranges: the shard is the
    // one whose range [s * 2^64 / S, (s + 1) * 2^64 / S) holds the hash.
    const unsigned __int128 h = SparseKeyHash(id);
    const unsigned __int128 space = static_cast<unsigned __int128>(1) << 64;
    EXPECT_LE(first * space, h * 5);
    EXPECT_LT(h * 5, (first + 1) * space);
  }
}

TEST(PartitionTest, SparseShardsAreRoughlyBalanced) {
  constexpr int kIds = 100000;
  for (uint32_t s : {2u, 3u, 4u, 7u, 16u}) {
    std::vector<int> counts(s, 0);
    for (uint64_t id = 0; id < kIds; ++id) ++counts[SparseShardOf(id, s)];
    const double expected = static_cast<double>(kIds) / s;
    for (uint32_t i = 0; i < s; ++i) {
      EXPECT_NEAR(counts[i], expected, 0.05 * expected)
          << "shard " << i << " of " << s;
    }
  }
}

std::vector<TableConfig> SampleTables() {
  TableConfig dense;
  dense.name = "weights";
  dense.table_id = 0;
  dense.kind = TableKind::kDense;
  dense.size = 1000;
  TableConfig sparse;
  sparse.name = "emb";
  sparse.table_id = 1;
  sparse.kind = TableKind::kSparse;
  sparse.dim = 16;
  return {dense, sparse};
}

TEST(PartitionTest, FingerprintChangesWithWhatPartitioningDependsOn) {
  const std::vector<TableConfig> base = SampleTables();
  const uint64_t fp = PartitionFingerprint(2, base);
  EXPECT_EQ(PartitionFingerprint(2, SampleTables()), fp);  // deterministic

  EXPECT_NE(PartitionFingerprint(3, base), fp);
  auto changed = [&](auto mutate) {
    std::vector<TableConfig> tables = SampleTables();
    mutate(tables);
    return PartitionFingerprint(2, tables);
  };
  EXPECT_NE(changed([](auto& t) { t[0].size = 1001; }), fp);
  EXPECT_NE(changed([](auto& t) { t[0].name = "weights2"; }), fp);
  EXPECT_NE(changed([](auto& t) { t[1].name = "emc"; }), fp);
  EXPECT_NE(changed([](auto& t) { t[1].dim = 17; }), fp);
  EXPECT_NE(changed([](auto& t) { t[1].kind = TableKind::kDense; }), fp);
  EXPECT_NE(changed([](auto& t) { t.pop_back(); }), fp);
  EXPECT_NE(changed([](auto& t) {
              std::swap(t[0], t[1]);
              t[0].table_id = 0;
              t[1].table_id = 1;
            }),
            fp);

  // Settings that do not move keys leave it alone.
  EXPECT_EQ(changed([](auto& t) {
              t[0].optimizer.type = "adam";
              t[0].optimizer.learning_rate = 0.5f;
            }),
            fp);
  EXPECT_EQ(changed([](auto& t) {
              t[0].consistency = Consistency::kSsp;
              t[0].staleness = 4;
            }),
            fp);
  EXPECT_EQ(changed([](auto& t) {
              t[1].initializer.type = InitializerType::kNormal;
              t[1].initializer.seed = 99;
            }),
            fp);
}

}  // namespace
}  // namespace ps
