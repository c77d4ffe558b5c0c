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

TEST(CudaServerEquivalenceTest, CudaServerMatchesCpuServerOnSyncJob) {
  ClusterSpec cuda_spec;
  cuda_spec.num_servers = 2;
  cuda_spec.num_workers = 2;
  cuda_spec.body_yaml = Body("cuda");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cuda = LocalCluster::Start(cuda_spec);
  if (!cuda.ok()) {
    const std::string message(cuda.status().message());
    if (absl::StrContains(message, "no CUDA device") ||
        absl::StrContains(message, "no CUDA support")) {
      GTEST_SKIP() << "no GPU here: " << message;
    }
    FAIL() << cuda.status();
  }
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

}  // namespace
}  // namespace ps::testing
