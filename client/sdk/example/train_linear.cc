// A trainer of your own over the C++ client SDK, built with CMake outside
// this repository (see CMakeLists.txt): least-squares linear regression
// y = x . w* on synthetic data, the weights in the cluster's dense table
// "linear" (updated by the servers' optimizer), one worker per process.
//
//   train_linear --servers=HOST:PORT[,HOST:PORT...] --index=I [--steps=N]
//
// --index defaults to $PS_WORKER_INDEX. Prints the worker protocol lines
// (START / PROGRESS / FINAL / DONE) and exits 0 when the learned weights
// are within 1e-3 of w*, 1 otherwise (2 for bad arguments or SDK errors).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "client/client.h"
#include "common/process_tuning.h"

namespace {

constexpr int kBatch = 32;

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const size_t end = comma == std::string::npos ? text.size() : comma;
    if (end > start) parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

int Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "train_linear: %s: %s\n", what.c_str(),
               status.ToString().c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ps::TuneAllocatorForLargeMessages();
  std::string servers;
  int index = std::getenv("PS_WORKER_INDEX") != nullptr
                  ? std::atoi(std::getenv("PS_WORKER_INDEX"))
                  : -1;
  int steps = 300;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--servers=", 0) == 0) servers = arg.substr(10);
    else if (arg.rfind("--index=", 0) == 0) index = std::atoi(argv[i] + 8);
    else if (arg.rfind("--steps=", 0) == 0) steps = std::atoi(argv[i] + 8);
    else {
      std::fprintf(stderr, "train_linear: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (servers.empty() || index < 0 || steps <= 0) {
    std::fprintf(stderr, "usage: train_linear --servers=HOST:PORT[,...] "
                         "--index=I [--steps=N]\n");
    return 2;
  }

  ps::ClientOptions options;
  options.servers = Split(servers);
  options.worker_id = index;
  absl::StatusOr<std::unique_ptr<ps::Client>> client =
      ps::Client::Connect(options);
  if (!client.ok()) return Fail("connect", client.status());
  absl::StatusOr<ps::TableInfo> table = (*client)->GetTable("linear");
  if (!table.ok()) return Fail("table 'linear'", table.status());
  const int dim = static_cast<int>(table->size);

  // The target weights and this worker's data stream.
  std::vector<float> target(dim);
  for (int j = 0; j < dim; ++j) target[j] = 0.5f * static_cast<float>(j) - 1.0f;
  std::mt19937 rng(1234 + index);
  std::normal_distribution<float> normal(0.0f, 1.0f);

  std::printf("START worker=%d model=linear(%d) framework=cpp-sdk "
              "steps_per_epoch=%d epochs=1 batch_size=%d\n",
              index, dim, steps, kBatch);
  std::fflush(stdout);
  const auto start = std::chrono::steady_clock::now();
  std::vector<float> w(dim), grad(dim), x(kBatch * dim), y(kBatch);
  for (int step = 1; step <= steps; ++step) {
    for (int b = 0; b < kBatch; ++b) {
      y[b] = 0.0f;
      for (int j = 0; j < dim; ++j) {
        x[b * dim + j] = normal(rng);
        y[b] += x[b * dim + j] * target[j];
      }
    }
    absl::Status s = (*client)->PullDense(table->table_id, 0,
                                          absl::MakeSpan(w)).Wait();
    if (!s.ok()) return Fail("pull", s);
    // Gradient of the mean of 0.5 * (x . w - y)^2 over the batch.
    double loss = 0.0;
    std::fill(grad.begin(), grad.end(), 0.0f);
    for (int b = 0; b < kBatch; ++b) {
      float residual = -y[b];
      for (int j = 0; j < dim; ++j) residual += x[b * dim + j] * w[j];
      loss += 0.5 * residual * residual / kBatch;
      for (int j = 0; j < dim; ++j) {
        grad[j] += residual * x[b * dim + j] / kBatch;
      }
    }
    s = (*client)->PushDense(table->table_id, 0, grad).Wait();
    if (!s.ok()) return Fail("push", s);
    absl::StatusOr<int64_t> clock = (*client)->Clock();
    if (!clock.ok()) return Fail("clock", clock.status());
    if (step % 50 == 0) {
      const double t = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start).count();
      std::printf("PROGRESS worker=%d epoch=1 step=%d loss=%.6f "
                  "samples_per_s=%.1f time_s=%.3f\n",
                  index, step, loss, step * kBatch / t, t);
      std::fflush(stdout);
    }
  }
  absl::Status s =
      (*client)->PullDense(table->table_id, 0, absl::MakeSpan(w)).Wait();
  if (!s.ok()) return Fail("final pull", s);
  double max_error = 0.0;
  for (int j = 0; j < dim; ++j) {
    max_error = std::max(max_error, std::fabs(double{w[j]} - target[j]));
  }
  const double wall = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start).count();
  std::printf("FINAL worker=%d steps=%d max_weight_error=%.6f time_s=%.3f\n",
              index, steps, max_error, wall);
  std::printf("DONE worker=%d steps=%d samples=%d wall_s=%.3f "
              "samples_per_s=%.1f\n",
              index, steps, steps * kBatch, wall, steps * kBatch / wall);
  return max_error < 1e-3 ? 0 : 1;
}
