// A replicated sparse table with every row-lifecycle rule on (count and
// probability admission, TTL in seconds, capacity) keeps its replicas
// identical (issue 18: "parameters, optimizer state, versions ... stay
// identical"), with real ps_server processes, a real etcd and the client SDK.
//
// Why it could differ: a backup sees only the pushes, in the primary's
// order, while the primary also serves pulls (which used to create rows,
// refresh rows for the capacity rule and sweep), its wall clock is not the
// backup's (TTL in seconds), and a backup that joins by snapshot has made
// none of the primary's earlier admission draws. The rule that makes it hold
// (ShardTableOptions::lifecycle_counts_pulls, the primary's arrival stamps
// in each entry, hashed draws) is in server/rows/sparse_rows.h.
//
// Workload: one client, one request at a time (a fixed order), pushes of
// random id sets with Adagrad (a row's values depend on its whole history,
// so a row evicted on one replica and kept on the other shows), a pull after
// every third push. The backup joins by snapshot after the first phase; the
// second phase cycles all 300 ids through a 150-row capacity, the third
// pushes only ids 0-99 for longer than the TTL, so the others expire by
// time. Then the primary's rows (every id pulled, the counters) are recorded,
// it is SIGKILLed, and the backup, now primary, must hold exactly the same.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/replication/replicated_shard.h"

namespace ps::testing {
namespace {

constexpr uint32_t kTable = 1;  // after the harness's dense table 0
constexpr uint32_t kDim = 4;
constexpr uint64_t kIds = 300;

constexpr char kSparseTable[] = R"(  - name: emb
    kind: sparse
    dim: 4
    consistency: async
    initializer: {type: uniform, low: -0.1, high: 0.1, seed: 5}
    optimizer: {type: adagrad, learning_rate: 0.1}
    admission: {min_count: 2, probability: 0.5}
    eviction: {ttl_seconds: 2, max_rows_per_shard: 150}
)";

// Pushes random sets of ids below `id_limit` for `how_long`, one request at
// a time, with a pull of the same ids after every third push.
absl::Status Traffic(Client* client, std::mt19937* rng, uint64_t id_limit,
                     absl::Duration how_long, int* pushes) {
  std::uniform_int_distribution<uint64_t> id(0, id_limit - 1);
  std::uniform_real_distribution<float> grad(-1.0f, 1.0f);
  const absl::Time end = absl::Now() + how_long;
  while (absl::Now() < end) {
    std::set<uint64_t> sorted;
    while (sorted.size() < 8) sorted.insert(id(*rng));
    const std::vector<uint64_t> ids(sorted.begin(), sorted.end());
    std::vector<float> grads(ids.size() * kDim);
    for (float& g : grads) g = grad(*rng);
    absl::Status pushed = client->PushSparse(kTable, ids, grads).Wait();
    if (!pushed.ok()) return pushed;
    if (++*pushes % 3 == 0) {
      std::vector<float> out(ids.size() * kDim);
      absl::Status pulled =
          client->PullSparse(kTable, ids, absl::MakeSpan(out)).Wait();
      if (!pulled.ok()) return pulled;
    }
  }
  return absl::OkStatus();
}

// What the primary serves of the table: every id's values, and counters.
struct TableView {
  std::vector<float> values;  // kIds x kDim, id order
  ShardStats::Table stats;
};

absl::StatusOr<TableView> Read(Client* client) {
  TableView view;
  std::vector<uint64_t> ids(kIds);
  for (uint64_t i = 0; i < kIds; ++i) ids[i] = i;
  view.values.assign(kIds * kDim, 0.0f);
  absl::Status pulled =
      client->PullSparse(kTable, ids, absl::MakeSpan(view.values)).Wait();
  if (!pulled.ok()) return pulled;
  absl::StatusOr<std::vector<ShardStats>> stats = client->GetStats();
  if (!stats.ok()) return stats.status();
  for (const ShardStats::Table& t : (*stats)[0].tables) {
    if (t.name == "emb") view.stats = t;
  }
  return view;
}

TEST(ReplicatedSparseTest, LifecycleRulesLeaveThePromotedBackupIdentical) {
  ReplicatedShard shard;
  ReplicatedShard::Options options;
  options.more_tables = kSparseTable;
  ASSERT_TRUE(shard.Start("sparse_lifecycle", options).ok());
  absl::StatusOr<int> a = shard.AddReplica();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(shard.WaitFor(shard.address(*a), {shard.address(*a)},
                            absl::Seconds(20))
                  .ok());
  absl::StatusOr<std::unique_ptr<Client>> client = shard.Connect();
  ASSERT_TRUE(client.ok()) << client.status();
  std::mt19937 rng(20261125);
  int pushes = 0;
  // 1. The primary alone: its admission draws and row orders start here.
  ASSERT_TRUE(
      Traffic(client->get(), &rng, kIds, absl::Milliseconds(700), &pushes)
          .ok());
  // 2. The backup joins by snapshot.
  absl::StatusOr<int> b = shard.AddReplica();
  ASSERT_TRUE(b.ok()) << b.status();
  absl::Status synced =
      shard.WaitFor(shard.address(*a), {shard.address(*a), shard.address(*b)},
                    absl::Seconds(30));
  ASSERT_TRUE(synced.ok()) << synced << "\n" << shard.Log(*b);
  // 3. Capacity at work, then time: ids 100-299 go idle past the TTL.
  ASSERT_TRUE(
      Traffic(client->get(), &rng, kIds, absl::Milliseconds(1500), &pushes)
          .ok());
  ASSERT_TRUE(
      Traffic(client->get(), &rng, 100, absl::Milliseconds(3500), &pushes)
          .ok());
  absl::StatusOr<TableView> before = Read(client->get());
  ASSERT_TRUE(before.ok()) << before.status();

  ASSERT_TRUE(shard.replica(*a)->Signal(SIGKILL).ok());
  ASSERT_TRUE(
      shard.WaitFor(shard.address(*b), {shard.address(*b)}, absl::Seconds(20))
          .ok())
      << shard.Log(*b);
  absl::StatusOr<TableView> after = Read(client->get());
  ASSERT_TRUE(after.ok()) << after.status();

  const ShardStats::Table& s = before->stats;
  std::printf(
      "%d pushes: rows %llu, admitted %llu, evicted %llu, pending %llu\n",
      pushes, static_cast<unsigned long long>(s.num_rows),
      static_cast<unsigned long long>(s.rows_admitted),
      static_cast<unsigned long long>(s.rows_evicted),
      static_cast<unsigned long long>(s.ids_pending));
  // Every rule had work to do: capacity and TTL dropped rows (at most 100
  // rows stay: ids 100-299 expired), ids wait for admission.
  EXPECT_GT(s.rows_evicted, 300u);
  EXPECT_LE(s.num_rows, 100u);
  EXPECT_GT(s.num_rows, 50u);
  EXPECT_GT(s.ids_pending, 0u);
  EXPECT_EQ(s.pushes, static_cast<uint64_t>(pushes));
  // The promoted backup holds exactly what the primary held.
  const ShardStats::Table& t = after->stats;
  EXPECT_EQ(t.version, s.version);
  EXPECT_EQ(t.pushes, s.pushes);
  EXPECT_EQ(t.num_rows, s.num_rows);
  EXPECT_EQ(t.rows_admitted, s.rows_admitted);
  EXPECT_EQ(t.rows_evicted, s.rows_evicted);
  EXPECT_EQ(t.ids_pending, s.ids_pending);
  for (uint64_t i = 0; i < kIds * kDim; ++i) {
    ASSERT_EQ(after->values[i], before->values[i])
        << "id " << i / kDim << " element " << i % kDim;
  }
}

}  // namespace
}  // namespace ps::testing
