// Async consistency: concurrent pushes to the same keys all land exactly once.
// 2 server processes, 4 concurrent clients, each pushing a gradient of +1 with
// SGD(lr=1) to every key of a dense and a sparse table 500 times: every value
// must end at exactly -2000 (float represents every integer in range exactly).
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cluster_harness.h"

namespace ps::testing {
namespace {

constexpr int kClients = 4;
constexpr int kRounds = 500;
constexpr int kDenseSize = 1000;
constexpr int kSparseKeys = 300;
constexpr int kDim = 4;

TEST(NoLostUpdatesTest, ConcurrentPushesAllLandExactlyOnce) {
  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = 1;
  spec.body_yaml = R"(
tables:
  - name: dense
    kind: dense
    size: 1000
    optimizer: {type: sgd, learning_rate: 1.0}
  - name: emb
    kind: sparse
    dim: 4
    optimizer: {type: sgd, learning_rate: 1.0}
)";
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(spec);
  ASSERT_TRUE(cluster.ok()) << cluster.status();

  std::vector<uint64_t> keys(kSparseKeys);
  for (int i = 0; i < kSparseKeys; ++i) keys[i] = 1000003ull * i + 7;

  std::vector<std::thread> threads;
  std::vector<absl::Status> results(kClients);
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      absl::StatusOr<std::unique_ptr<Client>> client = (*cluster)->Connect(-1);
      if (!client.ok()) {
        results[c] = client.status();
        return;
      }
      const std::vector<float> dense_grad(kDenseSize, 1.0f);
      const std::vector<float> sparse_grad(kSparseKeys * kDim, 1.0f);
      std::vector<Future> in_flight;
      for (int r = 0; r < kRounds; ++r) {
        in_flight.push_back((*client)->PushDense(0, 0, dense_grad));
        in_flight.push_back((*client)->PushSparse(1, keys, sparse_grad));
        if (in_flight.size() >= 16) {  // keep a bounded pipeline
          absl::Status s = WaitAll(in_flight);
          if (!s.ok()) {
            results[c] = s;
            return;
          }
          in_flight.clear();
        }
      }
      results[c] = WaitAll(in_flight);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int c = 0; c < kClients; ++c) {
    ASSERT_TRUE(results[c].ok()) << "client " << c << ": " << results[c];
  }

  absl::StatusOr<std::unique_ptr<Client>> reader = (*cluster)->Connect(-1);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<float> dense(kDenseSize, 123.0f);
  ASSERT_TRUE((*reader)->PullDense(0, 0, absl::MakeSpan(dense)).Wait().ok());
  std::vector<float> sparse(kSparseKeys * kDim, 123.0f);
  ASSERT_TRUE((*reader)->PullSparse(1, keys, absl::MakeSpan(sparse)).Wait().ok());
  const float expected = -1.0f * kClients * kRounds;
  for (int i = 0; i < kDenseSize; ++i) {
    ASSERT_EQ(dense[i], expected) << "dense element " << i;
  }
  for (int i = 0; i < kSparseKeys * kDim; ++i) {
    ASSERT_EQ(sparse[i], expected) << "sparse value " << i;
  }

  // Both shards saw traffic: the partition really spreads keys.
  absl::StatusOr<std::vector<ShardStats>> stats = (*reader)->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->size(), 2u);
  for (const ShardStats& shard : *stats) {
    ASSERT_EQ(shard.tables.size(), 2u);
    EXPECT_GT(shard.tables[1].num_rows, 0u) << "shard " << shard.shard_index;
  }
}

}  // namespace
}  // namespace ps::testing
