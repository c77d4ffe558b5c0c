// A server with `device: cuda` serving a sync job gives the same parameters as
// a CPU server, within float tolerance. Skips (with the server's own message)
// where no CUDA device is visible or the build has no CUDA support.
#include <cmath>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"

namespace ps::testing {
namespace {

constexpr int kSize = 4099;
constexpr int kSteps = 15;
constexpr int kDim = 8;

std::string Body(const std::string& device) {
  return "server:\n  device: " + device + R"(
tables:
  - name: w
    kind: dense
    size: 4099
    consistency: sync
    initializer: {type: uniform, low: -1.0, high: 1.0, seed: 3}
    optimizer: {type: adam, learning_rate: 0.01, weight_decay: 0.001}
  - name: emb
    kind: sparse
    dim: 8
    consistency: sync
    initializer: {type: normal, stddev: 0.1, seed: 5}
    optimizer: {type: momentum, learning_rate: 0.05, momentum: 0.9, nesterov: true}
)";
}

struct Result {
  std::vector<float> dense;
  std::vector<float> rows;
};

// Two workers, each pushing parameter-dependent gradients for kSteps steps.
absl::StatusOr<Result> RunSyncJob(const LocalCluster& cluster) {
  std::vector<absl::Status> status(2);
  std::vector<std::thread> threads;
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < 200; ++k) keys.push_back(k * 7919 + 13);
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      absl::StatusOr<std::unique_ptr<Client>> client = cluster.Connect(w);
      if (!client.ok()) {
        status[w] = client.status();
        return;
      }
      std::vector<float> p(kSize), g(kSize), rows(keys.size() * kDim),
          rg(keys.size() * kDim);
      for (int step = 0; step < kSteps && status[w].ok(); ++step) {
        status[w] = (*client)->PullDense(0, 0, absl::MakeSpan(p)).Wait();
        if (status[w].ok()) {
          status[w] = (*client)->PullSparse(1, keys, absl::MakeSpan(rows)).Wait();
        }
        if (!status[w].ok()) return;
        for (int i = 0; i < kSize; ++i) g[i] = (w + 1) * p[i] - std::sin(i);
        for (size_t i = 0; i < rg.size(); ++i) rg[i] = rows[i] * (1 + w) + 0.01f;
        status[w] = (*client)->PushDense(0, 0, g).Wait();
        if (status[w].ok()) status[w] = (*client)->PushSparse(1, keys, rg).Wait();
        if (status[w].ok()) status[w] = (*client)->Clock().status();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : status) {
    if (!s.ok()) return s;
  }
  absl::StatusOr<std::unique_ptr<Client>> reader = cluster.Connect(-1);
  if (!reader.ok()) return reader.status();
  Result r;
  r.dense.resize(kSize);
  r.rows.resize(keys.size() * kDim);
  absl::Status s = (*reader)->PullDense(0, 0, absl::MakeSpan(r.dense)).Wait();
  if (s.ok()) s = (*reader)->PullSparse(1, keys, absl::MakeSpan(r.rows)).Wait();
  if (!s.ok()) return s;
  return r;
}

double MaxRelError(const std::vector<float>& got, const std::vector<float>& ref) {
  double err = 0, scale = 1e-3;
  for (size_t i = 0; i < ref.size(); ++i) {
    err = std::max(err, static_cast<double>(std::abs(got[i] - ref[i])));
    scale = std::max(scale, static_cast<double>(std::abs(ref[i])));
  }
  return err / scale;
}

// True (and the reason in `why`) when a CUDA-backed cluster could not start
// because this host or build has no CUDA: the test then skips.
bool NoCudaHere(const absl::Status& start, std::string* why) {
  *why = std::string(start.message());
  return absl::StrContains(*why, "no CUDA device") ||
         absl::StrContains(*why, "no CUDA support");
}

TEST(CudaServerEquivalenceTest, CudaServerMatchesCpuServerOnSyncJob) {
  ClusterSpec cuda_spec;
  cuda_spec.num_servers = 2;
  cuda_spec.num_workers = 2;
  cuda_spec.body_yaml = Body("cuda");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cuda = LocalCluster::Start(cuda_spec);
  std::string why;
  if (!cuda.ok() && NoCudaHere(cuda.status(), &why)) {
    GTEST_SKIP() << "no GPU here: " << why;
  }
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  absl::StatusOr<Result> on_gpu = RunSyncJob(**cuda);
  ASSERT_TRUE(on_gpu.ok()) << on_gpu.status();

  ClusterSpec cpu_spec = cuda_spec;
  cpu_spec.body_yaml = Body("cpu");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cpu = LocalCluster::Start(cpu_spec);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  absl::StatusOr<Result> on_cpu = RunSyncJob(**cpu);
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.status();

  EXPECT_LE(MaxRelError(on_gpu->dense, on_cpu->dense), 1e-5);
  EXPECT_LE(MaxRelError(on_gpu->rows, on_cpu->rows), 1e-5);
}

// A sparse table with every row-lifecycle feature at once: half-precision
// rows (float16 storage and wire), a count filter, eviction by capacity and
// by clock TTL, Adagrad. One worker issues every call in turn, so the
// lifecycle (which ids are admitted, which least recently used rows go) is
// the same on every run; a CUDA-backed server must then keep the same rows
// as a CPU-backed one, with the same counters.
std::string LifecycleBody(const std::string& device) {
  return "server:\n  device: " + device + R"(
tables:
  - name: ctr
    kind: sparse
    dim: 8
    consistency: async
    value_type: float16
    storage_type: float16
    initializer: {type: normal, stddev: 0.1, seed: 11}
    optimizer: {type: adagrad, learning_rate: 0.05}
    admission: {min_count: 2}
    eviction: {max_rows_per_shard: 40, ttl_clocks: 6}
)";
}

constexpr int kLifecycleIds = 200;

struct LifecycleResult {
  std::vector<float> rows;  // every id 0..kLifecycleIds-1, pulled at the end
  std::vector<ShardStats::Table> shards;
};

absl::StatusOr<LifecycleResult> RunLifecycleJob(const LocalCluster& cluster) {
  absl::StatusOr<std::unique_ptr<Client>> client = cluster.Connect(0);
  if (!client.ok()) return client.status();
  for (int step = 0; step < 30; ++step) {
    // 40 distinct ids a step, sliding over the id space: ids come back
    // (admitted at their second push), age out (TTL) and crowd each other
    // out (capacity).
    std::vector<uint64_t> ids;
    for (int j = 0; j < 40; ++j) ids.push_back((step * 17 + j * 5) % kLifecycleIds);
    std::vector<float> rows(ids.size() * kDim), grads(ids.size() * kDim);
    absl::Status s = (*client)->PullSparse(0, ids, absl::MakeSpan(rows)).Wait();
    if (!s.ok()) return s;
    for (size_t i = 0; i < grads.size(); ++i) {
      grads[i] = 0.5f * rows[i] + 0.01f * static_cast<float>(i % 7) - 0.02f;
    }
    s = (*client)->PushSparse(0, ids, grads).Wait();
    if (!s.ok()) return s;
    if (absl::StatusOr<int64_t> c = (*client)->Clock(); !c.ok()) return c.status();
  }
  LifecycleResult r;
  std::vector<uint64_t> all(kLifecycleIds);
  for (int i = 0; i < kLifecycleIds; ++i) all[i] = i;
  r.rows.resize(all.size() * kDim);
  absl::Status s = (*client)->PullSparse(0, all, absl::MakeSpan(r.rows)).Wait();
  if (!s.ok()) return s;
  absl::StatusOr<std::vector<ShardStats>> stats = (*client)->GetStats();
  if (!stats.ok()) return stats.status();
  for (const ShardStats& shard : *stats) r.shards.push_back(shard.tables.at(0));
  return r;
}

TEST(CudaServerEquivalenceTest, CudaServerKeepsTheSameSparseLifecycleAsCpu) {
  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = 1;
  spec.body_yaml = LifecycleBody("cuda");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cuda = LocalCluster::Start(spec);
  std::string why;
  if (!cuda.ok() && NoCudaHere(cuda.status(), &why)) {
    GTEST_SKIP() << "no GPU here: " << why;
  }
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  absl::StatusOr<LifecycleResult> on_gpu = RunLifecycleJob(**cuda);
  ASSERT_TRUE(on_gpu.ok()) << on_gpu.status();

  spec.body_yaml = LifecycleBody("cpu");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cpu = LocalCluster::Start(spec);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  absl::StatusOr<LifecycleResult> on_cpu = RunLifecycleJob(**cpu);
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.status();

  ASSERT_EQ(on_gpu->shards.size(), on_cpu->shards.size());
  uint64_t evicted = 0;
  for (size_t i = 0; i < on_cpu->shards.size(); ++i) {
    const ShardStats::Table& g = on_gpu->shards[i];
    const ShardStats::Table& c = on_cpu->shards[i];
    EXPECT_EQ(g.num_rows, c.num_rows) << "shard " << i;
    EXPECT_EQ(g.rows_admitted, c.rows_admitted) << "shard " << i;
    EXPECT_EQ(g.rows_evicted, c.rows_evicted) << "shard " << i;
    EXPECT_EQ(g.ids_pending, c.ids_pending) << "shard " << i;
    EXPECT_LE(c.num_rows, 40u) << "shard " << i;
    evicted += c.rows_evicted;
  }
  EXPECT_GT(evicted, 0u) << "the job should have evicted rows";
  // float16 keeps 11 significant bits: both backends compute the update in
  // float32 and round once, so they agree to within one rounding step.
  EXPECT_LE(MaxRelError(on_gpu->rows, on_cpu->rows), 2e-3);
}

}  // namespace
}  // namespace ps::testing
