// Sparse pull / push through real servers (issue 17): keys/s for batches of
// 1k / 10k / 100k ids drawn Zipf(1.1) from 1M and 10^8 distinct ids, rows of
// dim 16 and 64, on 1 server x 1 client and 2 servers x 2 clients, each cell
// next to its ceiling measured in the same run.
//
//   bazel run -c opt //tests/bench:sparse_bench -- [--configs 1x1,2x2]
//       [--dims 16,64] [--batches 1000,10000,100000]
//       [--spaces 1000000,100000000] [--seconds 2] [--quick]
//       [--value_type float32|float16|bfloat16]
//   bazel run -c opt //tests/bench:sparse_bench -- --lifecycle_rounds 15
//
// --lifecycle_rounds R (instead of the cells): what the row lifecycle costs
// a client, end to end (sparse_table_bench measures it in-process, against
// the table alone): 1 server x 1 client, dim 16, 8 batches of 10,000 ids
// Zipf(1.1) over 10^6 ids; tables plain, capacity (max_rows_per_shard 4 M:
// the LRU bookkeeping, nothing dropped) and all three rules (count filter 2,
// ttl_clocks 2^40, the capacity rule; every id admitted before timing).
// Each round runs a pull window and a push window of --seconds per table,
// the tables' order rotated round by round; cost = median over rounds of
// 1 - keys/s / the plain table's keys/s in the same round.
//
// A cell: W client threads (one Client each, not workers: async tables),
// each with its own 8 batches, pull (or push, SGD) them back to back for
// --seconds after one warm-up pass (which creates the rows the batches
// name; in the 10^8 space every timed window still creates new rows, as
// training does). keys/s counts the ids the callers passed (duplicates
// included; the SDK sends each unique id once), summed over the clients.
// Ceiling: one thread in this process doing what the servers must do for
// those keys with no network and no protocol: an absl::flat_hash_map
// <uint64, uint32> lookup per id and a memcpy of its row (pull) or an axpy
// into it (push), over the same batches. ratio = keys/s / ceiling.
// --value_type: the tables' wire value type (their rows stay float32 on
// the server); the client encodes pushes and decodes pulls.
// Machine-dependent; compare runs of one quiet machine.
//
// Prints a table, then one JSON object on a line.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "tests/bench/stats.h"
#include "tests/bench/zipf.h"
#include "tests/cluster_harness.h"

ABSL_FLAG(std::string, configs, "1x1,2x2", "SERVERSxCLIENTS, comma-separated");
ABSL_FLAG(std::string, dims, "16,64", "row widths");
ABSL_FLAG(std::string, batches, "1000,10000,100000", "ids per call");
ABSL_FLAG(std::string, spaces, "1000000,100000000", "distinct ids drawn from");
ABSL_FLAG(double, seconds, 2.0, "timed seconds per cell and op");
ABSL_FLAG(int, lifecycle_rounds, 0,
          "> 0: measure the lifecycle rules' cost end to end instead");
ABSL_FLAG(std::string, value_type, "float32",
          "the tables' wire value type: float32, float16 or bfloat16");
ABSL_FLAG(bool, quick, false,
          "smoke run: 1x1, dim 16, batches 1000 and 10000, 1M ids, 0.3 s");

namespace ps {
namespace {

using bench::Median;

using Clock = std::chrono::steady_clock;

std::vector<uint64_t> Numbers(const std::string& list) {
  std::vector<uint64_t> out;
  for (absl::string_view s : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    uint64_t v = 0;
    if (!absl::SimpleAtoi(s, &v)) {
      std::fprintf(stderr, "not a number: %s\n", std::string(s).c_str());
      std::exit(2);
    }
    out.push_back(v);
  }
  return out;
}

struct Cell {
  std::string config, op;
  uint32_t dim = 0;
  uint64_t batch = 0, space = 0;
  double keys_per_s = 0, ceiling = 0, p50_ms = 0;
};

// W threads each running op(worker, batch) for `seconds`; returns total
// keys/s and the median call latency.
template <typename F>
std::pair<double, double> Drive(int workers, double seconds, uint64_t batch,
                                F op) {
  std::vector<uint64_t> calls(workers, 0);
  std::vector<std::vector<double>> lat(workers);
  std::vector<std::thread> threads;
  const Clock::time_point start = Clock::now();
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0;; ++i) {
        const Clock::time_point t0 = Clock::now();
        if (std::chrono::duration<double>(t0 - start).count() >= seconds) break;
        op(w, i);
        lat[w].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        ++calls[w];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  uint64_t total = 0;
  std::vector<double> all;
  for (int w = 0; w < workers; ++w) {
    total += calls[w];
    all.insert(all.end(), lat[w].begin(), lat[w].end());
  }
  std::sort(all.begin(), all.end());
  return {static_cast<double>(total * batch) / wall,
          all.empty() ? 0 : all[all.size() / 2]};
}

// The in-process ceiling over `batches` (see the file comment).
double Ceiling(const std::vector<std::vector<uint64_t>>& batches, uint32_t dim,
               bool push, double seconds) {
  absl::flat_hash_map<uint64_t, uint32_t> map;
  for (const auto& b : batches) {
    for (uint64_t id : b) map.emplace(id, static_cast<uint32_t>(map.size()));
  }
  std::vector<float> store(map.size() * dim, 0.5f);
  std::vector<float> out(batches[0].size() * dim);
  const std::vector<float> grad(batches[0].size() * dim, 1e-3f);
  uint64_t keys = 0;
  const Clock::time_point start = Clock::now();
  double elapsed = 0;
  for (size_t n = 0; elapsed < seconds; ++n) {
    const std::vector<uint64_t>& b = batches[n % batches.size()];
    for (size_t i = 0; i < b.size(); ++i) {
      float* row = store.data() + size_t{map.find(b[i])->second} * dim;
      if (push) {
        for (uint32_t j = 0; j < dim; ++j) row[j] -= 0.01f * grad[i * dim + j];
      } else {
        std::memcpy(out.data() + i * dim, row, dim * sizeof(float));
      }
    }
    keys += b.size();
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return static_cast<double>(keys) / elapsed;
}

std::vector<Cell> RunConfig(int servers, int workers,
                            const std::vector<uint64_t>& dims,
                            const std::vector<uint64_t>& batch_sizes,
                            const std::vector<uint64_t>& spaces,
                            double seconds) {
  testing::ClusterSpec spec;
  spec.num_servers = servers;
  spec.num_workers = 1;
  spec.body_yaml = "server: {device: cpu, max_message_bytes: 134217728}\n"
                   "client: {rpc_timeout_ms: 120000}\ntables:\n";
  for (uint64_t dim : dims) {
    absl::StrAppend(&spec.body_yaml, "  - {name: emb", dim,
                    ", kind: sparse, dim: ", dim, ", value_type: ",
                    absl::GetFlag(FLAGS_value_type),
                    ", optimizer: {type: sgd, learning_rate: 0.01}}\n");
  }
  absl::StatusOr<std::unique_ptr<testing::LocalCluster>> cluster =
      testing::LocalCluster::Start(spec);
  if (!cluster.ok()) {
    std::fprintf(stderr, "cluster: %s\n", cluster.status().ToString().c_str());
    std::exit(1);
  }
  std::vector<std::unique_ptr<Client>> clients;
  for (int w = 0; w < workers; ++w) {
    absl::StatusOr<std::unique_ptr<Client>> c = (*cluster)->Connect(-1);
    if (!c.ok()) {
      std::fprintf(stderr, "connect: %s\n", c.status().ToString().c_str());
      std::exit(1);
    }
    clients.push_back(std::move(c).value());
  }
  const std::string config = absl::StrCat(servers, "x", workers);
  std::vector<Cell> cells;
  for (uint64_t dim : dims) {
    const uint32_t table =
        clients[0]->GetTable(absl::StrCat("emb", dim))->table_id;
    for (uint64_t space : spaces) {
      for (uint64_t batch : batch_sizes) {
        // Per worker: 8 batches, pre-drawn.
        std::vector<std::vector<std::vector<uint64_t>>> batches(workers);
        std::vector<std::vector<uint64_t>> all;
        for (int w = 0; w < workers; ++w) {
          bench::ZipfIds zipf(space, 1.1, 1000 * w + batch + dim);
          for (int i = 0; i < 8; ++i) batches[w].push_back(zipf.Batch(batch));
          all.insert(all.end(), batches[w].begin(), batches[w].end());
        }
        std::vector<std::vector<float>> out(workers,
                                            std::vector<float>(batch * dim));
        const std::vector<float> grads(batch * dim, 1e-3f);
        auto fail = [](const absl::Status& s) {
          if (s.ok()) return;
          std::fprintf(stderr, "request: %s\n", s.ToString().c_str());
          std::exit(1);
        };
        for (int w = 0; w < workers; ++w) {  // warm-up: create the rows
          for (const auto& b : batches[w]) {
            fail(clients[w]->PullSparse(table, b, absl::MakeSpan(out[w])).Wait());
          }
        }
        for (const char* op : {"pull", "push"}) {
          const bool push = std::string(op) == "push";
          const auto [keys_per_s, p50] =
              Drive(workers, seconds, batch, [&](int w, int i) {
                const std::vector<uint64_t>& b = batches[w][i % 8];
                fail(push ? clients[w]->PushSparse(table, b, grads).Wait()
                          : clients[w]
                                ->PullSparse(table, b, absl::MakeSpan(out[w]))
                                .Wait());
              });
          Cell c;
          c.config = config;
          c.op = op;
          c.dim = static_cast<uint32_t>(dim);
          c.batch = batch;
          c.space = space;
          c.keys_per_s = keys_per_s;
          c.p50_ms = p50;
          c.ceiling = Ceiling(all, c.dim, push, seconds);
          std::printf("%-5s %-5s %4u %9llu %10llu %14.0f %9.2f %14.0f %7.3f\n",
                      c.config.c_str(), op, c.dim,
                      static_cast<unsigned long long>(batch),
                      static_cast<unsigned long long>(space), c.keys_per_s,
                      c.p50_ms, c.ceiling, c.keys_per_s / c.ceiling);
          std::fflush(stdout);
          cells.push_back(c);
        }
      }
    }
  }
  return cells;
}

// --lifecycle_rounds (the file comment); prints a table and a JSON line.
int RunLifecycle(int rounds, double seconds) {
  constexpr uint32_t kDim = 16;
  constexpr uint64_t kBatch = 10000;
  constexpr uint64_t kSpace = 1000000;
  const std::vector<std::pair<std::string, std::string>> tables = {
      {"plain", ""},
      {"capacity", ", eviction: {max_rows_per_shard: 4000000}"},
      {"all", ", admission: {min_count: 2}, eviction: {ttl_clocks: "
              "1099511627776, max_rows_per_shard: 4000000}"}};
  testing::ClusterSpec spec;
  spec.num_servers = 1;
  spec.num_workers = 1;
  spec.body_yaml = "server: {device: cpu, max_message_bytes: 134217728}\n"
                   "client: {rpc_timeout_ms: 120000}\ntables:\n";
  for (const auto& [name, rules] : tables) {
    absl::StrAppend(&spec.body_yaml, "  - {name: ", name,
                    ", kind: sparse, dim: ", kDim,
                    ", optimizer: {type: sgd, learning_rate: 0.01}", rules,
                    "}\n");
  }
  absl::StatusOr<std::unique_ptr<testing::LocalCluster>> cluster =
      testing::LocalCluster::Start(spec);
  if (!cluster.ok()) {
    std::fprintf(stderr, "cluster: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<Client>> client = (*cluster)->Connect(-1);
  if (!client.ok()) {
    std::fprintf(stderr, "connect: %s\n", client.status().ToString().c_str());
    return 1;
  }
  bench::ZipfIds zipf(kSpace, 1.1, 17);
  std::vector<std::vector<uint64_t>> batches;
  for (int i = 0; i < 8; ++i) batches.push_back(zipf.Batch(kBatch));
  std::vector<float> out(kBatch * kDim);
  const std::vector<float> grads(kBatch * kDim, 1e-3f);
  std::vector<uint32_t> ids;
  for (const auto& [name, rules] : tables) {
    ids.push_back((*client)->GetTable(name)->table_id);
    for (int pass = 0; pass < 2; ++pass) {  // two pushes admit every id
      for (const auto& b : batches) {
        const absl::Status s = (*client)->PushSparse(ids.back(), b, grads).Wait();
        if (!s.ok()) {
          std::fprintf(stderr, "push: %s\n", s.ToString().c_str());
          return 1;
        }
      }
    }
  }
  const size_t n = tables.size();
  std::vector<std::vector<double>> pull(n), push(n);
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < n; ++k) {
      const size_t t = (k + r) % n;
      for (bool is_push : {false, true}) {
        const double keys_per_s =
            Drive(1, seconds, kBatch, [&](int, int i) {
              const std::vector<uint64_t>& b = batches[i % 8];
              const absl::Status s =
                  is_push ? (*client)->PushSparse(ids[t], b, grads).Wait()
                          : (*client)
                                ->PullSparse(ids[t], b, absl::MakeSpan(out))
                                .Wait();
              if (!s.ok()) {
                std::fprintf(stderr, "request: %s\n", s.ToString().c_str());
                std::exit(1);
              }
            }).first;
        (is_push ? push : pull)[t].push_back(keys_per_s);
      }
    }
  }
  std::printf("Lifecycle cost end to end (1x1, dim %u, Zipf(1.1) batches of "
              "%llu ids over %llu, %d rounds of %.2f s windows)\n",
              kDim, static_cast<unsigned long long>(kBatch),
              static_cast<unsigned long long>(kSpace), rounds, seconds);
  std::printf("%-10s %14s %14s %10s %10s\n", "table", "pull_keys/s",
              "push_keys/s", "pull_cost", "push_cost");
  std::vector<std::string> items;
  for (size_t t = 0; t < n; ++t) {
    std::vector<double> pull_costs, push_costs;
    for (int r = 0; r < rounds; ++r) {
      pull_costs.push_back(1 - pull[t][r] / pull[0][r]);
      push_costs.push_back(1 - push[t][r] / push[0][r]);
    }
    std::printf("%-10s %14.0f %14.0f %9.1f%% %9.1f%%\n",
                tables[t].first.c_str(), Median(pull[t]), Median(push[t]),
                100 * Median(pull_costs), 100 * Median(push_costs));
    items.push_back(absl::StrFormat(
        "{\"table\":\"%s\",\"pull_keys_per_s\":%.0f,\"push_keys_per_s\":%.0f,"
        "\"pull_cost\":%.4f,\"push_cost\":%.4f}",
        tables[t].first, Median(pull[t]), Median(push[t]), Median(pull_costs),
        Median(push_costs)));
  }
  std::printf("{\"lifecycle_end_to_end\":[%s]}\n",
              absl::StrJoin(items, ",").c_str());
  return 0;
}

}  // namespace
}  // namespace ps

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (const int rounds = absl::GetFlag(FLAGS_lifecycle_rounds); rounds > 0) {
    return ps::RunLifecycle(rounds, absl::GetFlag(FLAGS_seconds));
  }
  const bool quick = absl::GetFlag(FLAGS_quick);
  const std::string configs = quick ? "1x1" : absl::GetFlag(FLAGS_configs);
  const std::vector<uint64_t> dims =
      ps::Numbers(quick ? "16" : absl::GetFlag(FLAGS_dims));
  const std::vector<uint64_t> batches =
      ps::Numbers(quick ? "1000,10000" : absl::GetFlag(FLAGS_batches));
  const std::vector<uint64_t> spaces =
      ps::Numbers(quick ? "1000000" : absl::GetFlag(FLAGS_spaces));
  const double seconds = quick ? 0.3 : absl::GetFlag(FLAGS_seconds);
  std::printf("%-5s %-5s %4s %9s %10s %14s %9s %14s %7s\n", "SxC", "op", "dim",
              "batch", "ids", "keys/s", "p50_ms", "ceiling", "ratio");
  std::vector<ps::Cell> cells;
  for (absl::string_view c : absl::StrSplit(configs, ',', absl::SkipEmpty())) {
    std::vector<std::string> sw = absl::StrSplit(c, 'x');
    int s = 0, w = 0;
    if (sw.size() != 2 || !absl::SimpleAtoi(sw[0], &s) ||
        !absl::SimpleAtoi(sw[1], &w) || s < 1 || w < 1) {
      std::fprintf(stderr, "bad config '%s' (SERVERSxCLIENTS)\n",
                   std::string(c).c_str());
      return 2;
    }
    std::vector<ps::Cell> part =
        ps::RunConfig(s, w, dims, batches, spaces, seconds);
    cells.insert(cells.end(), part.begin(), part.end());
  }
  std::vector<std::string> items;
  for (const ps::Cell& c : cells) {
    items.push_back(absl::StrFormat(
        "{\"config\":\"%s\",\"op\":\"%s\",\"dim\":%u,\"batch\":%llu,\"ids\":"
        "%llu,\"keys_per_s\":%.0f,\"p50_ms\":%.3f,\"ceiling_keys_per_s\":%.0f,"
        "\"ratio\":%.4f}",
        c.config, c.op, c.dim, static_cast<unsigned long long>(c.batch),
        static_cast<unsigned long long>(c.space), c.keys_per_s, c.p50_ms,
        c.ceiling, c.keys_per_s / c.ceiling));
  }
  std::printf("{\"ceiling\":\"in-process absl::flat_hash_map lookup + row "
              "memcpy (pull) / axpy (push), one thread\",\"value_type\":"
              "\"%s\",\"cells\":[%s]}\n",
              absl::GetFlag(FLAGS_value_type).c_str(),
              absl::StrJoin(items, ",").c_str());
  return 0;
}
