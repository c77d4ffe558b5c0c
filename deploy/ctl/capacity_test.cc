#include "deploy/ctl/capacity.h"

#include <string>

#include "common/config.h"
#include "gtest/gtest.h"

namespace ps::ctl {
namespace {

// Four tables, one per kind of cost:
//   a: dense 10, SGD, async        1 float per element (parameter only)
//   b: dense 1000, Adam, sync      1 + 2 slots + 1 accumulator resident,
//                                  1 + 2 in a checkpoint
//   c: dense 7, momentum, ssp      1 + 1 slot
//   e: sparse dim 8, Adagrad       8 x (1 + 1 slot) floats per row
std::string Config(int num_servers) {
  std::string servers;
  for (int i = 0; i < num_servers; ++i) {
    servers += (i ? ", " : "") + std::string("\"127.0.0.1:") +
               std::to_string(7000 + i) + "\"";
  }
  return "cluster:\n  servers: [" + servers + "]\n  num_workers: 2\n" +
         "tables:\n"
         "  - {name: a, kind: dense, size: 10, consistency: async,\n"
         "     optimizer: {type: sgd}}\n"
         "  - {name: b, kind: dense, size: 1000, consistency: sync,\n"
         "     optimizer: {type: adam}}\n"
         "  - {name: c, kind: dense, size: 7, consistency: ssp, staleness: 1,\n"
         "     optimizer: {type: momentum}}\n"
         "  - {name: e, kind: sparse, dim: 8, consistency: async,\n"
         "     optimizer: {type: adagrad}}\n";
}

constexpr uint64_t kResident = 10 * 4 * 1 + 1000 * 4 * 4 + 7 * 4 * 2;  // 16096
constexpr uint64_t kCheckpoint =
    10 * 4 * 1 + 1000 * 4 * 3 + 7 * 4 * 2;  // 12096

TEST(CapacityTest, OneShardHoldsEveryDenseTable) {
  absl::StatusOr<ClusterConfig> config =
      ParseClusterConfig(Config(1), "t.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<ClusterFootprint> footprint = EstimateFootprint(*config);
  ASSERT_TRUE(footprint.ok()) << footprint.status();
  ASSERT_EQ(footprint->shards.size(), 1u);
  EXPECT_EQ(footprint->shards[0].resident_bytes, kResident);
  EXPECT_EQ(footprint->shards[0].checkpoint_bytes, kCheckpoint);
  ASSERT_EQ(footprint->sparse_tables.size(), 1u);
  EXPECT_EQ(footprint->sparse_tables[0].table, "e");
  // row_cost.h: values + adagrad state + index (no eviction rules).
  EXPECT_EQ(footprint->sparse_tables[0].bytes_per_row, 8u * 4 * 2 + 24);
}

TEST(CapacityTest, ShardsSplitTheTablesAndTheLargestIsReported) {
  absl::StatusOr<ClusterConfig> config =
      ParseClusterConfig(Config(3), "t.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<ClusterFootprint> footprint = EstimateFootprint(*config);
  ASSERT_TRUE(footprint.ok()) << footprint.status();
  ASSERT_EQ(footprint->shards.size(), 3u);
  uint64_t resident = 0, checkpoint = 0, largest = 0;
  for (const ShardFootprint& shard : footprint->shards) {
    resident += shard.resident_bytes;
    checkpoint += shard.checkpoint_bytes;
    largest = std::max(largest, shard.resident_bytes);
  }
  EXPECT_EQ(resident, kResident);
  EXPECT_EQ(checkpoint, kCheckpoint);
  EXPECT_EQ(footprint->Largest().resident_bytes, largest);
  // Ranges are balanced to within one element per table: 10 = 4+3+3,
  // 1000 = 334+333+333, 7 = 3+2+2, so the largest shard is within one
  // element's cost of each table above a third.
  EXPECT_LE(largest, kResident / 3 + 4 + 16 + 8);
  EXPECT_GE(largest, kResident / 3);
}

TEST(CapacityTest, NoServersIsAnError) {
  ClusterConfig config;
  EXPECT_EQ(EstimateFootprint(config).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CapacityTest, HumanBytes) {
  EXPECT_EQ(HumanBytes(17), "17 B");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  EXPECT_EQ(HumanBytes(3ull << 30), "3.0 GiB");
  EXPECT_EQ(HumanBytes(kResident), "15.7 KiB");
}

}  // namespace
}  // namespace ps::ctl
