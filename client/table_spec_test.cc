#include "client/table_spec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

using ::testing::ElementsAre;

TableConfig Sparse() {
  TableConfig t;
  t.name = "emb";
  t.table_id = 1;
  t.kind = TableKind::kSparse;
  t.dim = 8;
  t.consistency = Consistency::kSsp;
  t.staleness = 3;
  t.optimizer.type = OptimizerType::kAdam;
  t.optimizer.learning_rate = 0.125f;
  t.initializer.type = InitializerType::kNormal;
  t.initializer.seed = 42;
  return t;
}

TEST(TableSpecTest, RoundTripsThroughProto) {
  const TableConfig t = Sparse();
  const TableConfig back = FromTableSpec(ToTableSpec(t));
  EXPECT_EQ(back.name, "emb");
  EXPECT_EQ(back.table_id, 1u);
  EXPECT_EQ(back.kind, TableKind::kSparse);
  EXPECT_EQ(back.dim, 8u);
  EXPECT_EQ(back.consistency, Consistency::kSsp);
  EXPECT_EQ(back.staleness, 3u);
  EXPECT_EQ(back.optimizer.type, OptimizerType::kAdam);
  EXPECT_EQ(back.optimizer.learning_rate, 0.125f);
  EXPECT_EQ(back.initializer.type, InitializerType::kNormal);
  EXPECT_EQ(back.initializer.seed, 42u);
  EXPECT_EQ(ToTableSpec(t).kind(), proto::SPARSE);
  EXPECT_EQ(ToTableSpec(t).consistency(), proto::SSP);
}

TEST(TableSpecTest, DescribesDifferences) {
  TableConfig dense;
  dense.name = "w";
  dense.table_id = 0;
  dense.size = 100;
  TableConfig other = dense;
  other.size = 101;
  TableConfig emb = Sparse();
  TableConfig emb2 = emb;
  emb2.staleness = 4;
  EXPECT_THAT(DescribeTableDifferences({dense, emb}, "client", {other, emb2},
                                       "server a:1", false),
              ElementsAre("table 0 'w': size 100 (client) vs 101 (server a:1)",
                          "table 1 'emb': staleness 3 (client) vs 4 (server a:1)"));
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

}  // namespace
}  // namespace ps
