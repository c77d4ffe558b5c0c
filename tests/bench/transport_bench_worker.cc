#include "tests/bench/transport_bench_worker.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "common/process_tuning.h"
#include "tests/bench/process_cpu.h"
#include "tests/bench/transport_bench_process.h"

namespace ps::bench {
namespace {

using Clock = std::chrono::steady_clock;

// utime + stime of all threads of the given processes.
double ProcessesCpuSeconds(const std::vector<std::string>& pids) {
  double total = 0;
  for (const std::string& pid : pids) {
    int id = 0;
    if (absl::SimpleAtoi(pid, &id)) total += ProcessCpuSeconds(id);
  }
  return total;
}

std::vector<uint64_t> ZipfIds(std::mt19937_64& rng, size_t n) {
  // Zipf(s = 1.1) over [0, kSparseIdSpace) by inverse-CDF on a precomputed
  // table; hot ids are scattered by the partitioner's hash anyway.
  static std::vector<double> cdf = [] {
    std::vector<double> c(kSparseIdSpace);
    double sum = 0;
    for (uint64_t k = 0; k < kSparseIdSpace; ++k) {
      sum += 1.0 / std::pow(static_cast<double>(k + 1), 1.1);
      c[k] = sum;
    }
    for (double& x : c) x /= sum;
    return c;
  }();
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<uint64_t> ids(n);
  for (uint64_t& id : ids) {
    id = std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin();
  }
  return ids;
}

// Checks the data path once before timing (worker 0 alone; the others wait
// at the first barrier). The tables use SGD with learning rate 1, so a push
// of g moves pulled values v to exactly v - g (g are small multiples of 1/4,
// exact in float; duplicated sparse ids get their gradients summed).
bool Verify(ps::Client& client, const ps::TableInfo& dense,
            const ps::TableInfo& emb) {
  const size_t n = (1 << 20) + 3;  // not a multiple of the chunk size
  const uint64_t offset = dense.size - n - 5;
  std::vector<float> before(n), grad(n), after(n), pulled(n);
  for (size_t i = 0; i < n; ++i) grad[i] = static_cast<float>(i % 7) * 0.25f;
  absl::Status s = client.PullDense(dense.table_id, offset, absl::MakeSpan(before)).Wait();
  if (s.ok()) {
    s = client.PushPullDense(dense.table_id, offset, grad, absl::MakeSpan(after)).Wait();
  }
  if (s.ok()) s = client.PushDense(dense.table_id, offset, grad).Wait();
  if (s.ok()) s = client.PullDense(dense.table_id, offset, absl::MakeSpan(pulled)).Wait();
  // The zero-copy calls: one more push-pull and push of the same gradient.
  std::vector<float> after_zc(n), pulled_zc(n);
  if (s.ok()) {
    s = client.PushPullDenseZeroCopy(dense.table_id, offset, grad, absl::MakeSpan(after_zc))
            .Wait();
  }
  if (s.ok()) s = client.PushDenseZeroCopy(dense.table_id, offset, grad).Wait();
  if (s.ok()) s = client.PullDense(dense.table_id, offset, absl::MakeSpan(pulled_zc)).Wait();
  if (!s.ok()) {
    fprintf(stderr, "verify dense: %s\n", s.ToString().c_str());
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    if (after[i] != before[i] - grad[i] || pulled[i] != after[i] - grad[i] ||
        after_zc[i] != pulled[i] - grad[i] || pulled_zc[i] != after_zc[i] - grad[i]) {
      fprintf(stderr, "verify dense: element %zu: %f -> %f -> %f -> %f -> %f (grad %f)\n",
              i, before[i], after[i], pulled[i], after_zc[i], pulled_zc[i], grad[i]);
      return false;
    }
  }
  std::mt19937_64 rng(7);
  const std::vector<uint64_t> ids = ZipfIds(rng, 10000);
  const uint32_t dim = emb.dim;
  std::vector<float> rows(ids.size() * dim), sgrad(ids.size() * dim),
      rows_after(ids.size() * dim);
  for (size_t i = 0; i < sgrad.size(); ++i) sgrad[i] = static_cast<float>(i % 5) * 0.25f;
  s = client.PullSparse(emb.table_id, ids, absl::MakeSpan(rows)).Wait();
  if (s.ok()) s = client.PushSparse(emb.table_id, ids, sgrad).Wait();
  if (s.ok()) s = client.PullSparse(emb.table_id, ids, absl::MakeSpan(rows_after)).Wait();
  if (!s.ok()) {
    fprintf(stderr, "verify sparse: %s\n", s.ToString().c_str());
    return false;
  }
  std::map<uint64_t, std::vector<float>> expected;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto [it, fresh] = expected.try_emplace(ids[i], rows.begin() + i * dim,
                                            rows.begin() + (i + 1) * dim);
    for (uint32_t d = 0; d < dim; ++d) it->second[d] -= sgrad[i * dim + d];
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    for (uint32_t d = 0; d < dim; ++d) {
      if (rows_after[i * dim + d] != expected[ids[i]][d]) {
        fprintf(stderr, "verify sparse: id %llu [%u]: %f, expected %f\n",
                static_cast<unsigned long long>(ids[i]), d, rows_after[i * dim + d],
                expected[ids[i]][d]);
        return false;
      }
    }
  }
  return true;
}

}  // namespace

std::string Serialize(const Measurement& m) {
  std::string s = absl::StrCat(m.op, " ", m.detail, " ", m.bytes_per_op, " ",
                               m.keys_per_op, " ", m.wall_s, " ", m.client_cpu_s, " ",
                               m.server_cpu_s);
  for (double l : m.latencies) absl::StrAppend(&s, " ", l);
  return s + "\n";
}

bool Deserialize(const std::string& line, Measurement* m) {
  std::istringstream in(line);
  if (!(in >> m->op >> m->detail >> m->bytes_per_op >> m->keys_per_op >> m->wall_s >>
        m->client_cpu_s >> m->server_cpu_s)) {
    return false;
  }
  double l;
  while (in >> l) m->latencies.push_back(l);
  return true;
}

namespace {

// Times the cells of one worker and writes them to its result file.
class CellTimer {
 public:
  CellTimer(ps::Client* client, const WorkerOptions& options)
      : client_(*client), options_(options), out_(options.out) {}

  // Runs `call` 3 times untimed, then `reps` times timed; appends the
  // cell's line. All workers meet at a barrier before the warm-up (no one
  // still times the previous cell) and after it, so that the timed phases
  // start together: the report divides every worker's bytes by the longest
  // wall time, which a worker that started early would make too short
  // (seen on shaped links: one worker alone at the full link rate while the
  // other still warmed up). False: a call failed.
  bool Time(const std::string& op, const std::string& detail, uint64_t bytes, uint64_t keys,
            int reps, const std::function<absl::Status()>& call) {
    if (!client_.Barrier().ok()) return false;
    Measurement m{op, detail, bytes, keys, 0, 0, 0, {}};
    for (int r = 0; r < 3; ++r) {  // warm-up
      if (!call().ok()) return false;
    }
    if (!client_.Barrier().ok()) return false;  // start together
    const double client_cpu0 = SelfCpuSeconds();
    const double server_cpu0 = ProcessesCpuSeconds(options_.server_pids);
    const auto start = Clock::now();
    for (int r = 0; r < reps; ++r) {
      const auto t0 = Clock::now();
      absl::Status s = call();
      if (!s.ok()) {
        fprintf(stderr, "%s %s: %s\n", op.c_str(), detail.c_str(), s.ToString().c_str());
        return false;
      }
      m.latencies.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    m.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    m.client_cpu_s = SelfCpuSeconds() - client_cpu0;
    m.server_cpu_s = ProcessesCpuSeconds(options_.server_pids) - server_cpu0;
    out_ << Serialize(m);
    out_.flush();
    return true;
  }

 private:
  ps::Client& client_;
  const WorkerOptions& options_;
  std::ofstream out_;
};

bool TimeDense(ps::Client& client, const ps::TableInfo& dense, const WorkerOptions& options,
               CellTimer& timer) {
  std::vector<float> values(kDenseElements, 0.001f), result(kDenseElements);
  const BenchPlan& plan = options.plan;
  const uint32_t id = dense.table_id;
  const bool zero_copy = options.zero_copy;
  for (uint64_t bytes : plan.sizes) {
    const int reps = plan.Reps(bytes);
    const std::string d = std::to_string(bytes);
    auto in = absl::MakeConstSpan(values.data(), bytes / sizeof(float));
    auto res = absl::MakeSpan(result.data(), bytes / sizeof(float));
    if ((plan.Enabled("push") && !timer.Time("push", d, bytes, 0, reps, [&] {
          return (zero_copy ? client.PushDenseZeroCopy(id, 0, in) : client.PushDense(id, 0, in))
              .Wait();
        })) ||
        (plan.Enabled("pull") &&
         !timer.Time("pull", d, bytes, 0, reps, [&] { return client.PullDense(id, 0, res).Wait(); })) ||
        (plan.Enabled("push_pull") && !timer.Time("push_pull", d, 2 * bytes, 0, reps, [&] {
          return (zero_copy ? client.PushPullDenseZeroCopy(id, 0, in, res)
                            : client.PushPullDense(id, 0, in, res))
              .Wait();
        }))) {
      return false;
    }
  }
  return true;
}

bool TimeSparse(ps::Client& client, const std::vector<ps::TableInfo>& tables,
                const WorkerOptions& options, CellTimer& timer) {
  std::mt19937_64 rng(42 + options.index);
  for (const ps::TableInfo& emb : tables) {
    const uint32_t dim = emb.dim;
    for (size_t batch : {1000, 10000}) {
      const int reps = options.plan.SparseReps(batch);
      std::vector<std::vector<uint64_t>> batches;
      for (int i = 0; i < 16; ++i) batches.push_back(ZipfIds(rng, batch));
      std::vector<float> rows(batch * dim), grads(batch * dim, 0.001f);
      const std::string d = absl::StrCat(batch, "x", dim);
      int next = 0;
      if (!timer.Time("sparse_pull", d, batch * dim * 4, batch, reps, [&] {
            return client.PullSparse(emb.table_id, batches[next++ % 16], absl::MakeSpan(rows))
                .Wait();
          }) ||
          !timer.Time("sparse_push", d, batch * dim * 4, batch, reps, [&] {
            return client.PushSparse(emb.table_id, batches[next++ % 16], grads).Wait();
          })) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

int RunWorker(const WorkerOptions& worker) {
  // A trainer process moving multi-MiB tensors should use the same allocator
  // setting as ps_server (common/process_tuning.h); --worker_malloc_tuning=false
  // measures the client without it.
  if (worker.malloc_tuning) ps::TuneAllocatorForLargeMessages();
  ps::DisableMutexDeadlockDetection();  // as ps_server and ps_worker
  ps::ClientOptions options;
  options.servers = worker.servers;
  options.worker_id = worker.index;
  if (worker.chunk_bytes > 0) options.client.chunk_bytes = worker.chunk_bytes;
  absl::StatusOr<std::unique_ptr<ps::Client>> connected = ps::Client::Connect(options);
  if (!connected.ok()) {
    fprintf(stderr, "worker connect: %s\n", connected.status().ToString().c_str());
    return 1;
  }
  ps::Client& client = **connected;
  absl::StatusOr<ps::TableInfo> dense = client.GetTable("dense");
  absl::StatusOr<ps::TableInfo> emb16 = client.GetTable("emb16");
  absl::StatusOr<ps::TableInfo> emb64 = client.GetTable("emb64");
  if (!dense.ok() || !emb16.ok() || !emb64.ok()) {
    fprintf(stderr, "worker: tables missing\n");
    return 1;
  }
  if (worker.index == 0 && (!Verify(client, *dense, *emb16) || !Verify(client, *dense, *emb64))) {
    return 1;
  }
  CellTimer timer(&client, worker);
  if (!TimeDense(client, *dense, worker, timer)) return 1;
  if (worker.plan.Enabled("sparse") && !TimeSparse(client, {*emb16, *emb64}, worker, timer)) {
    return 1;
  }
  return 0;
}

}  // namespace ps::bench
