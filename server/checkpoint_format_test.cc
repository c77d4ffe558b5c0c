// The checkpoint byte format on its own, in memory: exact round trip, the
// sink's piece sizes, and damaged bytes always refused with DATA_LOSS.
// (server/checkpoint_test.cc covers files and a live shard.)
#include "server/checkpoint_format.h"

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

using ::testing::HasSubstr;

// Collects the bytes and the size of every Write().
class StringSink final : public CheckpointSink {
 public:
  void Write(const char* data, size_t n) override {
    bytes.append(data, n);
    pieces.push_back(n);
  }
  std::string bytes;
  std::vector<size_t> pieces;
};

ShardState TestState(size_t dense_size) {
  ShardState s;
  s.shard_index = 1;
  s.num_shards = 3;
  s.partition_fingerprint = 0x1234567890abcdefULL;
  s.floor_clock = 7;
  s.barriers_completed = 2;
  s.workers = {{7, 2}, {9, 2}};

  TableState dense;
  dense.config.name = "w";
  dense.config.table_id = 0;
  dense.config.size = dense_size;
  dense.version = 11;
  dense.steps = 5;
  dense.pushes = 13;
  dense.pulls = 17;
  dense.bytes_in = 19;
  dense.bytes_out = 23;
  dense.values.resize(dense_size);
  for (size_t i = 0; i < dense_size; ++i) dense.values[i] = 0.5f * i - 3.25f;
  dense.slots = {dense.values};
  dense.dedup = {{0xC11E47, 3, {{4, 10, 5}, {5, 11, 5}}}};

  TableState sparse;
  sparse.config.name = "emb";
  sparse.config.table_id = 1;
  sparse.config.kind = TableKind::kSparse;
  sparse.config.dim = 2;
  sparse.version = 3;
  sparse.values = {1.0f, -2.0f, 3.5f, 4.0f};
  sparse.rows = {{42, 0}, {1ULL << 63, 1}};
  sparse.dropped_open_step_pushes = 1;

  s.tables = {dense, sparse};
  return s;
}

TEST(CheckpointFormatTest, RoundTripIsExact) {
  const ShardState state = TestState(5);
  StringSink sink;
  const uint64_t size = EncodeCheckpoint(state, 4, 1700000000123, &sink);
  EXPECT_EQ(size, sink.bytes.size());
  absl::StatusOr<ShardState> decoded = DecodeCheckpoint(sink.bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->shard_index, 1u);
  EXPECT_EQ(decoded->num_shards, 3u);
  EXPECT_EQ(decoded->partition_fingerprint, 0x1234567890abcdefULL);
  EXPECT_EQ(decoded->floor_clock, 7);
  EXPECT_EQ(decoded->barriers_completed, 2u);
  ASSERT_EQ(decoded->workers.size(), 2u);
  EXPECT_EQ(decoded->workers[1].clock, 9);
  ASSERT_EQ(decoded->tables.size(), 2u);
  const TableState& d = decoded->tables[0];
  EXPECT_EQ(d.config.name, "w");
  EXPECT_EQ(d.config.size, 5u);
  EXPECT_EQ(d.version, 11u);
  EXPECT_EQ(d.steps, 5);
  EXPECT_EQ(d.pushes, 13u);
  EXPECT_EQ(d.pulls, 17u);
  EXPECT_EQ(d.bytes_in, 19u);
  EXPECT_EQ(d.bytes_out, 23u);
  EXPECT_EQ(d.values, state.tables[0].values);
  EXPECT_EQ(d.slots, state.tables[0].slots);
  ASSERT_EQ(d.dedup.size(), 1u);
  EXPECT_EQ(d.dedup[0].client_id, 0xC11E47u);
  EXPECT_EQ(d.dedup[0].max_evicted_id, 3u);
  ASSERT_EQ(d.dedup[0].applied.size(), 2u);
  EXPECT_EQ(d.dedup[0].applied[1].request_id, 5u);
  EXPECT_EQ(d.dedup[0].applied[1].version, 11u);
  const TableState& e = decoded->tables[1];
  EXPECT_EQ(e.config.kind, TableKind::kSparse);
  EXPECT_EQ(e.config.dim, 2u);
  EXPECT_EQ(e.values, state.tables[1].values);
  EXPECT_EQ(e.rows, state.tables[1].rows);
  EXPECT_EQ(e.dropped_open_step_pushes, 1u);
}

TEST(CheckpointFormatTest, LargeStateReachesTheSinkInOneMebibytePieces) {
  // 3 x 1 MiB of values and as much of slot: 6 full pieces and a rest.
  const ShardState state = TestState(3 << 18);
  StringSink sink;
  const uint64_t size = EncodeCheckpoint(state, 1, 0, &sink);
  ASSERT_EQ(size, sink.bytes.size());
  ASSERT_EQ(sink.pieces.size(), size / (1 << 20) + 1);
  for (size_t i = 0; i + 1 < sink.pieces.size(); ++i) {
    EXPECT_EQ(sink.pieces[i], 1u << 20);
  }
  absl::StatusOr<ShardState> decoded = DecodeCheckpoint(sink.bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->tables[0].values, state.tables[0].values);
}

TEST(CheckpointFormatTest, EveryTruncationAndFlippedByteIsDataLoss) {
  StringSink sink;
  EncodeCheckpoint(TestState(3), 2, 0, &sink);
  const std::string& good = sink.bytes;
  for (size_t n = 0; n < good.size(); ++n) {
    absl::StatusOr<ShardState> r = DecodeCheckpoint(good.substr(0, n));
    ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << n;
  }
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x20;
    absl::StatusOr<ShardState> r = DecodeCheckpoint(bad);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << i;
  }
  std::string bad = good;
  bad[good.size() / 2] ^= 1;
  EXPECT_THAT(DecodeCheckpoint(bad).status().message(),
              HasSubstr("checksum mismatch"));
  EXPECT_THAT(DecodeCheckpoint(good + "x").status().message(),
              HasSubstr("1 unexpected bytes after the end"));
  EXPECT_THAT(DecodeCheckpoint("PSCKPT\r\n").status().message(),
              HasSubstr("truncated: only 8 bytes"));
  EXPECT_THAT(DecodeCheckpoint("NOTACKPTxxxxxxxxxxxxxxxxxxxxxxxxxx")
                  .status()
                  .message(),
              HasSubstr("wrong magic"));
}

}  // namespace
}  // namespace ps
