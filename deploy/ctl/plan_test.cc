#include "deploy/ctl/plan.h"

#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "common/config.h"
#include "gtest/gtest.h"

namespace ps::ctl {
namespace {

constexpr char kConfig[] =
    "cluster:\n"
    "  servers: [\"127.0.0.1:1\", \"127.0.0.1:2\"]\n"
    "  num_workers: 1\n"
    "server: {memory_cap_bytes: 1000000}\n"
    "tables:\n"
    "  - {name: w, kind: dense, size: 101, optimizer: {type: adam}}\n"
    "  - name: emb\n"
    "    kind: sparse\n"
    "    dim: 16\n"
    "    optimizer: {type: adagrad}\n"
    "  - name: half\n"
    "    kind: sparse\n"
    "    dim: 16\n"
    "    storage_type: float16\n"
    "    optimizer: {type: adagrad}\n"
    "    eviction: {max_rows_per_shard: 1000, ttl_clocks: 5}\n";

ClusterConfig Config() {
  absl::StatusOr<ClusterConfig> c = ParseClusterConfig(kConfig, "t.yaml");
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(PlanTest, RowsTimesTheFormulaPerShard) {
  PlanOptions options;
  options.rows["emb"] = 5001;  // 2501 on the larger shard
  absl::StatusOr<Plan> plan = MakePlan(Config(), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->tables.size(), 3u);
  // Dense: 51 elements x 4 x (1 + 2 adam slots).
  EXPECT_EQ(plan->tables[0].bytes_per_shard, 51u * 12);
  // float32 + adagrad, dim 16: 64 + 64 + 0 + 24 + 0 = 152 B/row.
  EXPECT_EQ(plan->tables[1].row.total(), 152u);
  EXPECT_EQ(plan->tables[1].row.raw_float32, 128u);
  EXPECT_EQ(plan->tables[1].rows_per_shard, 2501u);
  // float16 values, ttl_clocks + max_rows: 32 + 64 + 24 + 46 + 26 = 192.
  EXPECT_EQ(plan->tables[2].row.total(), 192u);
  EXPECT_EQ(plan->tables[2].rows_per_shard, 1000u);
  EXPECT_EQ(plan->bytes_per_shard, 51u * 12 + 2501u * 152 + 1000u * 192);
  EXPECT_EQ(plan->budget_bytes, 1000000u);
  EXPECT_TRUE(plan->fits());
  std::ostringstream text;
  PrintPlan(*plan, false, text);
  EXPECT_TRUE(absl::StrContains(
      text.str(),
      "emb (sparse): 64 values + 64 state + 0 accumulator + 24 index + 0 "
      "lifecycle = 152 B/row (1.19x the 128 B of float32 values+state)"))
      << text.str();
  EXPECT_TRUE(absl::StrContains(text.str(), "fits")) << text.str();
}

TEST(PlanTest, UnboundedAndOverBudgetPlansDoNotFit) {
  absl::StatusOr<Plan> plan = MakePlan(Config(), PlanOptions());
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->complete);
  EXPECT_TRUE(plan->tables[1].unbounded);
  EXPECT_FALSE(plan->fits());
  PlanOptions options;
  options.rows["emb"] = 20000;
  options.budget_bytes = 1000;
  plan = MakePlan(Config(), options);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->complete);
  EXPECT_FALSE(plan->fits());
  std::ostringstream json;
  PrintPlan(*plan, true, json);
  EXPECT_TRUE(absl::StrContains(json.str(), "\"fits\":false")) << json.str();
  options.rows = {{"w", 5}};
  EXPECT_EQ(MakePlan(Config(), options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ps::ctl
