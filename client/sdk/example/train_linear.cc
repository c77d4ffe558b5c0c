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
#include <algorithm>
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

struct Args {
  std::vector<std::string> servers;
  int index = -1;
  int steps = 300;
};

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

// False (after a message) for unknown or missing arguments.
bool ParseArgs(int argc, char** argv, Args* args) {
  if (const char* index = std::getenv("PS_WORKER_INDEX")) {
    args->index = std::atoi(index);
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--servers=", 0) == 0) {
      args->servers = Split(arg.substr(10));
    } else if (arg.rfind("--index=", 0) == 0) {
      args->index = std::atoi(argv[i] + 8);
    } else if (arg.rfind("--steps=", 0) == 0) {
      args->steps = std::atoi(argv[i] + 8);
    } else {
      std::fprintf(stderr, "train_linear: unknown argument %s\n", argv[i]);
      return false;
    }
  }
  if (args->servers.empty() || args->index < 0 || args->steps <= 0) {
    std::fprintf(stderr, "usage: train_linear --servers=HOST:PORT[,...] "
                         "--index=I [--steps=N]\n");
    return false;
  }
  return true;
}

// A batch of the synthetic regression y = x . target.
struct Batch {
  std::vector<float> x, y;
};

Batch MakeBatch(const std::vector<float>& target, std::mt19937* rng) {
  const size_t dim = target.size();
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Batch batch{std::vector<float>(kBatch * dim), std::vector<float>(kBatch)};
  for (int b = 0; b < kBatch; ++b) {
    for (size_t j = 0; j < dim; ++j) {
      batch.x[b * dim + j] = normal(*rng);
      batch.y[b] += batch.x[b * dim + j] * target[j];
    }
  }
  return batch;
}

// Gradient of the batch mean of 0.5 * (x . w - y)^2 into `grad`; returns
// that loss.
double Gradient(const Batch& batch, const std::vector<float>& w,
                std::vector<float>* grad) {
  const size_t dim = w.size();
  double loss = 0.0;
  std::fill(grad->begin(), grad->end(), 0.0f);
  for (int b = 0; b < kBatch; ++b) {
    float residual = -batch.y[b];
    for (size_t j = 0; j < dim; ++j) residual += batch.x[b * dim + j] * w[j];
    loss += 0.5 * residual * residual / kBatch;
    for (size_t j = 0; j < dim; ++j) {
      (*grad)[j] += residual * batch.x[b * dim + j] / kBatch;
    }
  }
  return loss;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}

int Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "train_linear: %s: %s\n", what.c_str(),
               status.ToString().c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ps::TuneAllocatorForLargeMessages();
  Args args;
  if (!ParseArgs(argc, argv, &args)) return 2;
  ps::ClientOptions options;
  options.servers = args.servers;
  options.worker_id = args.index;
  absl::StatusOr<std::unique_ptr<ps::Client>> client =
      ps::Client::Connect(options);
  if (!client.ok()) return Fail("connect", client.status());
  absl::StatusOr<ps::TableInfo> table = (*client)->GetTable("linear");
  if (!table.ok()) return Fail("table 'linear'", table.status());
  const uint32_t id = table->table_id;

  std::vector<float> target(table->size), w(table->size), grad(table->size);
  for (size_t j = 0; j < target.size(); ++j) target[j] = 0.5f * j - 1.0f;
  std::mt19937 rng(1234 + args.index);  // this worker's data stream
  std::printf("START worker=%d model=linear(%zu) framework=cpp-sdk "
              "steps_per_epoch=%d epochs=1 batch_size=%d\n",
              args.index, target.size(), args.steps, kBatch);
  std::fflush(stdout);
  const auto start = std::chrono::steady_clock::now();
  for (int step = 1; step <= args.steps; ++step) {
    const Batch batch = MakeBatch(target, &rng);
    absl::Status s = (*client)->PullDense(id, 0, absl::MakeSpan(w)).Wait();
    if (!s.ok()) return Fail("pull", s);
    const double loss = Gradient(batch, w, &grad);
    if (!(s = (*client)->PushDense(id, 0, grad).Wait()).ok()) {
      return Fail("push", s);
    }
    absl::StatusOr<int64_t> clock = (*client)->Clock();  // ends the step
    if (!clock.ok()) return Fail("clock", clock.status());
    if (step % 50 == 0) {
      const double t = SecondsSince(start);
      std::printf("PROGRESS worker=%d epoch=1 step=%d loss=%.6f "
                  "samples_per_s=%.1f time_s=%.3f\n",
                  args.index, step, loss, step * kBatch / t, t);
      std::fflush(stdout);
    }
  }
  absl::Status s = (*client)->PullDense(id, 0, absl::MakeSpan(w)).Wait();
  if (!s.ok()) return Fail("final pull", s);
  double max_error = 0.0;
  for (size_t j = 0; j < w.size(); ++j) {
    max_error = std::max(max_error, std::fabs(double{w[j]} - target[j]));
  }
  const double wall = SecondsSince(start);
  std::printf("FINAL worker=%d steps=%d max_weight_error=%.6f time_s=%.3f\n",
              args.index, args.steps, max_error, wall);
  std::printf("DONE worker=%d steps=%d samples=%d wall_s=%.3f "
              "samples_per_s=%.1f\n",
              args.index, args.steps, args.steps * kBatch, wall,
              args.steps * kBatch / wall);
  return max_error < 1e-3 ? 0 : 1;
}
