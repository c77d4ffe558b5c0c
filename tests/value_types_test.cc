// Tables whose values travel as float16 / bfloat16 (TableConfig::value_type)
// through real servers: the client encodes pushes and decodes pulls, the
// server decodes at the table's edge and keeps float32 parameters. With
// SGD(lr = 1) a push of g onto w leaves w - round(g) in float32 on the
// server, and a pull returns round(w - round(g)). Where every value is
// exactly representable the results are compared bit for bit; elsewhere
// within one unit of the type. Half-precision values move half the bytes of
// float32 (the shards' byte counters say so).
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/value_type.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"

namespace ps::testing {
namespace {

constexpr int kDenseSize = 1001;  // odd: chunk and shard edges
constexpr int kDim = 8;

// What a value of `type` reads back as.
float Round(ValueType type, float x) {
  const ValueTypeInfo& info = InfoOf(type);
  std::string bytes(info.bytes, '\0');
  info.encode(absl::MakeConstSpan(&x, 1), bytes.data());
  float y;
  info.decode(bytes, &y);
  return y;
}

// `count` units in the last place of `type` at the largest magnitude of
// `values` (an upper bound: 2^-10 |x| >= ulp(x) for float16's 11-bit
// significand, 2^-7 |x| for bfloat16's 8 bits).
float Units(ValueType type, std::initializer_list<float> values, float count) {
  float largest = 0;
  for (float v : values) largest = std::max(largest, std::fabs(v));
  return count * std::ldexp(largest, type == ValueType::kFloat16 ? -10 : -7);
}

std::vector<float> Uniform(std::mt19937* rng, size_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(*rng);
  return v;
}

class ValueTypesTest : public ::testing::TestWithParam<ValueType> {
 protected:
  void SetUp() override {
    ClusterSpec spec;
    spec.num_servers = 2;
    spec.num_workers = 1;
    // A small chunk size, so a dense op is several chunks per shard.
    spec.body_yaml = std::string(R"(
client: {chunk_bytes: 4096}
tables:
  - name: dense
    kind: dense
    size: 1001
    value_type: )") + ValueTypeName(GetParam()) + R"(
    initializer: {type: uniform, low: -1, high: 1, seed: 3}
    optimizer: {type: sgd, learning_rate: 1.0}
  - name: emb
    kind: sparse
    dim: 8
    value_type: )" + ValueTypeName(GetParam()) + R"(
    initializer: {type: normal, stddev: 0.5, seed: 4}
    optimizer: {type: sgd, learning_rate: 1.0}
  - name: exact
    kind: dense
    size: 1001
    value_type: )" + ValueTypeName(GetParam()) + R"(
    initializer: {type: constant, value: 0.5}
    optimizer: {type: sgd, learning_rate: 1.0}
)";
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
        LocalCluster::Start(spec);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(cluster).value();
    absl::StatusOr<std::unique_ptr<Client>> client = cluster_->Connect(-1);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(client).value();
  }

  // Sum of a counter over the shards' stats of table `name`.
  uint64_t Bytes(const std::string& name, bool in) {
    absl::StatusOr<std::vector<ShardStats>> stats = client_->GetStats();
    EXPECT_TRUE(stats.ok()) << stats.status();
    uint64_t total = 0;
    for (const ShardStats& shard : *stats) {
      for (const ShardStats::Table& t : shard.tables) {
        if (t.name == name) total += in ? t.bytes_in : t.bytes_out;
      }
    }
    return total;
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_P(ValueTypesTest, DenseValuesRoundOnceEachWayAndMoveTheirSize) {
  const ValueType type = GetParam();
  absl::StatusOr<TableInfo> table = client_->GetTable("dense");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->value_type, type);
  std::vector<float> before(kDenseSize);
  ASSERT_TRUE(client_->PullDense(0, 0, absl::MakeSpan(before)).Wait().ok());
  // The initial values are float32 on the server; a pull rounds them once.
  for (float v : before) ASSERT_EQ(Round(type, v), v);

  std::mt19937 rng(11);
  const std::vector<float> g = Uniform(&rng, kDenseSize);
  const uint64_t in_before = Bytes("dense", /*in=*/true);
  ASSERT_TRUE(client_->PushDense(0, 0, g).Wait().ok());
  EXPECT_EQ(Bytes("dense", true) - in_before,
            kDenseSize * InfoOf(type).bytes);
  std::vector<float> after(kDenseSize);
  const uint64_t out_before = Bytes("dense", /*in=*/false);
  ASSERT_TRUE(client_->PullDense(0, 0, absl::MakeSpan(after)).Wait().ok());
  EXPECT_EQ(Bytes("dense", false) - out_before,
            kDenseSize * InfoOf(type).bytes);
  for (int i = 0; i < kDenseSize; ++i) {
    // The server holds w0 (which before[i] rounds) minus round(g[i]) in
    // float32. Rounding w0, the result and the reference each err by at most
    // half a unit of the largest magnitude involved.
    const float reference = Round(type, before[i] - Round(type, g[i]));
    ASSERT_NEAR(after[i], reference,
                Units(type, {before[i], g[i], reference}, 1.5f))
        << i;
  }
}

TEST_P(ValueTypesTest, ExactValuesAreExactEndToEnd) {
  // w starts at 0.5 and gradients are multiples of 0.25 in [-0.75, 0.75]:
  // every value involved is exact in every type, so pulls must equal the
  // float32 arithmetic bit for bit.
  std::vector<float> g(kDenseSize);
  for (int i = 0; i < kDenseSize; ++i) g[i] = (i % 7 - 3) * 0.25f;
  for (int round = 1; round <= 2; ++round) {
    ASSERT_TRUE(client_->PushDense(2, 0, g).Wait().ok());
    std::vector<float> w(kDenseSize);
    ASSERT_TRUE(client_->PullDense(2, 0, absl::MakeSpan(w)).Wait().ok());
    for (int i = 0; i < kDenseSize; ++i) {
      ASSERT_EQ(w[i], 0.5f - round * g[i]) << "round " << round << ", " << i;
    }
  }
}

TEST_P(ValueTypesTest, SparseRowsWithDuplicateKeys) {
  const ValueType type = GetParam();
  const std::vector<uint64_t> keys = {5, 900001, 5, 77, 1ull << 40};
  std::vector<float> before(keys.size() * kDim);
  ASSERT_TRUE(client_->PullSparse(1, keys, absl::MakeSpan(before)).Wait().ok());
  for (float v : before) ASSERT_EQ(Round(type, v), v);
  // Duplicates of key 5 (positions 0 and 2) hold the same row.
  for (int j = 0; j < kDim; ++j) ASSERT_EQ(before[j], before[2 * kDim + j]);
  std::vector<float> g(keys.size() * kDim);
  for (size_t i = 0; i < g.size(); ++i) g[i] = 0.125f * (i % 5);
  // On the wire: the 4 distinct keys (8 bytes each) and their rows in the
  // table's value type, half of float32's bytes, each way.
  const uint64_t row_bytes = kDim * InfoOf(type).bytes;
  const uint64_t in_before = Bytes("emb", /*in=*/true);
  ASSERT_TRUE(client_->PushSparse(1, keys, g).Wait().ok());
  EXPECT_EQ(Bytes("emb", true) - in_before, 4 * (8 + row_bytes));
  std::vector<float> after(keys.size() * kDim);
  const uint64_t out_before = Bytes("emb", /*in=*/false);
  ASSERT_TRUE(client_->PullSparse(1, keys, absl::MakeSpan(after)).Wait().ok());
  EXPECT_EQ(Bytes("emb", false) - out_before, 4 * row_bytes);
  for (size_t k = 0; k < keys.size(); ++k) {
    for (int j = 0; j < kDim; ++j) {
      // Key 5's gradient is the sum of its two rows (summed in float32 by
      // the client, then rounded once).
      float grad = g[k * kDim + j];
      if (keys[k] == 5) grad = g[0 * kDim + j] + g[2 * kDim + j];
      const float reference =
          Round(type, before[k * kDim + j] - Round(type, grad));
      ASSERT_NEAR(after[k * kDim + j], reference,
                  Units(type, {before[k * kDim + j], grad, reference}, 1.5f))
          << k << "," << j;
    }
  }
}

TEST_P(ValueTypesTest, NonFiniteGradientIsRefusedAndChangesNothing) {
  std::vector<float> before(kDenseSize);
  ASSERT_TRUE(client_->PullDense(0, 0, absl::MakeSpan(before)).Wait().ok());
  std::vector<float> g(kDenseSize, 0.5f);
  g[777] = NAN;
  absl::Status s = client_->PushDense(0, 0, g).Wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("is not finite (nan)"), std::string::npos) << s;
  // The chunk holding element 777 was refused; the others may have been
  // applied (a push is per chunk); element 777 itself is unchanged.
  std::vector<float> after(kDenseSize);
  ASSERT_TRUE(client_->PullDense(0, 0, absl::MakeSpan(after)).Wait().ok());
  EXPECT_EQ(after[777], before[777]);
}

INSTANTIATE_TEST_SUITE_P(HalfPrecision, ValueTypesTest,
                         ::testing::Values(ValueType::kFloat16,
                                           ValueType::kBfloat16),
                         [](const ::testing::TestParamInfo<ValueType>& info) {
                           return std::string(ValueTypeName(info.param));
                         });

}  // namespace
}  // namespace ps::testing
