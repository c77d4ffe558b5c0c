#include "server/shard_table.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "common/backend/update_backend.h"
#include "common/bytes.h"
#include "common/partition.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/initializer.h"

namespace ps {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

TableConfig Dense(uint64_t size, Consistency consistency = Consistency::kAsync) {
  TableConfig t;
  t.name = "w";
  t.table_id = 3;
  t.kind = TableKind::kDense;
  t.size = size;
  t.consistency = consistency;
  t.optimizer.type = "sgd";
  t.optimizer.learning_rate = 0.5f;
  t.initializer.type = InitializerType::kConstant;
  t.initializer.value = 1.0f;
  return t;
}

TableConfig Sparse(uint32_t dim, Consistency consistency = Consistency::kAsync) {
  TableConfig t;
  t.name = "emb";
  t.table_id = 4;
  t.kind = TableKind::kSparse;
  t.dim = dim;
  t.consistency = consistency;
  t.optimizer.type = "sgd";
  t.optimizer.learning_rate = 1.0f;
  t.initializer.type = InitializerType::kUniform;
  t.initializer.low = -1.0f;
  t.initializer.high = 1.0f;
  t.initializer.seed = 42;
  return t;
}

class ShardTableTest : public ::testing::Test {
 protected:
  std::unique_ptr<ShardTable> Make(const TableConfig& config,
                                   uint32_t shard = 0, uint32_t shards = 1,
                                   int workers = 2) {
    ShardTableOptions options;
    options.shard_index = shard;
    options.num_shards = shards;
    options.num_workers = workers;
    auto table = ShardTable::Create(config, options, backend_.get());
    EXPECT_TRUE(table.ok()) << table.status();
    return std::move(table).value();
  }

  std::unique_ptr<UpdateBackend> backend_ = CreateCpuUpdateBackend();
};

proto::DataRequest DenseReq(proto::Op op, uint64_t offset, uint64_t length,
                            std::vector<float> grad = {}, int worker = 0,
                            int64_t clock = 0) {
  proto::DataRequest r;
  r.set_op(op);
  r.set_table_id(3);
  r.set_worker_id(worker);
  r.set_clock(clock);
  r.set_offset(offset);
  r.set_length(length);
  r.set_first_chunk(true);
  if (!grad.empty()) r.set_values(EncodeRaw<float>(grad));
  return r;
}

proto::DataRequest SparseReq(proto::Op op, std::vector<uint64_t> keys,
                             std::vector<float> grad = {}, int worker = 0,
                             int64_t clock = 0) {
  proto::DataRequest r;
  r.set_op(op);
  r.set_table_id(4);
  r.set_worker_id(worker);
  r.set_clock(clock);
  r.set_keys(EncodeRaw<uint64_t>(keys));
  r.set_first_chunk(true);
  if (!grad.empty()) r.set_values(EncodeRaw<float>(grad));
  return r;
}

std::vector<float> Floats(const std::string& bytes) {
  auto span = ViewRaw<float>(bytes);
  return std::vector<float>(span.begin(), span.end());
}

// Validates then executes, like the shard does.
absl::Status RunReq(ShardTable& table, const proto::DataRequest& request,
                 proto::DataResponse* response = nullptr) {
  proto::DataResponse scratch;
  if (absl::Status s = table.Validate(request); !s.ok()) return s;
  return table.Execute(request, response ? response : &scratch);
}

std::vector<float> PullDense(ShardTable& table, uint64_t offset,
                             uint64_t length) {
  proto::DataResponse response;
  EXPECT_TRUE(RunReq(table, DenseReq(proto::PULL, offset, length), &response).ok());
  return Floats(response.values());
}

// ----------------------------------------------------------------- validation

TEST_F(ShardTableTest, DenseValidationCodes) {
  // Table of 10 elements on 2 shards: shard 0 owns [0, 5).
  auto table = Make(Dense(10), 0, 2);
  EXPECT_EQ(table->owned_range(), (Range{0, 5}));

  proto::DataRequest r = DenseReq(proto::PULL, 0, 2);
  r.set_op(proto::OP_UNSPECIFIED);
  EXPECT_EQ(table->Validate(r).code(), absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(table->Validate(DenseReq(proto::PULL, 0, 0)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table->Validate(DenseReq(proto::PULL, 8, 5)).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(table->Validate(DenseReq(proto::PULL, 11, 1)).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(
      table->Validate(DenseReq(proto::PULL, 1, std::numeric_limits<uint64_t>::max()))
          .code(),
      absl::StatusCode::kOutOfRange);

  absl::Status not_owned = table->Validate(DenseReq(proto::PULL, 3, 4));
  EXPECT_EQ(not_owned.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(not_owned.message(),
              HasSubstr("elements [3,7) are not on shard 0 (owns [0,5))"));

  absl::Status bad_len = table->Validate(DenseReq(proto::PUSH, 0, 2, {1, 2, 3}));
  EXPECT_EQ(bad_len.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_len.message(), HasSubstr("expected 8 bytes"));
  EXPECT_THAT(bad_len.message(), HasSubstr("got 12 bytes"));

  // A pull carrying values, keys on a dense table.
  proto::DataRequest pull_with_values = DenseReq(proto::PULL, 0, 1);
  pull_with_values.set_values(std::string(4, '\0'));
  EXPECT_EQ(table->Validate(pull_with_values).code(),
            absl::StatusCode::kInvalidArgument);
  proto::DataRequest dense_keys = DenseReq(proto::PULL, 0, 1);
  dense_keys.set_keys(std::string(8, '\0'));
  EXPECT_EQ(table->Validate(dense_keys).code(),
            absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(table->Validate(DenseReq(proto::PULL, 0, 1, {}, 2)).code(),
            absl::StatusCode::kInvalidArgument);  // num_workers = 2
  EXPECT_EQ(table->Validate(DenseReq(proto::PULL, 0, 1, {}, -2)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(table->Validate(DenseReq(proto::PUSH, 0, 1, {1}, -1)).ok());
  EXPECT_EQ(table->Validate(DenseReq(proto::PULL, 0, 1, {}, 0, -1)).code(),
            absl::StatusCode::kInvalidArgument);  // negative clock
}

TEST_F(ShardTableTest, NonFiniteGradientRejectedAndTableUnchanged) {
  auto table = Make(Dense(4));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  absl::Status s = RunReq(*table, DenseReq(proto::PUSH, 0, 3, {1, nan, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("gradient 1 is not finite (nan)"));
  s = RunReq(*table, DenseReq(proto::PUSH, 0, 2, {1, INFINITY}));
  EXPECT_THAT(s.message(), HasSubstr("gradient 1 is not finite (inf)"));
  EXPECT_THAT(PullDense(*table, 0, 4), ElementsAre(1, 1, 1, 1));
  EXPECT_EQ(table->version(), 0u);
}

TEST_F(ShardTableTest, ValuesMustCarryTheTablesValueType) {
  TableConfig config = Dense(4);
  config.value_type = ValueType::kFloat16;
  auto table = Make(config);
  // float32 values (the default) to a float16 table: refused.
  absl::Status s = table->Validate(DenseReq(proto::PUSH, 0, 4, {1, 2, 3, 4}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "values are float32 but table 'w' carries float16");
  proto::DataRequest unknown = DenseReq(proto::PULL, 0, 4);
  unknown.set_value_type(static_cast<proto::ValueType>(9));
  EXPECT_EQ(table->Validate(unknown).message(),
            "values are of unknown type 9 but table 'w' carries float16");
  // float16 values of the right size: 2 bytes each, decoded at the edge.
  proto::DataRequest push = DenseReq(proto::PUSH, 0, 4);
  push.set_value_type(proto::FLOAT16);
  const uint16_t halves[] = {0x3c00, 0x4000, 0x3800, 0xbc00};  // 1 2 .5 -1
  push.set_values(std::string(reinterpret_cast<const char*>(halves), 8));
  ASSERT_TRUE(RunReq(*table, push).ok());
  proto::DataRequest pull = DenseReq(proto::PULL, 0, 4);
  pull.set_value_type(proto::FLOAT16);
  proto::DataResponse response;
  ASSERT_TRUE(RunReq(*table, pull, &response).ok());
  ASSERT_EQ(response.values().size(), 8u);
  // SGD lr 0.5 from 1: 0.5, 0, 0.75, 1.5 as float16.
  uint16_t got[4];
  std::memcpy(got, response.values().data(), 8);
  EXPECT_THAT(got, ElementsAre(0x3800, 0x0000, 0x3a00, 0x3e00));
  push.set_values(std::string(6, '\0'));
  EXPECT_EQ(table->Validate(push).message(),
            "values: expected 8 bytes (4 float16), got 6 bytes");
}

TEST_F(ShardTableTest, NonFiniteAllowedWhenNotRejected) {
  ShardTableOptions options;
  options.reject_non_finite = false;
  auto table = ShardTable::Create(Dense(2), options, backend_.get());
  ASSERT_TRUE(table.ok());
  EXPECT_TRUE(
      (*table)->Validate(DenseReq(proto::PUSH, 0, 1, {INFINITY})).ok());
}

TEST_F(ShardTableTest, NonWorkerMayNotPushToSyncOrSsp) {
  for (Consistency c : {Consistency::kSync, Consistency::kSsp}) {
    auto table = Make(Dense(4, c));
    EXPECT_EQ(table->Validate(DenseReq(proto::PUSH, 0, 1, {1}, -1)).code(),
              absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(table->Validate(DenseReq(proto::PUSH_PULL, 0, 1, {1}, -1)).code(),
              absl::StatusCode::kFailedPrecondition);
    EXPECT_TRUE(table->Validate(DenseReq(proto::PULL, 0, 1, {}, -1)).ok());
  }
}

TEST_F(ShardTableTest, SparseValidationCodes) {
  const uint32_t shards = 2;
  auto table = Make(Sparse(2), 0, shards);
  // Ids owned by shard 0 and one owned by shard 1.
  std::vector<uint64_t> mine, other;
  for (uint64_t id = 0; mine.size() < 3 || other.empty(); ++id) {
    (SparseShardOf(id, shards) == 0 ? mine : other).push_back(id);
  }
  EXPECT_TRUE(table->Validate(SparseReq(proto::PULL, mine)).ok());

  proto::DataRequest odd = SparseReq(proto::PULL, mine);
  odd.mutable_keys()->resize(12);
  absl::Status s = table->Validate(odd);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("multiple of 8 bytes"));

  EXPECT_EQ(table->Validate(SparseReq(proto::PULL, {})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table->Validate(SparseReq(proto::PULL, {mine[1], mine[0]})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table->Validate(SparseReq(proto::PULL, {mine[0], mine[0]})).code(),
            absl::StatusCode::kInvalidArgument);
  s = table->Validate(SparseReq(proto::PULL, {other[0]}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("belongs to shard 1, not shard 0"));

  s = table->Validate(SparseReq(proto::PUSH, {mine[0], mine[1]}, {1, 2, 3}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("expected 16 bytes (4 float32), got 12"));
  EXPECT_TRUE(
      table->Validate(SparseReq(proto::PUSH, {mine[0], mine[1]}, {1, 2, 3, 4}))
          .ok());
}

// ---------------------------------------------------------------- async values

TEST_F(ShardTableTest, AsyncPushesApplyExactly) {
  // SGD lr 0.5 from 1.0 on shard 1 of 2 (owns [5, 10)).
  auto table = Make(Dense(10), 1, 2);
  EXPECT_THAT(PullDense(*table, 5, 5), ElementsAre(1, 1, 1, 1, 1));
  ASSERT_TRUE(RunReq(*table, DenseReq(proto::PUSH, 6, 3, {2, 4, -2})).ok());
  EXPECT_EQ(table->version(), 1u);
  ASSERT_TRUE(RunReq(*table, DenseReq(proto::PUSH, 8, 2, {1, 1})).ok());
  EXPECT_EQ(table->version(), 2u);
  EXPECT_THAT(PullDense(*table, 5, 5), ElementsAre(1, 0, -1, 1.5, 0.5));

  // PUSH_PULL returns the updated values of the same range.
  proto::DataResponse response;
  ASSERT_TRUE(
      RunReq(*table, DenseReq(proto::PUSH_PULL, 5, 2, {2, 2}), &response).ok());
  EXPECT_THAT(Floats(response.values()), ElementsAre(0, -1));
  EXPECT_EQ(response.version(), 3u);

  // A non-first chunk of a logical push does not bump the version.
  proto::DataRequest chunk = DenseReq(proto::PUSH, 9, 1, {1});
  chunk.set_first_chunk(false);
  ASSERT_TRUE(RunReq(*table, chunk).ok());
  EXPECT_EQ(table->version(), 3u);
  EXPECT_THAT(PullDense(*table, 9, 1), ElementsAre(0));
}

TEST_F(ShardTableTest, AdamStepCountsLogicalPushesNotChunks) {
  TableConfig config = Dense(4);
  config.optimizer.type = "adam";
  config.optimizer.learning_rate = 0.1f;
  config.initializer.value = 0.0f;
  auto table = Make(config);
  proto::DataRequest first = DenseReq(proto::PUSH, 0, 2, {1, 1});
  proto::DataRequest second = DenseReq(proto::PUSH, 2, 2, {1, 1});
  second.set_first_chunk(false);
  ASSERT_TRUE(RunReq(*table, first).ok());
  ASSERT_TRUE(RunReq(*table, second).ok());
  // Both chunks used t = 1, so every element moved by the same amount.
  std::vector<float> after = PullDense(*table, 0, 4);
  EXPECT_EQ(after[0], after[2]);
  EXPECT_EQ(after[1], after[3]);
  EXPECT_NEAR(after[0], -0.1f, 1e-6);

  // Reference: Adam with t = 2 on the second logical push.
  ASSERT_TRUE(RunReq(*table, DenseReq(proto::PUSH, 0, 1, {1})).ok());
  const double b1 = 0.9, b2 = 0.999;
  const double m = b1 * (1 - b1) + (1 - b1);
  const double v = b2 * (1 - b2) + (1 - b2);
  const double step = 0.1 * (m / (1 - b1 * b1)) /
                      (std::sqrt(v / (1 - b2 * b2)) + 1e-8);
  EXPECT_NEAR(PullDense(*table, 0, 1)[0], after[0] - step, 1e-6);
  EXPECT_EQ(table->version(), 2u);
}

// ------------------------------------------------------------- initialization

TEST_F(ShardTableTest, SparseRowsAreIndependentOfShardCountAndOrder) {
  const TableConfig config = Sparse(3);
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 200; ++i) ids.push_back(i * 7919 + 11);

  std::map<uint64_t, std::vector<float>> reference;
  for (uint64_t id : ids) {
    std::vector<float> row(3);
    InitSparseRow(config.initializer, id, absl::MakeSpan(row));
    for (float v : row) {
      EXPECT_GE(v, -1.0f);
      EXPECT_LT(v, 1.0f);
    }
    reference[id] = row;
  }
  for (uint32_t shards : {1u, 2u, 3u}) {
    for (uint32_t s = 0; s < shards; ++s) {
      auto table = Make(config, s, shards);
      std::vector<uint64_t> mine;
      for (uint64_t id : ids) {
        if (SparseShardOf(id, shards) == s) mine.push_back(id);
      }
      std::sort(mine.begin(), mine.end());
      // Create the rows in two batches, the second half first.
      const size_t half = mine.size() / 2;
      std::vector<uint64_t> second(mine.begin() + half, mine.end());
      proto::DataResponse response;
      ASSERT_TRUE(RunReq(*table, SparseReq(proto::PULL, second), &response).ok());
      ASSERT_TRUE(RunReq(*table, SparseReq(proto::PULL, mine), &response).ok());
      std::vector<float> values = Floats(response.values());
      ASSERT_EQ(values.size(), mine.size() * 3);
      for (size_t i = 0; i < mine.size(); ++i) {
        EXPECT_THAT(std::vector<float>(values.begin() + 3 * i,
                                       values.begin() + 3 * i + 3),
                    ElementsAreArray(reference[mine[i]]))
            << "id " << mine[i] << " on shard " << s << " of " << shards;
      }
      proto::TableStats stats;
      table->FillStats(&stats);
      EXPECT_EQ(stats.num_rows(), mine.size());
    }
  }
}

TEST_F(ShardTableTest, DenseInitIsIndependentOfShardCount) {
  TableConfig config = Dense(10000);
  config.initializer.type = InitializerType::kNormal;
  config.initializer.mean = 0.5f;
  config.initializer.stddev = 2.0f;
  config.initializer.seed = 7;
  std::vector<float> whole = PullDense(*Make(config), 0, 10000);
  double sum = 0;
  for (float v : whole) sum += v;
  EXPECT_NEAR(sum / whole.size(), 0.5, 0.1);  // 5 sigma of the mean
  std::vector<float> joined;
  for (uint32_t s = 0; s < 3; ++s) {
    auto table = Make(config, s, 3);
    Range r = table->owned_range();
    std::vector<float> part = PullDense(*table, r.begin, r.size());
    joined.insert(joined.end(), part.begin(), part.end());
  }
  EXPECT_EQ(joined, whole);
}

TEST_F(ShardTableTest, SparsePushCreatesRowFromInitializer) {
  auto table = Make(Sparse(2));
  std::vector<float> init(2);
  InitSparseRow(Sparse(2).initializer, 5, absl::MakeSpan(init));
  ASSERT_TRUE(RunReq(*table, SparseReq(proto::PUSH, {5}, {1, -1})).ok());
  proto::DataResponse response;
  ASSERT_TRUE(RunReq(*table, SparseReq(proto::PULL, {5}), &response).ok());
  EXPECT_THAT(Floats(response.values()),
              ElementsAre(init[0] - 1.0f, init[1] + 1.0f));
}

// ------------------------------------------------------------------------ sync

TEST_F(ShardTableTest, SyncAccumulatesAndAppliesTheMeanOnce) {
  TableConfig config = Dense(4, Consistency::kSync);
  config.optimizer.learning_rate = 1.0f;
  config.initializer.value = 0.0f;
  auto table = Make(config);
  const absl::flat_hash_set<uint32_t> live = {0, 1};
  ASSERT_TRUE(RunReq(*table, DenseReq(proto::PUSH, 0, 4, {1, 2, 3, 4}, 0, 0)).ok());
  ASSERT_TRUE(RunReq(*table, DenseReq(proto::PUSH, 0, 4, {3, 2, 1, 0}, 1, 0)).ok());
  // Nothing is applied before every worker clocked.
  EXPECT_THAT(PullDense(*table, 0, 4), ElementsAre(0, 0, 0, 0));
  EXPECT_EQ(table->version(), 0u);
  EXPECT_EQ(*table->ApplyStepsUpTo(0, live), 0);
  EXPECT_EQ(*table->ApplyStepsUpTo(1, live), 1);
  EXPECT_THAT(PullDense(*table, 0, 4), ElementsAre(-2, -2, -2, -2));
  EXPECT_EQ(table->version(), 1u);
  EXPECT_EQ(table->steps(), 1);

  // Old and future steps are refused.
  absl::Status old = RunReq(*table, DenseReq(proto::PUSH, 0, 1, {1}, 0, 0));
  EXPECT_EQ(old.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(old.message(), HasSubstr("already applied"));
  EXPECT_EQ(RunReq(*table, DenseReq(proto::PUSH, 0, 1, {1}, 0, 2)).code(),
            absl::StatusCode::kFailedPrecondition);

  // Step 1: only worker 0 pushes, both are live: its gradient counts half
  // (worker 1 contributed a zero gradient).
  ASSERT_TRUE(RunReq(*table, DenseReq(proto::PUSH, 0, 2, {4, 8}, 0, 1)).ok());
  EXPECT_EQ(*table->ApplyStepsUpTo(2, live), 1);
  EXPECT_THAT(PullDense(*table, 0, 4), ElementsAre(-4, -6, -2, -2));

  // Step 2: both push, then worker 1 is evicted: its gradient still counts.
  ASSERT_TRUE(RunReq(*table, DenseReq(proto::PUSH, 0, 1, {2}, 0, 2)).ok());
  ASSERT_TRUE(RunReq(*table, DenseReq(proto::PUSH, 0, 1, {6}, 1, 2)).ok());
  EXPECT_EQ(*table->ApplyStepsUpTo(3, {0}), 1);
  EXPECT_THAT(PullDense(*table, 0, 1), ElementsAre(-8));
  EXPECT_EQ(table->version(), 3u);

  // Steps without pushes advance the step count only.
  EXPECT_EQ(*table->ApplyStepsUpTo(6, live), 3);
  EXPECT_EQ(table->steps(), 6);
  EXPECT_EQ(table->version(), 3u);
  EXPECT_THAT(PullDense(*table, 0, 4), ElementsAre(-8, -6, -2, -2));
}

TEST_F(ShardTableTest, SyncSparseUpdatesOnlyTouchedRows) {
  TableConfig config = Sparse(2, Consistency::kSync);
  config.optimizer.type = "momentum";
  config.optimizer.params["momentum"] = 0.5f;
  config.initializer.type = InitializerType::kZeros;
  auto table = Make(config);
  const absl::flat_hash_set<uint32_t> live = {0, 1};
  ASSERT_TRUE(RunReq(*table, SparseReq(proto::PULL, {1, 2, 3})).ok());
  ASSERT_TRUE(RunReq(*table, SparseReq(proto::PUSH, {1, 2}, {2, 2, 4, 4}, 0)).ok());
  ASSERT_TRUE(RunReq(*table, SparseReq(proto::PUSH, {2}, {2, 2}, 1)).ok());
  ASSERT_TRUE(table->ApplyStepsUpTo(1, live).ok());
  proto::DataResponse r;
  ASSERT_TRUE(RunReq(*table, SparseReq(proto::PULL, {1, 2, 3}), &r).ok());
  // Row 1: mean 1; row 2: mean 3; row 3 untouched. lr 1, v = g.
  EXPECT_THAT(Floats(r.values()), ElementsAre(-1, -1, -3, -3, 0, 0));
  // Next step touches only row 3: momentum of rows 1, 2 does not move them.
  ASSERT_TRUE(RunReq(*table, SparseReq(proto::PUSH, {3}, {2, 2}, 0, 1)).ok());
  ASSERT_TRUE(table->ApplyStepsUpTo(2, live).ok());
  ASSERT_TRUE(RunReq(*table, SparseReq(proto::PULL, {1, 2, 3}), &r).ok());
  EXPECT_THAT(Floats(r.values()), ElementsAre(-1, -1, -3, -3, -1, -1));
  EXPECT_EQ(r.step(), 2);
  EXPECT_EQ(r.version(), 2u);
}

TEST_F(ShardTableTest, StatsCountRequests) {
  auto table = Make(Dense(4));
  ASSERT_TRUE(RunReq(*table, DenseReq(proto::PUSH, 0, 2, {1, 1})).ok());
  PullDense(*table, 0, 4);
  proto::TableStats stats;
  table->FillStats(&stats);
  EXPECT_EQ(stats.name(), "w");
  EXPECT_EQ(stats.table_id(), 3u);
  EXPECT_EQ(stats.pushes(), 1u);
  EXPECT_EQ(stats.pulls(), 1u);
  EXPECT_EQ(stats.bytes_in(), 8u);
  EXPECT_EQ(stats.bytes_out(), 16u);
  EXPECT_EQ(stats.num_elements(), 4u);
  EXPECT_EQ(stats.version(), 1u);
}

}  // namespace
}  // namespace ps
