#include "proto/table_spec_conversion.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

TableConfig Sparse() {
  TableConfig t;
  t.name = "emb";
  t.table_id = 1;
  t.kind = TableKind::kSparse;
  t.dim = 8;
  t.consistency = Consistency::kSsp;
  t.staleness = 3;
  t.optimizer.type = "adam";
  t.optimizer.learning_rate = 0.125f;
  t.optimizer.params["beta1"] = 0.5f;
  t.initializer.type = InitializerType::kNormal;
  t.initializer.seed = 42;
  t.value_type = ValueType::kBfloat16;
  return t;
}

TEST(TableSpecTest, RoundTripsThroughProto) {
  const TableConfig t = Sparse();
  absl::StatusOr<TableConfig> back = FromTableSpec(ToTableSpec(t));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->name, "emb");
  EXPECT_EQ(back->table_id, 1u);
  EXPECT_EQ(back->kind, TableKind::kSparse);
  EXPECT_EQ(back->dim, 8u);
  EXPECT_EQ(back->consistency, Consistency::kSsp);
  EXPECT_EQ(back->staleness, 3u);
  EXPECT_EQ(back->optimizer.type, "adam");
  EXPECT_EQ(back->optimizer.learning_rate, 0.125f);
  EXPECT_EQ(back->optimizer.param("beta1"), 0.5f);
  // Absent settings arrive filled with their defaults.
  EXPECT_EQ(back->optimizer.params.at("beta2"), 0.999f);
  EXPECT_EQ(back->initializer.type, InitializerType::kNormal);
  EXPECT_EQ(back->initializer.seed, 42u);
  EXPECT_EQ(back->value_type, ValueType::kBfloat16);
  EXPECT_EQ(*back, t);  // equal up to defaults
  EXPECT_EQ(ToTableSpec(t).kind(), proto::SPARSE);
  EXPECT_EQ(ToTableSpec(t).consistency(), proto::SSP);
  EXPECT_EQ(ToTableSpec(t).value_type(), proto::BFLOAT16);
}

TEST(TableSpecTest, RowStorageAndLifecycleRoundTrip) {
  TableConfig t = Sparse();
  t.storage_type = ValueType::kFloat16;
  t.state_type = ValueType::kBfloat16;
  t.admission.min_count = 4;
  t.admission.probability = 0.5f;
  t.eviction.ttl_clocks = 7;
  t.eviction.ttl_seconds = 60;
  t.eviction.max_rows_per_shard = 1000;
  absl::StatusOr<TableConfig> back = FromTableSpec(ToTableSpec(t));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, t);
  // A spec without them (an older peer) means the defaults.
  proto::TableSpec old = ToTableSpec(Sparse());
  old.clear_admission();
  old.clear_eviction();
  back = FromTableSpec(old);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->admission.probability, 1.0f);
  EXPECT_EQ(back->eviction.max_rows_per_shard, 0u);
  proto::TableSpec bad = ToTableSpec(t);
  bad.set_storage_type(static_cast<proto::ValueType>(9));
  EXPECT_EQ(FromTableSpec(bad).status().message(),
            "table spec 'emb': storage_type: unknown value type 9");
}

TEST(TableSpecTest, UnspecifiedMeansTheConfigDefaults) {
  proto::TableSpec spec;
  spec.set_name("w");
  spec.set_kind(proto::DENSE);
  spec.set_size(10);
  absl::StatusOr<TableConfig> c = FromTableSpec(spec);
  ASSERT_TRUE(c.ok()) << c.status();
  TableConfig expected;
  expected.name = "w";
  expected.size = 10;
  EXPECT_EQ(*c, expected);
}

// A spec from a peer is held to the same rules as a YAML file.
TEST(TableSpecTest, PeerSpecsAreValidatedByTheSchema) {
  auto error_of = [](const proto::TableSpec& spec) {
    absl::StatusOr<TableConfig> c = FromTableSpec(spec);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(c.status().message());
  };
  proto::TableSpec spec = ToTableSpec(Sparse());
  spec.set_kind(proto::TABLE_KIND_UNSPECIFIED);
  EXPECT_EQ(error_of(spec),
            "table spec 'emb': kind: 0 is not DENSE (1) or SPARSE (2)");
  spec = ToTableSpec(Sparse());
  spec.mutable_optimizer()->set_learning_rate(0);
  EXPECT_EQ(error_of(spec),
            "table spec 'emb': optimizer.learning_rate: value 0 out of range; "
            "allowed: a number > 0");
  spec = ToTableSpec(Sparse());
  (*spec.mutable_optimizer()->mutable_params())["momentum"] = 0.9f;
  EXPECT_EQ(error_of(spec),
            "table spec 'emb': optimizer.momentum: not used by optimizer "
            "adam; remove momentum or set type: momentum");
  spec = ToTableSpec(Sparse());
  spec.mutable_optimizer()->set_type("adamax");
  EXPECT_EQ(error_of(spec),
            "table spec 'emb': optimizer.type: unknown optimizer 'adamax'; "
            "allowed: sgd, momentum, adagrad, adam, adamw, ftrl");
  spec = ToTableSpec(Sparse());
  spec.set_dim(0);
  EXPECT_EQ(error_of(spec),
            "table spec 'emb': dim: value 0 out of range; allowed: an "
            "integer in [1, 1048576]");
  spec = ToTableSpec(Sparse());
  spec.set_name("a b");
  EXPECT_EQ(error_of(spec),
            "table spec 'a b': name: invalid table name 'a b'; allowed: 1 to "
            "128 characters from A-Z a-z 0-9 _ - .");
  spec = ToTableSpec(Sparse());
  spec.set_value_type(static_cast<proto::ValueType>(7));
  EXPECT_EQ(error_of(spec), "table spec 'emb': value_type: unknown value type 7");
}

}  // namespace
}  // namespace ps
