// Sparse tables in-process (issue 17): memory per row against the raw row
// bytes, and the keys/s cost of admission and eviction, on the server's own
// table path (ShardTable::Execute, no network), each with its ceiling
// measured in the same run.
//
//   bazel run -c opt //tests/bench:sparse_table_bench -- [--rows 1000000]
//       [--seconds 2] [--rounds 5] [--tables_per_mode 3] [--quick]
//       [--sections memory,lifecycle]
//
// memory: for each storage layout and dim, a table grows to --rows rows
//   (pulls of distinct ids in batches of 10,000); bytes per row = the growth
//   of glibc's heap (mallinfo2: in-use chunks + mmapped blocks) / rows.
//   Ceiling: the raw row = dim x 4 x (1 + optimizer slots) bytes (float32
//   values and state, nothing else); the formula's bytes per row
//   (server/rows/row_cost.h) is printed next to it. Also the id -> row
//   index alone (RowIndex) at the same row count.
// lifecycle: a dim-16 table of 1M rows, Zipf(1.1) batches of 10,000 ids from
//   those 1M ids (each batch deduplicated, as a client sends it); pull and
//   push keys per CPU second of this thread (median of --rounds windows of
//   --seconds) with no lifecycle, with admission (count filter 2; every id
//   already admitted: the lookup path), with a TTL rule (ttl_clocks), with
//   a capacity rule (max_rows_per_shard), each set so that nothing is
//   dropped (the bookkeeping alone), and with all three. The modes' tables
//   (--tables_per_mode each, used in turn) exist together and take turns
//   window by window, so the modes are compared interleaved; cost = the
//   median over rounds of 1 - the mode's keys/s / plain keys/s in the same
//   round (goal <= 10%), so a drift of the machine between rounds cancels
//   out.
//   Ceiling: the same rows' data movement with their store rows known up
//   front (a memcpy per row for pulls, an axpy for pushes); also printed, an
//   absl::flat_hash_map<uint64, uint32> lookup per id plus the memcpy.
//
// Memory figures are deterministic; timings need a quiet machine.
// Prints tables, then one JSON object on a line.
#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/backend/update_backend.h"
#include "common/bytes.h"
#include "common/table_schema.h"
#include "proto/ps.pb.h"
#include "server/rows/row_cost.h"
#include "server/rows/row_index.h"
#include "server/shard_table.h"
#include "tests/bench/stats.h"
#include "tests/bench/zipf.h"

ABSL_FLAG(uint64_t, rows, 1000000, "memory: rows per table");
ABSL_FLAG(double, seconds, 2.0, "lifecycle: seconds per measurement");
ABSL_FLAG(int, rounds, 5, "lifecycle: rounds of one window per mode");
ABSL_FLAG(int, tables_per_mode, 3,
          "lifecycle: tables per mode, used in turn round by round");
ABSL_FLAG(bool, quick, false, "smoke run: 50,000 rows, short windows");
ABSL_FLAG(std::string, sections, "memory,lifecycle",
          "comma-separated: memory, lifecycle");

namespace ps {
namespace {

using bench::Median;

constexpr size_t kBatch = 10000;

uint64_t HeapBytes() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

TableConfig Sparse(uint32_t dim, const std::string& optimizer,
                   ValueType values, ValueType state) {
  TableConfig t;
  t.name = "emb";
  t.kind = TableKind::kSparse;
  t.dim = dim;
  t.storage_type = values;
  t.state_type = state;
  t.optimizer.type = optimizer;
  t.initializer.type = InitializerType::kUniform;
  FillOptimizerDefaults(&t.optimizer);
  return t;
}

std::unique_ptr<ShardTable> MakeTable(const TableConfig& config,
                                      UpdateBackend* backend) {
  ShardTableOptions options;
  absl::StatusOr<std::unique_ptr<ShardTable>> t =
      ShardTable::Create(config, options, backend);
  if (!t.ok()) {
    std::fprintf(stderr, "table: %s\n", t.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(t).value();
}

// A request of `op` for sorted, unique `ids` (and gradients for pushes).
proto::DataRequest Request(proto::Op op, std::vector<uint64_t> ids,
                           uint32_t dim) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  proto::DataRequest r;
  r.set_op(op);
  r.set_worker_id(-1);
  r.set_first_chunk(true);
  r.set_keys(EncodeRaw<uint64_t>(ids));
  if (op == proto::PUSH) {
    r.set_values(EncodeRaw<float>(std::vector<float>(ids.size() * dim, 1e-3f)));
  }
  return r;
}

void Execute(ShardTable& table, const proto::DataRequest& r) {
  proto::DataResponse response;
  absl::Status s = table.Execute(r, &response);
  if (!s.ok()) {
    std::fprintf(stderr, "execute: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

// ------------------------------------------------------------------ memory

struct MemoryRow {
  std::string layout;
  uint32_t dim = 0;
  uint64_t rows = 0;
  double measured = 0;  // bytes per row
  uint64_t formula = 0;
  uint64_t raw = 0;  // float32 values + state
};

std::vector<MemoryRow> RunMemory(uint64_t rows, std::string* json) {
  std::unique_ptr<UpdateBackend> backend = CreateCpuUpdateBackend();
  struct Case {
    std::string optimizer;
    ValueType values, state;
  };
  const ValueType f32 = ValueType::kFloat32, f16 = ValueType::kFloat16,
                  bf16 = ValueType::kBfloat16;
  const std::vector<Case> cases = {{"adagrad", f32, f32}, {"adagrad", f16, f32},
                                   {"adagrad", bf16, f32}, {"adagrad", f16, f16},
                                   {"sgd", f32, f32},      {"adam", f32, f32}};
  std::vector<MemoryRow> out;
  for (uint32_t dim : {16u, 64u}) {
    for (const Case& c : cases) {
      const TableConfig config = Sparse(dim, c.optimizer, c.values, c.state);
      const uint64_t before = HeapBytes();
      {
        std::unique_ptr<ShardTable> table = MakeTable(config, backend.get());
        for (uint64_t first = 0; first < rows; first += kBatch) {
          std::vector<uint64_t> ids;
          for (uint64_t k = first; k < std::min(rows, first + kBatch); ++k) {
            ids.push_back(bench::MixId(k));
          }
          Execute(*table, Request(proto::PULL, ids, dim));
        }
        MemoryRow row;
        row.layout = absl::StrCat(c.optimizer, " ", ValueTypeName(c.values),
                                  "/", ValueTypeName(c.state));
        row.dim = dim;
        row.rows = rows;
        row.measured = static_cast<double>(HeapBytes() - before) / rows;
        row.formula = SparseRowCost(config)->total();
        row.raw = SparseRowCost(config)->raw_float32;
        out.push_back(row);
      }
    }
  }
  // The index alone.
  const uint64_t before = HeapBytes();
  double allocated = 0;
  double measured = 0;
  {
    RowIndex index;
    for (uint64_t k = 0; k < rows; ++k) index.Insert(bench::MixId(k));
    measured = static_cast<double>(HeapBytes() - before) / rows;
    allocated = static_cast<double>(index.AllocatedBytes()) / rows;
  }
  std::printf("\nMemory per row (%llu rows; heap growth / rows)\n",
              static_cast<unsigned long long>(rows));
  std::printf("%-28s %4s %12s %10s %10s %10s %12s\n", "layout", "dim",
              "measured_B", "formula_B", "raw_f32_B", "x_raw", "goal");
  std::vector<std::string> items;
  for (const MemoryRow& r : out) {
    const double ratio = r.measured / static_cast<double>(r.raw);
    const bool target = absl::StartsWith(r.layout, "adagrad float32/float32");
    std::printf("%-28s %4u %12.1f %10llu %10llu %10.3f %12s\n",
                r.layout.c_str(), r.dim, r.measured,
                static_cast<unsigned long long>(r.formula),
                static_cast<unsigned long long>(r.raw), ratio,
                target ? (ratio <= 1.5 ? "<=1.5 met" : "<=1.5 MISSED") : "");
    items.push_back(absl::StrFormat(
        "{\"layout\":\"%s\",\"dim\":%u,\"rows\":%llu,\"measured_bytes_per_row\""
        ":%.2f,\"formula_bytes_per_row\":%llu,\"raw_float32_bytes_per_row\":"
        "%llu,\"ratio_to_raw\":%.4f}",
        r.layout, r.dim, static_cast<unsigned long long>(r.rows), r.measured,
        static_cast<unsigned long long>(r.formula),
        static_cast<unsigned long long>(r.raw), ratio));
  }
  std::printf("id -> row index alone: %.2f B/row measured (heap), %.2f B/row "
              "by its capacities; formula charges %llu\n",
              measured, allocated,
              static_cast<unsigned long long>(kIndexBytesPerRow));
  *json = absl::StrCat(
      "\"memory\":[", absl::StrJoin(items, ","), "],\"index\":{",
      absl::StrFormat("\"measured_bytes_per_row\":%.2f,\"allocated_bytes_per_"
                      "row\":%.2f,\"formula_bytes_per_row\":%llu",
                      measured, allocated,
                      static_cast<unsigned long long>(kIndexBytesPerRow)),
      "}");
  return out;
}

// --------------------------------------------------------------- lifecycle

// This thread's CPU time in seconds: the in-process figures are keys per
// CPU second, which other processes on a shared machine disturb far less
// than wall time (they still share caches and memory bandwidth).
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Keys per CPU second of one window of `seconds` CPU seconds running `op`
// over `batches`, from batch `*next` on (advanced).
template <typename F>
double WindowKeysPerSecond(const std::vector<std::vector<uint64_t>>& batches,
                           double seconds, size_t* next, F op) {
  uint64_t keys = 0;
  const double start = ThreadCpuSeconds();
  double elapsed = 0;
  while (elapsed < seconds) {
    const std::vector<uint64_t>& b = batches[(*next)++ % batches.size()];
    op(b, *next);
    keys += b.size();
    elapsed = ThreadCpuSeconds() - start;
  }
  return static_cast<double>(keys) / elapsed;
}

// Median keys per CPU second of `reps` windows of `seconds` CPU seconds
// running `op` over `batches`.
template <typename F>
double KeysPerSecond(const std::vector<std::vector<uint64_t>>& batches,
                     double seconds, int reps, F op) {
  std::vector<double> rates;
  size_t next = 0;
  for (int r = 0; r < reps; ++r) {
    rates.push_back(WindowKeysPerSecond(batches, seconds, &next, op));
  }
  return Median(rates);
}

std::string RunLifecycle(double seconds, bool quick) {
  constexpr uint32_t kDim = 16;
  const uint64_t space = quick ? 100000 : 1000000;
  const int reps = quick ? 1 : std::max(1, absl::GetFlag(FLAGS_rounds));
  bench::ZipfIds zipf(space, 1.1, 7);
  // Each batch's unique ids, sorted, as a client sends them; keys/s counts
  // these (the ceiling processes the same ids).
  std::vector<std::vector<uint64_t>> batches;
  for (int i = 0; i < 32; ++i) {
    std::vector<uint64_t> b = zipf.Batch(kBatch);
    std::sort(b.begin(), b.end());
    b.erase(std::unique(b.begin(), b.end()), b.end());
    batches.push_back(std::move(b));
  }
  // Requests are built once: sorted, deduplicated, as a client sends them.
  std::vector<proto::DataRequest> pulls, pushes;
  for (const auto& b : batches) {
    pulls.push_back(Request(proto::PULL, b, kDim));
    pushes.push_back(Request(proto::PUSH, b, kDim));
  }
  std::unique_ptr<UpdateBackend> backend = CreateCpuUpdateBackend();
  struct Mode {
    std::string name;
    bool admission, ttl, capacity;
  };
  const std::vector<Mode> modes = {{"plain", false, false, false},
                                   {"admission", true, false, false},
                                   {"ttl", false, true, false},
                                   {"capacity", false, false, true},
                                   {"all", true, true, true}};
  // Ceiling: the rows' data movement alone, their store rows known up
  // front (a gather / an axpy per row). Reference: an absl::flat_hash_map
  // <uint64, uint32> lookup per id first (the textbook id -> row map).
  absl::flat_hash_map<uint64_t, uint32_t> map;
  for (uint64_t k = 1; k <= space; ++k) {
    map.emplace(bench::MixId(k), static_cast<uint32_t>(k - 1));
  }
  std::vector<std::vector<uint32_t>> known;
  for (const auto& b : batches) {
    std::vector<uint32_t> rows;
    for (uint64_t id : b) rows.push_back(map.at(id));
    known.push_back(std::move(rows));
  }
  std::vector<float> store(space * kDim, 0.5f);
  std::vector<float> out(kBatch * kDim);
  const std::vector<float> grad(kBatch * kDim, 1e-3f);
  auto gather = [&](size_t i, const uint32_t row) {
    std::memcpy(out.data() + i * kDim, store.data() + size_t{row} * kDim,
                kDim * sizeof(float));
  };
  auto axpy = [&](size_t i, const uint32_t row) {
    float* w = store.data() + size_t{row} * kDim;
    for (uint32_t j = 0; j < kDim; ++j) w[j] -= 0.1f * grad[i * kDim + j];
  };
  const double ceiling_pull =
      KeysPerSecond(batches, seconds, reps, [&](const auto& b, size_t n) {
        const std::vector<uint32_t>& rows = known[(n - 1) % known.size()];
        for (size_t i = 0; i < b.size(); ++i) gather(i, rows[i]);
      });
  const double ceiling_push =
      KeysPerSecond(batches, seconds, reps, [&](const auto& b, size_t n) {
        const std::vector<uint32_t>& rows = known[(n - 1) % known.size()];
        for (size_t i = 0; i < b.size(); ++i) axpy(i, rows[i]);
      });
  const double map_pull =
      KeysPerSecond(batches, seconds, reps, [&](const auto& b, size_t) {
        for (size_t i = 0; i < b.size(); ++i) gather(i, map.find(b[i])->second);
      });
  size_t unique = 0;
  for (const auto& b : batches) unique += b.size();
  std::printf("\nLifecycle cost (dim %u, Zipf(1.1) draws of %zu ids over "
              "%llu ids, %zu unique per batch on average, in-process "
              "ShardTable::Execute)\n",
              kDim, kBatch, static_cast<unsigned long long>(space),
              unique / batches.size());
  std::printf("%-10s %14s %14s %10s %10s %12s %12s\n", "mode", "pull_keys/cpu_s",
              "push_keys/cpu_s", "pull_cost", "push_cost", "pull/ceiling",
              "push/ceiling");
  // Every mode's tables exist at once and the modes take turns window by
  // window (rounds of plain, admission, ..., each a pull window and a push
  // window), so a drift of the machine over the run hits every mode alike.
  // Each mode has --tables_per_mode tables, built interleaved and used in
  // turn, round by round: one table per mode read up to +-14% in a run
  // against another mode doing the same work (where a table's memory
  // landed, presumably), which several tables average out.
  const int copies = quick ? 1 : std::max(1, absl::GetFlag(FLAGS_tables_per_mode));
  std::vector<std::vector<std::unique_ptr<ShardTable>>> tables(modes.size());
  for (int copy = 0; copy < copies; ++copy) {
    for (size_t m = 0; m < modes.size(); ++m) {
      TableConfig config = Sparse(kDim, "sgd", ValueType::kFloat32,
                                  ValueType::kFloat32);
      if (modes[m].admission) config.admission.min_count = 2;
      if (modes[m].ttl) config.eviction.ttl_clocks = int64_t{1} << 40;
      if (modes[m].capacity) config.eviction.max_rows_per_shard = 4 * space;
      std::unique_ptr<ShardTable> table = MakeTable(config, backend.get());
      // Every id gets its row (two pushes admit under the count filter).
      for (int k = 0; k < 2; ++k) {
        for (uint64_t first = 1; first <= space; first += kBatch) {
          std::vector<uint64_t> ids;
          for (uint64_t r = first; r < std::min(space + 1, first + kBatch);
               ++r) {
            ids.push_back(bench::MixId(r));
          }
          Execute(*table, Request(proto::PUSH, ids, kDim));
        }
      }
      tables[m].push_back(std::move(table));
    }
  }
  std::vector<std::vector<double>> pull_rates(modes.size()),
      push_rates(modes.size());
  std::vector<size_t> next(modes.size(), 0);
  for (int r = 0; r < reps; ++r) {
    // Each round starts at the next mode, so no mode always follows the
    // same one.
    for (size_t k = 0; k < modes.size(); ++k) {
      const size_t m = (k + r) % modes.size();
      ShardTable& table = *tables[m][r % copies];
      pull_rates[m].push_back(WindowKeysPerSecond(
          batches, seconds, &next[m], [&](const auto&, size_t i) {
            Execute(table, pulls[(i - 1) % 32]);
          }));
      push_rates[m].push_back(WindowKeysPerSecond(
          batches, seconds, &next[m], [&](const auto&, size_t i) {
            Execute(table, pushes[(i - 1) % 32]);
          }));
    }
  }
  std::vector<std::string> items;
  for (size_t i = 0; i < modes.size(); ++i) {
    const Mode& m = modes[i];
    const double pull = Median(pull_rates[i]);
    const double push = Median(push_rates[i]);
    std::vector<double> pull_costs, push_costs;
    for (int r = 0; r < reps; ++r) {
      pull_costs.push_back(1 - pull_rates[i][r] / pull_rates[0][r]);
      push_costs.push_back(1 - push_rates[i][r] / push_rates[0][r]);
    }
    const double pull_cost = Median(pull_costs);
    const double push_cost = Median(push_costs);
    std::printf("%-10s %14.0f %14.0f %9.1f%% %9.1f%% %12.3f %12.3f\n",
                m.name.c_str(), pull, push, 100 * pull_cost, 100 * push_cost,
                pull / ceiling_pull, push / ceiling_push);
    items.push_back(absl::StrFormat(
        "{\"mode\":\"%s\",\"pull_keys_per_s\":%.0f,\"push_keys_per_s\":%.0f,"
        "\"pull_cost\":%.4f,\"push_cost\":%.4f}",
        m.name, pull, push, pull_cost, push_cost));
  }
  std::printf("ceiling (rows known: gather / axpy): pull %.0f keys/s, push "
              "%.0f keys/s; reference absl::flat_hash_map lookup + gather: "
              "%.0f keys/s; goal: cost <= 10%%\n",
              ceiling_pull, ceiling_push, map_pull);
  return absl::StrCat(
      "\"lifecycle\":{\"dim\":", kDim, ",\"batch\":", kBatch, ",\"ids\":",
      space, absl::StrFormat(",\"ceiling_pull_keys_per_s\":%.0f,\"ceiling_"
                             "push_keys_per_s\":%.0f,\"modes\":[",
                             ceiling_pull, ceiling_push),
      absl::StrJoin(items, ","), "]}");
}

}  // namespace
}  // namespace ps

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const bool quick = absl::GetFlag(FLAGS_quick);
  const std::string sections = absl::GetFlag(FLAGS_sections);
  std::vector<std::string> json;
  if (absl::StrContains(sections, "memory")) {
    std::string part;
    ps::RunMemory(quick ? 50000 : absl::GetFlag(FLAGS_rows), &part);
    json.push_back(part);
  }
  if (absl::StrContains(sections, "lifecycle")) {
    json.push_back(
        ps::RunLifecycle(quick ? 0.2 : absl::GetFlag(FLAGS_seconds), quick));
  }
  std::printf("%s\n", ("{" + absl::StrJoin(json, ",") + "}").c_str());
  return 0;
}
