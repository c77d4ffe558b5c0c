// The sparse-table keys of issue 17 (storage_type, state_type, admission,
// eviction, server.memory_cap_bytes): parsed to exact values, defaults, and
// errors that name file:line:column, key and fix.
#include <string>

#include "absl/status/status.h"
#include "common/config.h"
#include "common/table_schema.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

constexpr char kHead[] =
    "cluster:\n"                          // 1
    "  servers: [\"127.0.0.1:50051\"]\n"  // 2
    "  num_workers: 1\n"                  // 3
    "tables:\n"                           // 4
    "  - name: emb\n"                     // 5
    "    kind: sparse\n"                  // 6
    "    dim: 8\n";                       // 7; `extra` starts at line 8

std::string ErrorOf(const std::string& yaml) {
  absl::StatusOr<ClusterConfig> config = ParseClusterConfig(yaml, "bad.yaml");
  if (config.ok()) return "<parsed OK>";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(config.status().message());
}

TEST(TableLifecycleConfigTest, ParsesExactValues) {
  absl::StatusOr<ClusterConfig> c = ParseClusterConfig(
      std::string(kHead) +
          "    storage_type: float16\n"
          "    state_type: bfloat16\n"
          "    admission: {min_count: 3, probability: 0.25}\n"
          "    eviction:\n"
          "      ttl_clocks: 100\n"
          "      ttl_seconds: 3600\n"
          "      max_rows_per_shard: 5000000\n"
          "server:\n"
          "  memory_cap_bytes: 8589934592\n",
      "ok.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  const TableConfig& t = c->tables[0];
  EXPECT_EQ(t.storage_type, ValueType::kFloat16);
  EXPECT_EQ(t.state_type, ValueType::kBfloat16);
  EXPECT_EQ(t.admission.min_count, 3u);
  EXPECT_EQ(t.admission.probability, 0.25f);
  EXPECT_EQ(t.eviction.ttl_clocks, 100);
  EXPECT_EQ(t.eviction.ttl_seconds, 3600);
  EXPECT_EQ(t.eviction.max_rows_per_shard, 5000000u);
  EXPECT_EQ(c->server.memory_cap_bytes, int64_t{8} << 30);
  EXPECT_TRUE(ValidateTableConfig(t).ok());
}

TEST(TableLifecycleConfigTest, DefaultsStoreEverythingForever) {
  absl::StatusOr<ClusterConfig> c = ParseClusterConfig(kHead, "ok.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  const TableConfig& t = c->tables[0];
  EXPECT_EQ(t.storage_type, ValueType::kFloat32);
  EXPECT_EQ(t.state_type, ValueType::kFloat32);
  EXPECT_EQ(t.admission.min_count, 0u);
  EXPECT_EQ(t.admission.probability, 1.0f);
  EXPECT_EQ(t.eviction.ttl_clocks, 0);
  EXPECT_EQ(t.eviction.ttl_seconds, 0);
  EXPECT_EQ(t.eviction.max_rows_per_shard, 0u);
  EXPECT_EQ(c->server.memory_cap_bytes, 0);
}

TEST(TableLifecycleConfigTest, ErrorsNameTheKeyAndTheFix) {
  EXPECT_EQ(ErrorOf(std::string(kHead) + "    admission: {probability: 0}\n"),
            "bad.yaml:8:30: tables[0].admission.probability: value 0 out of "
            "range; allowed: a number in (0, 1]");
  EXPECT_EQ(ErrorOf(std::string(kHead) + "    eviction: {ttl_clocks: -1}\n"),
            "bad.yaml:8:28: tables[0].eviction.ttl_clocks: value -1 out of "
            "range; allowed: an integer in [0, 1099511627776] (0 = off)");
  EXPECT_EQ(ErrorOf(std::string(kHead) + "    eviction: {max_rows: 10}\n"),
            "bad.yaml:8:16: tables[0].eviction.max_rows: unknown key "
            "'max_rows'; "
            "allowed: ttl_clocks, ttl_seconds, max_rows_per_shard");
  EXPECT_EQ(ErrorOf(std::string(kHead) + "    storage_type: float8\n"),
            "bad.yaml:8:19: tables[0].storage_type: unknown value type "
            "'float8'; allowed: float32, float16, bfloat16");
  const std::string dense =
      "cluster:\n"
      "  servers: [\"127.0.0.1:50051\"]\n"
      "  num_workers: 1\n"
      "tables:\n"
      "  - name: w\n"
      "    size: 10\n"
      "    eviction: {ttl_clocks: 5}\n";
  EXPECT_EQ(ErrorOf(dense),
            "bad.yaml:7:5: tables[0].eviction: only used by sparse tables; "
            "remove eviction or set kind: sparse");
}

TEST(TableLifecycleConfigTest, ValidatorHoldsPeerSpecsToTheSameRules) {
  TableConfig t;
  t.name = "w";
  t.size = 4;
  t.storage_type = ValueType::kFloat16;
  EXPECT_EQ(ValidateTableConfig(t).message(),
            "storage_type: only used by sparse tables; remove storage_type or "
            "set kind: sparse");
  t = TableConfig();
  t.name = "e";
  t.kind = TableKind::kSparse;
  t.dim = 4;
  t.admission.probability = 1.5f;
  EXPECT_EQ(ValidateTableConfig(t).message(),
            "admission.probability: value 1.5 out of range; allowed: a number "
            "in (0, 1]");
}

}  // namespace
}  // namespace ps
