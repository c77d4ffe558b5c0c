// Sparse tables with a row lifecycle through real ps_server processes
// (issue 17): admission thresholds, TTL and capacity eviction (which ids
// survive, read back with `ps_ctl export`), half-precision row storage, the
// memory cap (RESOURCE_EXHAUSTED, and the server keeps serving), export then
// reload equal to what a client pulls, and counters and clocks across a
// checkpoint, a SIGKILL and a restore.
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/export/embedding_file.h"
#include "common/value_type.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"

namespace ps::testing {
namespace {

constexpr int kDim = 4;

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// Runs `ps_ctl <args>`; returns its exit code, output in *out.
int RunCtl(const std::string& args, std::string* out) {
  static int n = 0;
  const std::string path = absl::StrCat(TempDir(), "/ctl_", n++, ".txt");
  const int status = std::system(absl::StrCat(RunfilePath("deploy/ctl/ps_ctl"),
                                              " ", args, " > ", path, " 2>&1")
                                     .c_str());
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Servers(const LocalCluster& cluster) {
  std::string servers;
  for (const std::string& a : cluster.addresses()) {
    absl::StrAppend(&servers, servers.empty() ? "" : ",", a);
  }
  return servers;
}

// Exports `table` of `cluster` and reads the file back.
EmbeddingTable Export(const LocalCluster& cluster, const std::string& table,
                      bool with_state) {
  const std::string file = absl::StrCat(TempDir(), "/", table, ".psemb");
  std::string out;
  const int code = RunCtl(absl::StrCat("--servers ", Servers(cluster),
                                       " export --table ", table, " --out ",
                                       file, with_state ? " --with_state" : ""),
                          &out);
  EXPECT_EQ(code, 0) << out;
  absl::StatusOr<EmbeddingTable> t = ReadEmbeddingFile(file);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : EmbeddingTable();
}

std::vector<uint64_t> SortedIds(const EmbeddingTable& t) {
  std::vector<uint64_t> ids = t.ids;
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Summed over shards.
ShardStats::Table TableStats(Client& client, const std::string& name) {
  ShardStats::Table total;
  absl::StatusOr<std::vector<ShardStats>> stats = client.GetStats();
  EXPECT_TRUE(stats.ok()) << stats.status();
  if (!stats.ok()) return total;
  for (const ShardStats& s : *stats) {
    for (const ShardStats::Table& t : s.tables) {
      if (t.name != name) continue;
      total.num_rows += t.num_rows;
      total.rows_admitted += t.rows_admitted;
      total.rows_evicted += t.rows_evicted;
      total.ids_pending += t.ids_pending;
      total.table_clock = std::max(total.table_clock, t.table_clock);
      total.memory_bytes += t.memory_bytes;
    }
  }
  return total;
}

std::unique_ptr<LocalCluster> Start(const std::string& body, int servers = 2,
                                    int workers = 1) {
  ClusterSpec spec;
  spec.num_servers = servers;
  spec.num_workers = workers;
  spec.body_yaml = body;
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(spec);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return cluster.ok() ? std::move(cluster).value() : nullptr;
}

TEST(EmbeddingTablesTest, AdmissionThresholdIsExactAndTtlClocksEvicts) {
  std::unique_ptr<LocalCluster> cluster = Start(R"(
tables:
  - name: emb
    kind: sparse
    dim: 4
    initializer: {type: uniform, seed: 9}
    optimizer: {type: sgd, learning_rate: 1.0}
    admission: {min_count: 3}
    eviction: {ttl_clocks: 1}
)", /*servers=*/1);
  ASSERT_NE(cluster, nullptr);
  absl::StatusOr<std::unique_ptr<Client>> client = cluster->Connect(0);
  ASSERT_TRUE(client.ok()) << client.status();
  const uint32_t emb = (*client)->GetTable("emb")->table_id;
  // Ids 1..40 pushed k = id % 5 times at clock 0: exactly those with k >= 3
  // get rows.
  const std::vector<float> g(kDim, 0.5f);
  for (uint64_t id = 1; id <= 40; ++id) {
    for (uint64_t k = 0; k < id % 5; ++k) {
      ASSERT_TRUE((*client)->PushSparse(emb, {id}, g).Wait().ok());
    }
  }
  std::vector<uint64_t> admitted;
  for (uint64_t id = 1; id <= 40; ++id) {
    if (id % 5 >= 3) admitted.push_back(id);
  }
  ShardStats::Table s = TableStats(**client, "emb");
  EXPECT_EQ(s.num_rows, admitted.size());
  EXPECT_EQ(s.rows_admitted, admitted.size());
  EXPECT_EQ(s.ids_pending, 40 - admitted.size() - 8);  // k = 0 never counted
  EXPECT_EQ(SortedIds(Export(*cluster, "emb", false)), admitted);
  // Clock 1: ids 3 and 8 pushed again; clock 2: id 4 pushed. At clock 2 the
  // rows last pushed at clock 0 are 2 > 1 clocks old: only 3, 8 (clock 1)
  // and 4 (clock 2) survive.
  ASSERT_TRUE((*client)->Clock().ok());
  ASSERT_TRUE((*client)->PushSparse(emb, {3, 8}, std::vector<float>(8, 0.5f))
                  .Wait()
                  .ok());
  ASSERT_TRUE((*client)->Clock().ok());
  ASSERT_TRUE((*client)->PushSparse(emb, {4}, g).Wait().ok());
  // (The table sweeps after each request, so right after that push.)
  EXPECT_EQ(SortedIds(Export(*cluster, "emb", false)),
            (std::vector<uint64_t>{3, 4, 8}));
  s = TableStats(**client, "emb");
  EXPECT_EQ(s.rows_evicted, admitted.size() - 3);
  EXPECT_EQ(s.table_clock, 2);
  // An evicted id starts over: pulls read its initializer values, and it
  // needs min_count pushes again.
  std::vector<float> row(kDim);
  ASSERT_TRUE((*client)->PushSparse(emb, {13}, g).Wait().ok());
  EXPECT_EQ(TableStats(**client, "emb").num_rows, 3u);
}

TEST(EmbeddingTablesTest, CapacityEvictionKeepsTheLeastRecentlyUsedOut) {
  std::unique_ptr<LocalCluster> cluster = Start(R"(
tables:
  - name: emb
    kind: sparse
    dim: 4
    optimizer: {type: sgd, learning_rate: 1.0}
    eviction: {max_rows_per_shard: 5}
)", /*servers=*/1);
  ASSERT_NE(cluster, nullptr);
  absl::StatusOr<std::unique_ptr<Client>> client = cluster->Connect(-1);
  ASSERT_TRUE(client.ok()) << client.status();
  const uint32_t emb = (*client)->GetTable("emb")->table_id;
  std::vector<float> out(kDim);
  for (uint64_t id = 100; id < 108; ++id) {
    ASSERT_TRUE((*client)->PullSparse(emb, {id}, absl::MakeSpan(out)).Wait().ok());
    if (id == 104) {  // touch 101 again: it outlives 102, 103
      ASSERT_TRUE(
          (*client)->PullSparse(emb, {101}, absl::MakeSpan(out)).Wait().ok());
    }
  }
  // Order of last use: 100 102 103 104 101 105 106 107 -> keep the last 5.
  EXPECT_EQ(SortedIds(Export(*cluster, "emb", false)),
            (std::vector<uint64_t>{101, 104, 105, 106, 107}));
  const ShardStats::Table s = TableStats(**client, "emb");
  EXPECT_EQ(s.rows_admitted, 8u);
  EXPECT_EQ(s.rows_evicted, 3u);
}

TEST(EmbeddingTablesTest, ExportThenReloadEqualsPulledValues) {
  std::unique_ptr<LocalCluster> cluster = Start(R"(
tables:
  - name: emb
    kind: sparse
    dim: 4
    storage_type: float16
    initializer: {type: normal, stddev: 0.1, seed: 5}
    optimizer: {type: adagrad, learning_rate: 0.1, initial_accumulator: 0.1}
)");
  ASSERT_NE(cluster, nullptr);
  absl::StatusOr<std::unique_ptr<Client>> client = cluster->Connect(-1);
  ASSERT_TRUE(client.ok()) << client.status();
  const uint32_t emb = (*client)->GetTable("emb")->table_id;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3000; ++i) ids.push_back(rng());
  // Adagrad's accumulator after three steps, as the server sums it.
  std::vector<float> h(ids.size() * kDim, 0.1f);
  for (int step = 0; step < 3; ++step) {
    std::vector<float> g(ids.size() * kDim);
    for (float& x : g) x = u(rng);
    for (size_t k = 0; k < g.size(); ++k) h[k] += g[k] * g[k];
    ASSERT_TRUE((*client)->PushSparse(emb, ids, g).Wait().ok());
  }
  std::vector<float> pulled(ids.size() * kDim);
  ASSERT_TRUE(
      (*client)->PullSparse(emb, ids, absl::MakeSpan(pulled)).Wait().ok());
  const EmbeddingTable t = Export(*cluster, "emb", /*with_state=*/true);
  EXPECT_EQ(t.header.table, "emb");
  EXPECT_EQ(t.header.optimizer, "adagrad");
  EXPECT_EQ(t.header.value_type, ValueType::kFloat16);
  EXPECT_EQ(t.header.num_shards, 2u);
  ASSERT_EQ(t.header.num_state_slots, 1u);
  ASSERT_EQ(t.ids.size(), ids.size());
  std::map<uint64_t, size_t> at;
  for (size_t i = 0; i < t.ids.size(); ++i) at[t.ids[i]] = i;
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(at.count(ids[i]), 1u);
    const size_t r = at[ids[i]];
    for (int j = 0; j < kDim; ++j) {
      // Bit-equal: both are the stored float16 value, decoded.
      ASSERT_EQ(t.values[r * kDim + j], pulled[i * kDim + j]) << ids[i];
      ASSERT_FLOAT_EQ(t.state[0][r * kDim + j], h[i * kDim + j]) << ids[i];
    }
  }
}

TEST(EmbeddingTablesTest, MemoryCapRefusesNewRowsAndTheServerKeepsServing) {
  // float32 + sgd, dim 4: 16 values + 24 index = 40 bytes per row (plan).
  std::unique_ptr<LocalCluster> cluster = Start(R"(
server: {memory_cap_bytes: 4000}
tables:
  - name: emb
    kind: sparse
    dim: 4
    optimizer: {type: sgd, learning_rate: 1.0}
)", /*servers=*/1);
  ASSERT_NE(cluster, nullptr);
  std::string plan;
  EXPECT_EQ(RunCtl(absl::StrCat("plan --config ", cluster->config_path(),
                                " --rows emb=100"),
                   &plan),
            0)
      << plan;
  EXPECT_NE(plan.find("100 rows/shard x 40 B = 3.9 KiB"), std::string::npos)
      << plan;
  EXPECT_EQ(RunCtl(absl::StrCat("plan --config ", cluster->config_path(),
                                " --rows emb=101"),
                   &plan),
            1)
      << plan;
  absl::StatusOr<std::unique_ptr<Client>> client = cluster->Connect(-1);
  ASSERT_TRUE(client.ok()) << client.status();
  const uint32_t emb = (*client)->GetTable("emb")->table_id;
  std::vector<uint64_t> ids;
  for (uint64_t id = 0; id < 100; ++id) ids.push_back(id);
  std::vector<float> out(100 * kDim);
  ASSERT_TRUE((*client)->PullSparse(emb, ids, absl::MakeSpan(out)).Wait().ok());
  std::vector<float> one(kDim);
  const absl::Status refused =
      (*client)->PullSparse(emb, {1000}, absl::MakeSpan(one)).Wait();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("server.memory_cap_bytes"),
            std::string::npos);
  // The server serves on: existing rows pull and push.
  ASSERT_TRUE((*client)->PushSparse(emb, {5}, std::vector<float>(kDim, 1.0f))
                  .Wait()
                  .ok());
  ASSERT_TRUE((*client)->PullSparse(emb, ids, absl::MakeSpan(out)).Wait().ok());
  absl::StatusOr<std::vector<ShardStats>> stats = (*client)->GetStats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ((*stats)[0].memory_cap_bytes, 4000u);
  EXPECT_EQ((*stats)[0].memory_used_bytes, 4000u);
  std::string text;
  EXPECT_EQ(RunCtl(absl::StrCat("--servers ", Servers(*cluster), " stats"),
                   &text),
            0)
      << text;
  EXPECT_NE(text.find("emb    all    100   100       0        0        3.9 KiB"),
            std::string::npos)
      << text;
}

// The server's heap figures (GetStats, from glibc's allocator) follow the
// rows: creating 100,000 rows of dim 64 (float32, sgd: 256 B of values and
// 24 B of index by the formula) adds at least their values to the heap in
// use, and at most the formula plus the store's growth ahead of use (up to a
// quarter of the values).
TEST(EmbeddingTablesTest, HeapInUseGrowsByTheFormulasBytesPerRow) {
  std::unique_ptr<LocalCluster> cluster = Start(R"(
tables:
  - name: emb
    kind: sparse
    dim: 64
    optimizer: {type: sgd, learning_rate: 1.0}
)", /*servers=*/1);
  ASSERT_NE(cluster, nullptr);
  absl::StatusOr<std::unique_ptr<Client>> client = cluster->Connect(-1);
  ASSERT_TRUE(client.ok()) << client.status();
  const uint32_t emb = (*client)->GetTable("emb")->table_id;
  absl::StatusOr<std::vector<ShardStats>> before = (*client)->GetStats();
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_GT((*before)[0].heap_allocated_bytes, 0u);
  constexpr uint64_t kRows = 100000;
  constexpr uint64_t kBatch = 10000;
  std::vector<float> out(kBatch * 64);
  for (uint64_t first = 0; first < kRows; first += kBatch) {
    std::vector<uint64_t> ids;
    for (uint64_t id = first; id < first + kBatch; ++id) ids.push_back(id);
    ASSERT_TRUE(
        (*client)->PullSparse(emb, ids, absl::MakeSpan(out)).Wait().ok());
  }
  absl::StatusOr<std::vector<ShardStats>> after = (*client)->GetStats();
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->at(0).tables.at(0).num_rows, kRows);
  EXPECT_EQ(after->at(0).tables.at(0).bytes_per_row, 280u);
  const double per_row =
      (static_cast<double>((*after)[0].heap_allocated_bytes) -
       static_cast<double>((*before)[0].heap_allocated_bytes)) /
      kRows;
  EXPECT_GE(per_row, 256.0);
  EXPECT_LE(per_row, 280.0 + 64.0);
  std::string text;
  EXPECT_EQ(RunCtl(absl::StrCat("--servers ", Servers(*cluster), " stats"),
                   &text),
            0)
      << text;
  EXPECT_NE(text.find("HEAP_IN_USE  HEAP_FREE"), std::string::npos) << text;
}

TEST(EmbeddingTablesTest, CheckpointRestoreKeepsCountersAndClocks) {
  const std::string dir = absl::StrCat(TempDir(), "/emb_ckpt");
  std::unique_ptr<LocalCluster> cluster = Start(absl::StrCat(R"(
server: {checkpoint_dir: ")", dir, R"("}
tables:
  - name: emb
    kind: sparse
    dim: 4
    optimizer: {type: sgd, learning_rate: 1.0}
    admission: {min_count: 2}
    eviction: {ttl_clocks: 3, max_rows_per_shard: 4}
)"), /*servers=*/1);
  ASSERT_NE(cluster, nullptr);
  {
    absl::StatusOr<std::unique_ptr<Client>> client = cluster->Connect(0);
    ASSERT_TRUE(client.ok()) << client.status();
    const uint32_t emb = (*client)->GetTable("emb")->table_id;
    const std::vector<float> g(6 * kDim, 1.0f);
    const std::vector<uint64_t> ids = {1, 2, 3, 4, 5, 6};
    ASSERT_TRUE((*client)->PushSparse(emb, ids, g).Wait().ok());
    ASSERT_TRUE((*client)->Clock().ok());
    ASSERT_TRUE((*client)->PushSparse(emb, ids, g).Wait().ok());  // admitted
    ASSERT_TRUE((*client)->PushSparse(emb, {9}, std::vector<float>(kDim, 1))
                    .Wait()
                    .ok());  // counted once
    const ShardStats::Table s = TableStats(**client, "emb");
    EXPECT_EQ(s.rows_admitted, 6u);
    EXPECT_EQ(s.rows_evicted, 2u);  // capacity 4
    EXPECT_EQ(s.ids_pending, 1u);
    EXPECT_EQ(s.table_clock, 1);
    ASSERT_TRUE((*client)->Checkpoint().ok());
  }
  ASSERT_TRUE(cluster->KillServer(0, SIGKILL).ok());
  ASSERT_TRUE(cluster->RestartServer(0).ok()) << cluster->ServerLog(0);
  absl::StatusOr<std::unique_ptr<Client>> client = cluster->Connect(0);
  ASSERT_TRUE(client.ok()) << client.status();
  ShardStats::Table s = TableStats(**client, "emb");
  EXPECT_EQ(s.num_rows, 4u);
  EXPECT_EQ(s.rows_admitted, 6u);
  EXPECT_EQ(s.rows_evicted, 2u);
  EXPECT_EQ(s.ids_pending, 1u);
  EXPECT_EQ(s.table_clock, 1);
  const uint32_t emb = (*client)->GetTable("emb")->table_id;
  // 9's count survived: its second push admits it.
  ASSERT_TRUE((*client)->PushSparse(emb, {9}, std::vector<float>(kDim, 1))
                  .Wait()
                  .ok());
  s = TableStats(**client, "emb");
  EXPECT_EQ(s.rows_admitted, 7u);
  EXPECT_EQ(s.ids_pending, 0u);
}

}  // namespace
}  // namespace ps::testing
