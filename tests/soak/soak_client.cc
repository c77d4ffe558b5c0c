// One process of the soak test (soak_test.cc): `--threads` threads share
// two Clients and, until `--seconds` have passed, issue a random mix of
// pipelined dense / sparse pushes (+1 gradients) and pulls against the
// cluster's async tables "dense" (table 0) and "emb" (table 1).
//
// Writes to `--out` what the test needs to compute the exact final values:
//   errors <n>            failed requests (must be 0)
//   pulls <n>
//   dense_pushes <n>      whole-table +1 pushes
//   sparse <i> <n>        pushes of +1 to key index i (soak::KeyOf(i))
// and exits 0, or non-zero when it could not connect.
//
// Every pull is also checked on the spot: values are integers <= 0 and no
// element is above what the same thread pulled before (values only go down).
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "common/command_line.h"
#include "tests/soak/soak_workload.h"

ABSL_FLAG(std::string, servers, "", "comma-separated host:port, shard order");
ABSL_FLAG(int, threads, 8, "client threads");
ABSL_FLAG(double, seconds, 30, "how long to run");
ABSL_FLAG(int, seed, 1, "random seed (the process index)");
ABSL_FLAG(std::string, out, "", "result file");

namespace ps {
namespace {

using soak::kDenseSize;
using soak::kDim;
using soak::KeyOf;
using soak::kNumKeys;
constexpr uint32_t kDense = soak::kDenseTable;
constexpr uint32_t kSparse = soak::kSparseTable;
constexpr size_t kMaxInFlight = 4;  // pipelined pushes per thread

struct Counts {
  int64_t errors = 0;
  int64_t pulls = 0;
  int64_t dense_pushes = 0;
  std::vector<int64_t> sparse = std::vector<int64_t>(kNumKeys, 0);
};

bool CheckPulled(absl::Span<const float> now, std::vector<float>* before,
                 std::string* problem) {
  for (size_t i = 0; i < now.size(); ++i) {
    if (now[i] > 0.0f || now[i] != std::floor(now[i])) {
      *problem = "pulled value " + std::to_string(now[i]) + " at " +
                 std::to_string(i) + " is not an integer <= 0";
      return false;
    }
    if (!before->empty() && now[i] > (*before)[i]) {
      *problem = "value at " + std::to_string(i) + " went up from " +
                 std::to_string((*before)[i]) + " to " +
                 std::to_string(now[i]);
      return false;
    }
  }
  before->assign(now.begin(), now.end());
  return true;
}

void RunThread(Client* client, int seed, absl::Time deadline, Counts* counts) {
  std::mt19937_64 rng(seed);
  const std::vector<float> dense_grad(kDenseSize, 1.0f);
  std::vector<float> dense_out(kDenseSize);
  std::vector<float> last_dense;
  std::vector<Future> in_flight;
  auto settle = [&](size_t keep) {
    while (in_flight.size() > keep) {
      if (!in_flight.front().Wait().ok()) {
        absl::Status s = in_flight.front().Wait();
        std::cerr << "request failed: " << s << "\n";
        ++counts->errors;
      }
      in_flight.erase(in_flight.begin());
    }
  };
  while (absl::Now() < deadline) {
    const int what = static_cast<int>(rng() % 10);
    if (what < 3) {  // dense push of the whole table
      in_flight.push_back(client->PushDense(kDense, 0, dense_grad));
      ++counts->dense_pushes;
    } else if (what < 7) {  // sparse push of 1..32 keys (duplicates allowed)
      const int n = 1 + static_cast<int>(rng() % 32);
      std::vector<uint64_t> keys(n);
      for (int k = 0; k < n; ++k) {
        const int i = static_cast<int>(rng() % kNumKeys);
        keys[k] = KeyOf(i);
        ++counts->sparse[i];  // a duplicate adds its gradient again
      }
      in_flight.push_back(client->PushSparse(
          kSparse, keys, std::vector<float>(n * kDim, 1.0f)));
    } else if (what < 9) {  // dense pull
      settle(0);
      absl::Status s =
          client->PullDense(kDense, 0, absl::MakeSpan(dense_out)).Wait();
      ++counts->pulls;
      std::string problem;
      if (!s.ok()) {
        std::cerr << "dense pull failed: " << s << "\n";
        ++counts->errors;
      } else if (!CheckPulled(dense_out, &last_dense, &problem)) {
        std::cerr << "dense pull: " << problem << "\n";
        ++counts->errors;
      }
    } else {  // sparse pull of 16 keys
      std::vector<uint64_t> keys(16);
      for (uint64_t& k : keys) k = KeyOf(static_cast<int>(rng() % kNumKeys));
      std::vector<float> out(keys.size() * kDim);
      absl::Status s = client->PullSparse(kSparse, keys, absl::MakeSpan(out))
                           .Wait();
      ++counts->pulls;
      std::vector<float> none;
      std::string problem;
      if (!s.ok()) {
        std::cerr << "sparse pull failed: " << s << "\n";
        ++counts->errors;
      } else if (!CheckPulled(out, &none, &problem)) {
        std::cerr << "sparse pull: " << problem << "\n";
        ++counts->errors;
      }
    }
    settle(kMaxInFlight);
  }
  settle(0);
}

int Main() {
  ClientOptions options;
  options.servers = absl::StrSplit(absl::GetFlag(FLAGS_servers), ',');
  options.worker_id = -1;
  constexpr int kClients = 2;
  std::vector<std::unique_ptr<Client>> clients;
  for (int c = 0; c < kClients; ++c) {
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
    if (!client.ok()) {
      std::cerr << "connect: " << client.status() << "\n";
      return 2;
    }
    clients.push_back(std::move(*client));
  }
  const int num_threads = absl::GetFlag(FLAGS_threads);
  const absl::Time deadline =
      absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_seconds));
  std::vector<Counts> counts(num_threads);
  std::vector<std::thread> threads;
  for (int t = 0; t < num_threads; ++t) {
    threads.emplace_back([&, t] {
      RunThread(clients[t % kClients].get(),
                absl::GetFlag(FLAGS_seed) * 1000 + t, deadline, &counts[t]);
    });
  }
  for (std::thread& t : threads) t.join();

  Counts total;
  for (const Counts& c : counts) {
    total.errors += c.errors;
    total.pulls += c.pulls;
    total.dense_pushes += c.dense_pushes;
    for (int i = 0; i < kNumKeys; ++i) total.sparse[i] += c.sparse[i];
  }
  std::ofstream out(absl::GetFlag(FLAGS_out));
  out << "errors " << total.errors << "\n";
  out << "pulls " << total.pulls << "\n";
  out << "dense_pushes " << total.dense_pushes << "\n";
  for (int i = 0; i < kNumKeys; ++i) {
    out << "sparse " << i << " " << total.sparse[i] << "\n";
  }
  out.close();
  return out ? 0 : 3;
}

}  // namespace
}  // namespace ps

int main(int argc, char** argv) {
  ps::ParseCommandLineWithHelp(
      argc, argv,
      "one process of the soak test (tests/soak/soak_test.cc).\n\n"
      "  soak_client --servers H:P,... [--threads N] [--seconds S] [--seed N] "
      "--out FILE",
      {__FILE__});
  return ps::Main();
}
