#include "common/table_schema.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

using ::testing::ElementsAre;

TableConfig Dense() {
  TableConfig t;
  t.name = "w";
  t.size = 100;
  return t;
}

std::string ErrorOf(const TableConfig& t) {
  absl::Status s = ValidateTableConfig(t);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(TableSchemaTest, DefaultsAreValid) {
  EXPECT_TRUE(ValidateTableConfig(Dense()).ok());
  TableConfig sparse;
  sparse.name = "emb";
  sparse.kind = TableKind::kSparse;
  sparse.dim = 16;
  EXPECT_TRUE(ValidateTableConfig(sparse).ok());
}

// The rules the YAML parser applies (common/config_test.cc), for a config
// made in code or received over the wire.
TEST(TableSchemaTest, SameRulesAsTheYamlParser) {
  TableConfig t = Dense();
  t.dim = 4;
  EXPECT_EQ(ErrorOf(t),
            "dim: not allowed for a dense table; remove dim (dense tables use "
            "size) or set kind: sparse");
  t = Dense();
  t.size = 0;
  EXPECT_EQ(ErrorOf(t),
            "size: value 0 out of range; allowed: an integer in [1, "
            "281474976710656]");
  t = Dense();
  t.staleness = 2;
  EXPECT_EQ(ErrorOf(t),
            "staleness: only used with consistency ssp, not async; remove "
            "staleness or set consistency: ssp");
  t = Dense();
  t.initializer.type = InitializerType::kUniform;
  t.initializer.low = 1;
  t.initializer.high = 1;
  EXPECT_EQ(ErrorOf(t),
            "initializer.high: empty range: low (1) must be below high (1); "
            "set initializer.low < initializer.high");
  t = Dense();
  t.initializer.type = InitializerType::kNormal;
  t.initializer.stddev = 0;
  EXPECT_EQ(ErrorOf(t),
            "initializer.stddev: value 0 out of range; allowed: a number > 0");
  t = Dense();
  t.optimizer.type = "momentum";
  t.optimizer.params["momentum"] = 1.0f;
  EXPECT_EQ(ErrorOf(t),
            "optimizer.momentum: value 1 out of range; allowed: a number in "
            "[0, 1)");
  t = Dense();
  t.optimizer.learning_rate = -0.5f;
  EXPECT_EQ(ErrorOf(t),
            "optimizer.learning_rate: value -0.5 out of range; allowed: a "
            "number > 0");
}

TEST(TableSchemaTest, DescribesDifferences) {
  TableConfig dense = Dense();
  TableConfig other = dense;
  other.size = 101;
  TableConfig emb;
  emb.name = "emb";
  emb.table_id = 1;
  emb.kind = TableKind::kSparse;
  emb.dim = 8;
  emb.consistency = Consistency::kSsp;
  emb.staleness = 3;
  TableConfig emb2 = emb;
  emb2.staleness = 4;
  emb2.value_type = ValueType::kFloat16;
  EXPECT_THAT(
      DescribeTableDifferences({dense, emb}, "client", {other, emb2},
                               "server a:1", false),
      ElementsAre("table 0 'w': size 100 (client) vs 101 (server a:1)",
                  "table 1 'emb': staleness 3 (client) vs 4 (server a:1)",
                  "table 1 'emb': value_type float32 (client) vs float16 "
                  "(server a:1)"));
  EXPECT_THAT(DescribeTableDifferences({dense, emb}, "client", {dense}, "s",
                                       true),
              ElementsAre("table 1 'emb' is missing on s"));
  EXPECT_THAT(DescribeTableDifferences({dense}, "client", {dense, emb}, "s",
                                       true),
              ElementsAre());
  EXPECT_THAT(DescribeTableDifferences({dense}, "client", {dense, emb}, "s",
                                       false),
              ElementsAre("table 1 'emb' exists only on s"));
}

TEST(TableSchemaTest, ReferenceListsEveryOptimizerSection) {
  std::vector<std::string> paths;
  for (const SectionDoc& d : TableReference()) paths.push_back(d.path);
  EXPECT_THAT(paths,
              ElementsAre("tables[]", "tables[].initializer",
                          "tables[].admission", "tables[].eviction",
                          "tables[].optimizer",
                          "tables[].optimizer (type: sgd)",
                          "tables[].optimizer (type: momentum)",
                          "tables[].optimizer (type: adagrad)",
                          "tables[].optimizer (type: adam)",
                          "tables[].optimizer (type: adamw)",
                          "tables[].optimizer (type: ftrl)"));
}

}  // namespace
}  // namespace ps
