#include "server/rows/sparse_rows.h"

#include <memory>
#include <random>
#include <set>
#include <vector>

#include "absl/time/time.h"
#include "common/backend/update_backend.h"
#include "gtest/gtest.h"
#include "server/initializer.h"

namespace ps {
namespace {

constexpr uint32_t kDim = 4;
const absl::Time kT0 = absl::FromUnixSeconds(1000000);

TableConfig Table() {
  TableConfig t;
  t.name = "emb";
  t.kind = TableKind::kSparse;
  t.dim = kDim;
  t.initializer.type = InitializerType::kUniform;
  t.optimizer.type = "adagrad";
  t.optimizer.params = {{"epsilon", 1e-10f}, {"initial_accumulator", 0.1f}};
  return t;
}

// A table's store and rows, as ShardTable holds them.
struct Fixture {
  explicit Fixture(const TableConfig& config, MemoryBudget* budget = nullptr,
                   bool pulls_count = true) {
    store = CreateCpuUpdateBackend()
                ->CreateStore(config.optimizer, 0,
                              StoreLayout{config.storage_type,
                                          config.state_type})
                .value();
    rows = SparseRows::Create(config, 0, 1, store.get(), budget, pulls_count)
               .value();
  }
  // A push's key is the number of pushes before it (as the table's).
  std::vector<uint64_t> Resolve(std::vector<uint64_t> ids, bool push,
                                int64_t clock = 0, absl::Time now = kT0) {
    std::vector<uint64_t> out;
    EXPECT_TRUE(rows->Resolve(ids, push, clock, now, pushes, &out).ok());
    if (push) ++pushes;
    return out;
  }
  std::unique_ptr<ParamStore> store;
  std::unique_ptr<SparseRows> rows;
  uint64_t pushes = 0;
};

constexpr uint64_t kNo = SparseRows::kNoRow;

TEST(SparseRowsTest, WithoutAdmissionEveryIdGetsARowAtFirstUse) {
  Fixture f(Table());
  EXPECT_EQ(f.Resolve({3, 8}, /*push=*/false), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(f.Resolve({1, 8}, /*push=*/true), (std::vector<uint64_t>{2, 1}));
  EXPECT_EQ(f.rows->live(), 3u);
  EXPECT_EQ(f.rows->admitted(), 3u);
  EXPECT_EQ(f.store->size(), 3 * kDim);
  // Created rows hold the initializer's values.
  std::vector<float> got(kDim), want(kDim);
  ASSERT_TRUE(f.store->ReadRows({1}, kDim, absl::MakeSpan(got)).ok());
  InitSparseRow(Table().initializer, 8, absl::MakeSpan(want));
  EXPECT_EQ(got, want);
}

TEST(SparseRowsTest, CountFilterStoresNothingUntilTheNthPush) {
  TableConfig t = Table();
  t.admission.min_count = 3;
  Fixture f(t);
  EXPECT_EQ(f.Resolve({5}, false), std::vector<uint64_t>{kNo});  // pulls
  EXPECT_EQ(f.Resolve({5}, false), std::vector<uint64_t>{kNo});  // don't count
  EXPECT_EQ(f.Resolve({5, 6}, true), (std::vector<uint64_t>{kNo, kNo}));
  EXPECT_EQ(f.Resolve({5}, true), std::vector<uint64_t>{kNo});
  EXPECT_EQ(f.rows->pending(), 2u);
  EXPECT_EQ(f.store->size(), 0u);
  EXPECT_EQ(f.Resolve({5, 6}, true), (std::vector<uint64_t>{0, kNo}));
  EXPECT_EQ(f.rows->admitted(), 1u);
  EXPECT_EQ(f.rows->pending(), 1u);
  EXPECT_EQ(f.Resolve({5}, false), std::vector<uint64_t>{0});
}

TEST(SparseRowsTest, EvictedRowsAreReusedSoTheStoreStopsGrowing) {
  TableConfig t = Table();
  t.eviction.max_rows_per_shard = 4;
  Fixture f(t);
  for (uint64_t id = 0; id < 100; ++id) {
    f.Resolve({id}, true, 0);
    f.rows->Sweep(kT0);
  }
  EXPECT_EQ(f.rows->live(), 4u);
  EXPECT_EQ(f.rows->admitted(), 100u);
  EXPECT_EQ(f.rows->evicted(), 96u);
  // The store never held more than max_rows + one request's new rows.
  EXPECT_EQ(f.store->size(), 5 * kDim);
  // The survivors are the 4 most recently used, with fresh state when reused.
  for (uint64_t id = 96; id < 100; ++id) {
    EXPECT_NE(f.Resolve({id}, false)[0], kNo) << id;
  }
  EXPECT_EQ(f.rows->admitted(), 100u);
}

TEST(SparseRowsTest, TtlClocksFollowsTheHighestPushedClock) {
  TableConfig t = Table();
  t.eviction.ttl_clocks = 1;
  Fixture f(t);
  f.Resolve({1, 2, 3}, true, 0);
  f.Resolve({2}, true, 1);
  f.Resolve({1}, false, 5);  // a pull neither refreshes nor moves the clock
  EXPECT_EQ(f.rows->Sweep(kT0), 0u);
  f.Resolve({3}, true, 2);  // clock 2: rows last pushed at 0 are 2 > 1 old
  EXPECT_EQ(f.rows->Sweep(kT0), 1u);  // row of id 1
  EXPECT_EQ(f.Resolve({1}, false, 0), std::vector<uint64_t>{0});  // recreated
  EXPECT_EQ(f.rows->clock(), 2);
}

TEST(SparseRowsTest, MemoryCapRefusesAllOrNothing) {
  TableConfig t = Table();
  t.admission.min_count = 2;
  const uint64_t per_row = SparseRowCost(t)->total();
  // Room for 3 rows and the 4 ids' counts before any is admitted.
  MemoryBudget budget(3 * per_row + 4 * kPendingBytesPerId);
  Fixture f(t, &budget);
  std::vector<uint64_t> out;
  ASSERT_TRUE(f.rows->Resolve({1, 2, 3, 4}, true, 0, kT0, 0, &out).ok());
  EXPECT_EQ(budget.used(), 4 * kPendingBytesPerId);
  // The second push of 4 ids would create 4 rows: refused, nothing counted.
  absl::Status s = f.rows->Resolve({1, 2, 3, 4}, true, 0, kT0, 0, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("server.memory_cap_bytes"), std::string::npos);
  EXPECT_EQ(f.rows->live(), 0u);
  TableState state;
  ASSERT_TRUE(f.rows->Snapshot(&state).ok());
  EXPECT_EQ(state.lifecycle.pending_counts,
            (std::vector<std::pair<uint64_t, uint32_t>>{
                {1, 1}, {2, 1}, {3, 1}, {4, 1}}));
  ASSERT_TRUE(f.rows->Resolve({1, 2, 3}, true, 0, kT0, 0, &out).ok());
  // Admitted ids' counts are gone; id 4's is still charged.
  EXPECT_EQ(budget.used(), 3 * per_row + kPendingBytesPerId);
  EXPECT_EQ(f.rows->charged_bytes(), budget.used());
  f.rows.reset();
  EXPECT_EQ(budget.used(), 0u);
}

// Counted ids hold memory before they have a row (one hash-map entry each):
// they are charged at kPendingBytesPerId, so a flood of ids seen once cannot
// grow the server past its cap.
TEST(SparseRowsTest, MemoryCapBoundsTheCountsOfIdsNotYetAdmitted) {
  TableConfig t = Table();
  t.admission.min_count = 3;
  MemoryBudget budget(10 * kPendingBytesPerId);
  Fixture f(t, &budget);
  std::vector<uint64_t> out;
  std::vector<uint64_t> ids(10);
  for (uint64_t i = 0; i < 10; ++i) ids[i] = i;
  ASSERT_TRUE(f.rows->Resolve(ids, true, 0, kT0, 0, &out).ok());
  EXPECT_EQ(f.rows->pending(), 10u);
  EXPECT_EQ(budget.used(), 10 * kPendingBytesPerId);
  // One more id to count: refused, nothing counted; the server serves on.
  absl::Status s = f.rows->Resolve({100}, true, 0, kT0, 1, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("1 ids counted for admission"), std::string::npos)
      << s;
  EXPECT_EQ(f.rows->pending(), 10u);
  // Ids already counted count on within the cap's room for one push's worth
  // (each push may add as many counts as it has ids, so it needs that room).
  MemoryBudget roomy(12 * kPendingBytesPerId);
  Fixture g(t, &roomy);
  ASSERT_TRUE(g.rows->Resolve(ids, true, 0, kT0, 0, &out).ok());
  ASSERT_TRUE(g.rows->Resolve({0, 1}, true, 0, kT0, 1, &out).ok());
  EXPECT_EQ(g.rows->pending(), 10u);
  EXPECT_EQ(roomy.used(), 10 * kPendingBytesPerId);
  // A restored table charges its counts too.
  TableState state;
  ASSERT_TRUE(g.rows->Snapshot(&state).ok());
  MemoryBudget restored_budget(0);
  Fixture h(t, &restored_budget);
  ASSERT_TRUE(h.rows->Restore(state).ok());
  EXPECT_EQ(restored_budget.used(), 10 * kPendingBytesPerId);
}

TEST(SparseRowsTest, SnapshotRestoreKeepsCountersClocksAndOrder) {
  TableConfig t = Table();
  t.admission.min_count = 2;
  t.eviction.ttl_clocks = 3;
  t.eviction.max_rows_per_shard = 3;
  Fixture a(t);
  a.Resolve({10, 11, 12, 13}, true, 0);
  a.Resolve({10, 11, 12, 13}, true, 1);  // admitted at clock 1
  a.rows->Sweep(kT0);                    // capacity: 10 goes
  a.Resolve({12}, true, 2);
  a.Resolve({99}, true, 2);  // counted once
  TableState state;
  ASSERT_TRUE(a.rows->Snapshot(&state).ok());
  EXPECT_EQ(state.lifecycle.table_clock, 2);
  EXPECT_EQ(state.lifecycle.rows_admitted, 4u);
  EXPECT_EQ(state.lifecycle.rows_evicted, 1u);
  ASSERT_EQ(state.rows.size(), 3u);
  EXPECT_EQ(state.rows[0].first, 11u);

  Fixture b(t);
  ASSERT_TRUE(b.rows->Restore(state).ok());
  EXPECT_EQ(b.rows->clock(), 2);
  EXPECT_EQ(b.rows->admitted(), 4u);
  EXPECT_EQ(b.rows->evicted(), 1u);
  EXPECT_EQ(b.rows->pending(), 1u);
  // 99's second push admits it; capacity then drops the least recently
  // used: 11 (used at clock 1, before 13 and 12).
  b.Resolve({99}, true, 3);
  b.rows->Sweep(kT0);
  EXPECT_EQ(b.Resolve({11}, false), std::vector<uint64_t>{kNo});
  // Clock 5: 13 (last pushed at 1) is 4 > 3 clocks old; 12 (2) is not.
  b.Resolve({99}, true, 5);
  EXPECT_EQ(b.rows->Sweep(kT0), 1u);
  EXPECT_EQ(b.Resolve({13}, false), std::vector<uint64_t>{kNo});
  EXPECT_NE(b.Resolve({12}, false)[0], kNo);
  // Values came back too.
  std::vector<float> got(kDim), want(kDim);
  const uint64_t row12 = b.Resolve({12}, false)[0];
  ASSERT_TRUE(b.store->ReadRows({row12}, kDim, absl::MakeSpan(got)).ok());
  InitSparseRow(t.initializer, 12, absl::MakeSpan(want));
  EXPECT_EQ(got, want);
}

TEST(SparseRowsTest, WithoutPullsCountingPullsOnlyLookRowsUp) {
  TableConfig t = Table();
  t.eviction.max_rows_per_shard = 2;
  for (const bool pulls_count : {true, false}) {
    Fixture f(t, nullptr, pulls_count);
    // Admit-all creates on a pull only when pulls count.
    EXPECT_EQ(f.Resolve({7}, false)[0] == kNo, !pulls_count) << pulls_count;
    EXPECT_EQ(f.rows->live(), pulls_count ? 1u : 0u);
    f.Resolve({1}, true);
    f.Resolve({2}, true);
    f.Resolve({1}, false);  // refreshes 1 only when pulls count
    f.Resolve({3}, true);
    f.rows->Sweep(kT0);
    // Least recently used: 7 and 2 when the pull counted, else 1.
    TableState state;
    ASSERT_TRUE(f.rows->Snapshot(&state).ok());
    std::vector<uint64_t> ids;
    for (const auto& [id, row] : state.rows) ids.push_back(id);
    const std::vector<uint64_t> want =
        pulls_count ? std::vector<uint64_t>{1, 3} : std::vector<uint64_t>{2, 3};
    EXPECT_EQ(ids, want) << pulls_count;
  }
}

// What replication needs (a backup sees the pushes only): with pulls not
// counting, a table that also served pulls between the pushes holds exactly
// the rows, values, counts and orders of one that saw the pushes alone, with
// every lifecycle rule on (probability admission, TTL in clocks and seconds,
// capacity) and the sweeps after each push that ShardTable makes.
TEST(SparseRowsTest, WithoutPullsCountingRowsFollowFromThePushesAlone) {
  TableConfig t = Table();
  t.admission.min_count = 2;
  t.admission.probability = 0.5f;
  t.eviction.ttl_clocks = 40;
  t.eviction.ttl_seconds = 3;
  t.eviction.max_rows_per_shard = 50;
  Fixture served(t, nullptr, /*pulls_count=*/false);
  Fixture pushed_only(t, nullptr, /*pulls_count=*/false);
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint64_t> id(0, 199);
  for (int64_t i = 0; i < 3000; ++i) {
    std::set<uint64_t> sorted;
    for (int k = 0; k < 6; ++k) sorted.insert(id(rng));
    const std::vector<uint64_t> ids(sorted.begin(), sorted.end());
    const absl::Time now = kT0 + absl::Seconds(i / 100);
    if (rng() % 3 == 0) {
      served.Resolve(ids, /*push=*/false, 0, now);
      continue;
    }
    const int64_t clock = i / 20;
    served.Resolve(ids, true, clock, now);
    served.rows->Sweep(now);
    pushed_only.Resolve(ids, true, clock, now);
    pushed_only.rows->Sweep(now);
  }
  TableState a, b;
  ASSERT_TRUE(served.rows->Snapshot(&a).ok());
  ASSERT_TRUE(pushed_only.rows->Snapshot(&b).ok());
  EXPECT_GT(a.lifecycle.rows_evicted, 100u);  // every rule had work to do
  EXPECT_GT(a.lifecycle.pending_counts.size(), 10u);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(a.lifecycle.rows_admitted, b.lifecycle.rows_admitted);
  EXPECT_EQ(a.lifecycle.rows_evicted, b.lifecycle.rows_evicted);
  EXPECT_EQ(a.lifecycle.pending_counts, b.lifecycle.pending_counts);
  ASSERT_EQ(a.lifecycle.eviction.size(), 3u);
  for (size_t r = 0; r < a.lifecycle.eviction.size(); ++r) {
    EXPECT_EQ(a.lifecycle.eviction[r].rows, b.lifecycle.eviction[r].rows);
    EXPECT_EQ(a.lifecycle.eviction[r].stamps, b.lifecycle.eviction[r].stamps);
  }
}

// The TTL and capacity rules together: the capacity rule drops a row and a
// new id takes its slot in the same second. Each row is still dropped once
// (not twice: the slot would enter the free list twice and two ids would
// share it) and a snapshot restores.
TEST(SparseRowsTest, SlotReusedWithinOneSecondIsDroppedOnce) {
  TableConfig t = Table();
  t.eviction.ttl_seconds = 5;
  t.eviction.max_rows_per_shard = 2;
  Fixture f(t);
  for (uint64_t id = 1; id <= 6; ++id) {
    f.Resolve({id}, true, 0, kT0);
    f.rows->Sweep(kT0);
  }
  EXPECT_EQ(f.rows->live(), 2u);
  EXPECT_EQ(f.rows->evicted(), 4u);
  TableState state;
  ASSERT_TRUE(f.rows->Snapshot(&state).ok());
  ASSERT_EQ(state.lifecycle.eviction.size(), 2u);
  EXPECT_EQ(state.lifecycle.eviction[0].rows.size(), 2u);  // ttl_seconds
  Fixture restored(t);
  EXPECT_TRUE(restored.rows->Restore(state).ok());
  EXPECT_EQ(f.rows->Sweep(kT0 + absl::Seconds(6)), 2u);
  EXPECT_EQ(f.rows->evicted(), 6u);
  // Three new ids get three different rows.
  const std::vector<uint64_t> rows = f.Resolve({7, 8, 9}, true, 0, kT0);
  EXPECT_EQ(std::set<uint64_t>(rows.begin(), rows.end()).size(), 3u);
}

TEST(SparseRowsTest, RestoreRejectsInconsistentState) {
  Fixture a(Table());
  a.Resolve({1, 2}, true);
  TableState state;
  ASSERT_TRUE(a.rows->Snapshot(&state).ok());
  TableState dup = state;
  dup.rows[1].second = 0;
  EXPECT_EQ(Fixture(Table()).rows->Restore(dup).code(),
            absl::StatusCode::kDataLoss);
  TableState short_values = state;
  short_values.values.resize(kDim);
  EXPECT_EQ(Fixture(Table()).rows->Restore(short_values).code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(a.rows->Restore(state).code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace ps
