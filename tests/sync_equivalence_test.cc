// Sync consistency equals minibatch SGD: 2 workers push gradients that depend
// on the parameters they pulled for 20 steps; the result must equal a
// single-process SGD (computed here in double precision) on the mean of the
// two workers' gradients, to a max relative error of 1e-6.
#include <cmath>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cluster_harness.h"

namespace ps::testing {
namespace {

constexpr int kSize = 1001;  // odd: uneven shards
constexpr int kSteps = 20;
constexpr double kLr = 0.1;

// Worker w's gradient at parameters p: the gradient of the quadratic
// 0.5 * a_w(i) * (p_i - c_w(i))^2, different for each worker and element.
double A(int w, int i) { return 0.5 + 0.25 * w + 0.001 * (i % 17); }
double C(int w, int i) { return std::sin(0.01 * i + w); }
double Grad(int w, int i, double p) { return A(w, i) * (p - C(w, i)); }

TEST(SyncEquivalenceTest, TwoWorkersEqualMinibatchSgd) {
  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = 2;
  spec.body_yaml = R"(
tables:
  - name: w
    kind: dense
    size: 1001
    consistency: sync
    initializer: {type: uniform, low: -1.0, high: 1.0, seed: 7}
    optimizer: {type: sgd, learning_rate: 0.1}
)";
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(spec);
  ASSERT_TRUE(cluster.ok()) << cluster.status();

  // Initial parameters as the servers created them.
  std::vector<float> initial(kSize);
  {
    absl::StatusOr<std::unique_ptr<Client>> reader = (*cluster)->Connect(-1);
    ASSERT_TRUE(reader.ok()) << reader.status();
    ASSERT_TRUE(
        (*reader)->PullDense(0, 0, absl::MakeSpan(initial)).Wait().ok());
  }

  std::vector<absl::Status> results(2);
  std::vector<std::vector<float>> finals(2, std::vector<float>(kSize));
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&, w] {
      absl::StatusOr<std::unique_ptr<Client>> client =
          (*cluster)->Connect(w);
      if (!client.ok()) {
        results[w] = client.status();
        return;
      }
      std::vector<float> params(kSize), grads(kSize);
      for (int step = 0; step < kSteps; ++step) {
        absl::Status s =
            (*client)->PullDense(0, 0, absl::MakeSpan(params)).Wait();
        if (!s.ok()) {
          results[w] = s;
          return;
        }
        for (int i = 0; i < kSize; ++i) {
          grads[i] = static_cast<float>(Grad(w, i, params[i]));
        }
        s = (*client)->PushDense(0, 0, grads).Wait();
        if (s.ok()) s = (*client)->Clock().status();
        if (!s.ok()) {
          results[w] = s;
          return;
        }
      }
      results[w] =
          (*client)->PullDense(0, 0, absl::MakeSpan(finals[w])).Wait();
    });
  }
  for (std::thread& t : workers) t.join();
  ASSERT_TRUE(results[0].ok()) << results[0];
  ASSERT_TRUE(results[1].ok()) << results[1];

  // Reference: single-process minibatch SGD on the mean of the two workers'
  // gradients, in double precision from the same float gradients.
  std::vector<double> ref(initial.begin(), initial.end());
  for (int step = 0; step < kSteps; ++step) {
    for (int i = 0; i < kSize; ++i) {
      const float p = static_cast<float>(ref[i]);
      const double g = 0.5 * (static_cast<float>(Grad(0, i, p)) +
                              static_cast<float>(Grad(1, i, p)));
      ref[i] -= kLr * g;
    }
  }
  // Max relative error, relative to the tensor's scale (max |ref|): float
  // rounding of near-zero elements must not count as a relative blow-up.
  double max_abs_err = 0, max_ref = 0, moved = 0;
  for (int i = 0; i < kSize; ++i) {
    ASSERT_EQ(finals[0][i], finals[1][i]) << "workers disagree at " << i;
    max_abs_err = std::max(max_abs_err, std::abs(finals[0][i] - ref[i]));
    max_ref = std::max(max_ref, std::abs(ref[i]));
    moved = std::max(moved, std::abs(ref[i] - initial[i]));
  }
  EXPECT_LE(max_abs_err / max_ref, 1e-6);
  // The parameters really moved (the test would otherwise be vacuous), and an
  // unaveraged (summed) or single-worker update would be far off.
  EXPECT_GT(moved, 0.1);
}

}  // namespace
}  // namespace ps::testing
