// ShardTable with sparse row lifecycle (issue 17): admission, eviction,
// half-precision storage, the memory cap, checkpoint state and export,
// through the table's own request path.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/backend/update_backend.h"
#include "common/bytes.h"
#include "common/value_type.h"
#include "gtest/gtest.h"
#include "proto/data_request_view.h"
#include "server/initializer.h"
#include "server/rows/row_cost.h"
#include "server/shard_table.h"

namespace ps {
namespace {

constexpr uint32_t kDim = 3;

TableConfig Sparse(Consistency consistency = Consistency::kAsync) {
  TableConfig t;
  t.name = "emb";
  t.table_id = 4;
  t.kind = TableKind::kSparse;
  t.dim = kDim;
  t.consistency = consistency;
  t.optimizer.type = "sgd";
  t.optimizer.learning_rate = 0.5f;
  t.initializer.type = InitializerType::kUniform;
  t.initializer.seed = 42;
  return t;
}

proto::DataRequest Req(proto::Op op, std::vector<uint64_t> keys,
                       std::vector<float> grad = {}, int64_t clock = 0,
                       int worker = 0) {
  proto::DataRequest r;
  r.set_op(op);
  r.set_table_id(4);
  r.set_worker_id(worker);
  r.set_clock(clock);
  r.set_keys(EncodeRaw<uint64_t>(keys));
  r.set_first_chunk(true);
  if (!grad.empty()) r.set_values(EncodeRaw<float>(grad));
  return r;
}

std::vector<float> Initial(uint64_t id, const TableConfig& t = Sparse()) {
  std::vector<float> v(kDim);
  InitSparseRow(t.initializer, id, absl::MakeSpan(v));
  return v;
}

class ShardTableRowsTest : public ::testing::Test {
 protected:
  std::unique_ptr<ShardTable> Make(const TableConfig& config,
                                   MemoryBudget* budget = nullptr,
                                   bool lifecycle_counts_pulls = true) {
    ShardTableOptions options;
    options.num_workers = 2;
    options.memory_budget = budget;
    options.now = [this] { return now_; };
    options.lifecycle_counts_pulls = lifecycle_counts_pulls;
    absl::StatusOr<std::unique_ptr<ShardTable>> t =
        ShardTable::Create(config, options, backend_.get());
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? std::move(t).value() : nullptr;
  }

  // Validates and executes; returns the pulled values (pulls).
  std::vector<float> Run(ShardTable& table, const proto::DataRequest& r,
                         absl::Status* status = nullptr) {
    proto::DataResponse response;
    absl::Status s = table.Validate(r);
    if (s.ok()) s = table.Execute(r, &response);
    if (status != nullptr) {
      *status = s;
    } else {
      EXPECT_TRUE(s.ok()) << s;
    }
    auto span = ViewRaw<float>(response.values());
    return std::vector<float>(span.begin(), span.end());
  }

  std::vector<float> Pull(ShardTable& table, uint64_t id) {
    return Run(table, Req(proto::PULL, {id}));
  }

  // Runs `r` as received at `unix_seconds` (the data stream's stamp).
  void RunAt(ShardTable& table, const proto::DataRequest& r,
             int64_t unix_seconds) {
    DataRequestView view = ViewOf(r);
    view.received_unix_seconds = unix_seconds;
    proto::DataResponse response;
    absl::Status s = table.Validate(view);
    if (s.ok()) s = table.Execute(view, &response);
    EXPECT_TRUE(s.ok()) << s;
  }

  proto::TableStats Stats(const ShardTable& table) {
    proto::TableStats s;
    table.FillStats(&s);
    return s;
  }

  absl::Time now_ = absl::FromUnixSeconds(2000000000);
  std::unique_ptr<UpdateBackend> backend_ = CreateCpuUpdateBackend();
};

TEST_F(ShardTableRowsTest, CountFilterAdmitsAtTheNthPushAndAppliesIt) {
  TableConfig t = Sparse();
  t.admission.min_count = 3;
  std::unique_ptr<ShardTable> table = Make(t);
  const std::vector<float> g = {1.0f, 2.0f, 4.0f};
  for (int push = 1; push <= 2; ++push) {
    Run(*table, Req(proto::PUSH, {7}, g));
    // Not admitted: the initializer's values, nothing stored.
    EXPECT_EQ(Pull(*table, 7), Initial(7)) << push;
    EXPECT_EQ(Stats(*table).num_rows(), 0u);
    EXPECT_EQ(Stats(*table).ids_pending(), 1u);
  }
  EXPECT_EQ(table->version(), 0u);  // nothing was applied
  // The third push creates the row and applies its gradient (sgd, lr 0.5).
  Run(*table, Req(proto::PUSH, {7}, g));
  std::vector<float> want = Initial(7);
  for (uint32_t j = 0; j < kDim; ++j) want[j] -= 0.5f * g[j];
  EXPECT_EQ(Pull(*table, 7), want);
  const proto::TableStats s = Stats(*table);
  EXPECT_EQ(s.num_rows(), 1u);
  EXPECT_EQ(s.rows_admitted(), 1u);
  EXPECT_EQ(s.ids_pending(), 0u);
  EXPECT_EQ(table->version(), 1u);
}

TEST_F(ShardTableRowsTest, MixedPushAppliesOnlyToAdmittedIds) {
  TableConfig t = Sparse();
  t.admission.min_count = 2;
  std::unique_ptr<ShardTable> table = Make(t);
  Run(*table, Req(proto::PUSH, {1}, {1, 1, 1}));
  // Id 1 is admitted by this push, id 2 only counted.
  const std::vector<float> got = Run(
      *table, Req(proto::PUSH_PULL, {1, 2}, {2, 2, 2, 8, 8, 8}));
  std::vector<float> want = Initial(1);
  for (float& v : want) v -= 1.0f;
  const std::vector<float> init2 = Initial(2);
  want.insert(want.end(), init2.begin(), init2.end());
  EXPECT_EQ(got, want);
  EXPECT_EQ(Stats(*table).num_rows(), 1u);
}

TEST_F(ShardTableRowsTest, CapacityEvictionKeepsTheMostRecentlyUsed) {
  TableConfig t = Sparse();
  t.eviction.max_rows_per_shard = 3;
  std::unique_ptr<ShardTable> table = Make(t);
  Run(*table, Req(proto::PUSH, {10, 20, 30}, std::vector<float>(9, 1.0f)));
  Pull(*table, 10);                    // 10 is now the most recent
  Run(*table, Req(proto::PULL, {40}));  // creates 40, evicts 20
  Run(*table, Req(proto::PULL, {50}));  // evicts 30
  const proto::TableStats s = Stats(*table);
  EXPECT_EQ(s.num_rows(), 3u);
  EXPECT_EQ(s.rows_admitted(), 5u);
  EXPECT_EQ(s.rows_evicted(), 2u);
  // 10 kept its update; 20 comes back fresh from the initializer.
  std::vector<float> ten = Initial(10);
  for (float& v : ten) v -= 0.5f;
  EXPECT_EQ(Pull(*table, 10), ten);
  EXPECT_EQ(Pull(*table, 20), Initial(20));
  EXPECT_EQ(Stats(*table).num_elements(), 4 * kDim);  // freed rows reused
}

TEST_F(ShardTableRowsTest, TtlSecondsDropsRowsNotPushedInTime) {
  TableConfig t = Sparse();
  t.eviction.ttl_seconds = 60;
  std::unique_ptr<ShardTable> table = Make(t);
  Run(*table, Req(proto::PUSH, {1, 2}, std::vector<float>(6, 1.0f)));
  now_ += absl::Seconds(40);
  Run(*table, Req(proto::PUSH, {2}, std::vector<float>(3, 1.0f)));
  now_ += absl::Seconds(21);  // 1: 61 s since its push; 2: 21 s
  Run(*table, Req(proto::PULL, {3}));
  EXPECT_EQ(Stats(*table).rows_evicted(), 1u);
  EXPECT_EQ(Pull(*table, 1), Initial(1));  // recreated
  std::vector<float> two = Initial(2);
  for (float& v : two) v -= 1.0f;
  EXPECT_EQ(Pull(*table, 2), two);
}

// A request's arrival second, not the table's clock, is the lifecycle's
// time: a backup applies its primary's requests with the primary's stamps.
TEST_F(ShardTableRowsTest, ArrivalStampIsTheTtlSecondsClock) {
  TableConfig t = Sparse();
  t.eviction.ttl_seconds = 60;
  std::unique_ptr<ShardTable> table = Make(t);
  const int64_t t0 = absl::ToUnixSeconds(now_);
  RunAt(*table, Req(proto::PUSH, {1}, std::vector<float>(3, 1.0f)), t0 + 5);
  RunAt(*table, Req(proto::PUSH, {2}, std::vector<float>(3, 1.0f)), t0 + 65);
  EXPECT_EQ(Stats(*table).rows_evicted(), 0u);  // 1 is 60 s old, not more
  RunAt(*table, Req(proto::PUSH, {2}, std::vector<float>(3, 1.0f)), t0 + 66);
  EXPECT_EQ(Stats(*table).rows_evicted(), 1u);  // options.now never moved
  EXPECT_EQ(Stats(*table).num_rows(), 1u);
}

// A replicated shard's tables (lifecycle_counts_pulls off): a pull reads
// but creates no row, refreshes none and sweeps nothing.
TEST_F(ShardTableRowsTest, PullsLeaveTheLifecycleAloneWhenTheyDoNotCount) {
  TableConfig t = Sparse();
  t.eviction.ttl_seconds = 60;
  t.eviction.max_rows_per_shard = 2;
  std::unique_ptr<ShardTable> table =
      Make(t, nullptr, /*lifecycle_counts_pulls=*/false);
  const int64_t t0 = absl::ToUnixSeconds(now_);
  EXPECT_EQ(Pull(*table, 5), Initial(5));
  EXPECT_EQ(Stats(*table).num_rows(), 0u);
  RunAt(*table, Req(proto::PUSH, {1}, std::vector<float>(3, 1.0f)), t0);
  RunAt(*table, Req(proto::PUSH, {2}, std::vector<float>(3, 1.0f)), t0);
  RunAt(*table, Req(proto::PULL, {1}), t0 + 100);
  EXPECT_EQ(Stats(*table).rows_evicted(), 0u);
  EXPECT_EQ(Stats(*table).num_rows(), 2u);
  // The next push sweeps: both rows are 100 s old.
  RunAt(*table, Req(proto::PUSH, {3}, std::vector<float>(3, 1.0f)), t0 + 100);
  EXPECT_EQ(Stats(*table).rows_evicted(), 2u);
  EXPECT_EQ(Stats(*table).num_rows(), 1u);
}

TEST_F(ShardTableRowsTest, SyncTablesEvictOnlyAtStepBoundaries) {
  TableConfig t = Sparse(Consistency::kSync);
  t.eviction.max_rows_per_shard = 1;
  std::unique_ptr<ShardTable> table = Make(t);
  Run(*table, Req(proto::PUSH, {1, 2}, std::vector<float>(6, 1.0f), 0, 0));
  Run(*table, Req(proto::PUSH, {3}, std::vector<float>(3, 1.0f), 0, 1));
  // Mid-step: all three rows stay (their gradients wait in the accumulator).
  EXPECT_EQ(Stats(*table).num_rows(), 3u);
  ASSERT_TRUE(table->ApplyStepsUpTo(1, {0, 1}).ok());
  // The step applied the mean gradient (1 + 0) / 2 to rows 1 and 2, and
  // its completion swept down to one row.
  EXPECT_EQ(Stats(*table).num_rows(), 1u);
  std::vector<float> three = Initial(3, t);
  for (float& v : three) v -= 0.5f * 0.5f;
  EXPECT_EQ(Run(*table, Req(proto::PULL, {3}, {}, 1, 0)), three);
}

TEST_F(ShardTableRowsTest, HalfPrecisionRowsRoundTripWithinHalfRounding) {
  for (ValueType type : {ValueType::kFloat16, ValueType::kBfloat16}) {
    TableConfig t = Sparse();
    t.storage_type = type;
    std::unique_ptr<ShardTable> table = Make(t);
    const std::vector<float> got = Pull(*table, 5);
    const std::vector<float> exact = Initial(5);
    const ValueTypeInfo& info = InfoOf(type);
    std::string bytes(kDim * info.bytes, '\0');
    info.encode(exact, bytes.data());
    std::vector<float> rounded(kDim);
    info.decode(bytes, rounded.data());
    EXPECT_EQ(got, rounded) << info.name;  // exactly the rounded value
    const double ulp = type == ValueType::kFloat16 ? 0x1p-11 : 0x1p-8;
    for (uint32_t j = 0; j < kDim; ++j) {
      EXPECT_LE(std::fabs(got[j] - exact[j]), ulp * std::fabs(exact[j]) + 1e-7);
    }
    // Updates are computed in float32 and rounded once.
    Run(*table, Req(proto::PUSH, {5}, {0.25f, 0.5f, -1.0f}));
    const std::vector<float> after = Pull(*table, 5);
    for (uint32_t j = 0; j < kDim; ++j) {
      const float want = rounded[j] - 0.5f * std::vector<float>{0.25f, 0.5f, -1.0f}[j];
      std::string b(info.bytes, '\0');
      info.encode(absl::MakeConstSpan(&want, 1), b.data());
      float want_rounded;
      info.decode(b, &want_rounded);
      EXPECT_EQ(after[j], want_rounded) << info.name << " " << j;
    }
  }
}

TEST_F(ShardTableRowsTest, MemoryCapRefusesNewRowsAndKeepsServing) {
  TableConfig t = Sparse();
  const uint64_t per_row = SparseRowCost(t)->total();
  MemoryBudget budget(5 * per_row + per_row / 2);
  std::unique_ptr<ShardTable> table = Make(t, &budget);
  Run(*table, Req(proto::PULL, {1, 2, 3, 4}));
  absl::Status s;
  Run(*table, Req(proto::PULL, {5, 6}), &s);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(Stats(*table).num_rows(), 4u);
  // Existing rows are still served, and one more row fits.
  EXPECT_EQ(Pull(*table, 1), Initial(1));
  Run(*table, Req(proto::PUSH, {5}, {1, 1, 1}));
  EXPECT_EQ(budget.used(), 5 * per_row);
  EXPECT_EQ(Stats(*table).memory_bytes(), 5 * per_row);
  Run(*table, Req(proto::PULL, {6}), &s);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  table.reset();
  EXPECT_EQ(budget.used(), 0u);
}

TEST_F(ShardTableRowsTest, DenseTableBeyondTheCapIsNotCreated) {
  TableConfig t;
  t.name = "w";
  t.size = 1000;
  t.optimizer.type = "adam";
  MemoryBudget budget(1000 * 4 * 3 - 1);
  ShardTableOptions options;
  options.memory_budget = &budget;
  absl::StatusOr<std::unique_ptr<ShardTable>> table =
      ShardTable::Create(t, options, backend_.get());
  EXPECT_EQ(table.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(budget.used(), 0u);
}

TEST_F(ShardTableRowsTest, SnapshotAndRestoreKeepCountersClocksAndRows) {
  TableConfig t = Sparse();
  t.admission.min_count = 2;
  t.eviction.ttl_clocks = 2;
  std::unique_ptr<ShardTable> a = Make(t);
  Run(*a, Req(proto::PUSH, {1, 2, 3}, std::vector<float>(9, 1.0f), 0));
  Run(*a, Req(proto::PUSH, {1, 2}, std::vector<float>(6, 1.0f), 1));
  absl::StatusOr<TableState> state = a->Snapshot(absl::ZeroDuration());
  ASSERT_TRUE(state.ok()) << state.status();
  std::unique_ptr<ShardTable> b = Make(t);
  ASSERT_TRUE(b->Restore(*state).ok());
  const proto::TableStats s = Stats(*b);
  EXPECT_EQ(s.num_rows(), 2u);
  EXPECT_EQ(s.rows_admitted(), 2u);
  EXPECT_EQ(s.ids_pending(), 1u);
  EXPECT_EQ(s.table_clock(), 1);
  EXPECT_EQ(Pull(*b, 1), Pull(*a, 1));
  // 3's second push admits it; at clock 4, rows last pushed at 1 expire.
  Run(*b, Req(proto::PUSH, {3}, std::vector<float>(3, 1.0f), 4));
  EXPECT_EQ(Stats(*b).rows_evicted(), 2u);
  EXPECT_EQ(Stats(*b).num_rows(), 1u);
}

TEST_F(ShardTableRowsTest, ExportReadsEveryLiveRowInChunks) {
  TableConfig t = Sparse();
  t.optimizer.type = "adagrad";
  t.optimizer.params = {{"epsilon", 1e-10f}, {"initial_accumulator", 0.1f}};
  t.eviction.max_rows_per_shard = 50;
  std::unique_ptr<ShardTable> table = Make(t);
  for (uint64_t id = 0; id < 80; ++id) {
    Run(*table, Req(proto::PUSH, {id}, {1, 2, 3}));
  }
  std::vector<uint64_t> ids;
  uint64_t cursor = 0;
  int chunks = 0;
  for (bool done = false; !done; ++chunks) {
    absl::StatusOr<ExportedRows> rows = table->ExportRows(cursor, 7, true);
    ASSERT_TRUE(rows.ok()) << rows.status();
    ASSERT_EQ(rows->values.size(), rows->ids.size() * kDim);
    ASSERT_EQ(rows->state.size(), 1u);
    ASSERT_EQ(rows->state[0].size(), rows->ids.size() * kDim);
    for (size_t i = 0; i < rows->ids.size(); ++i) {
      const std::vector<float> pulled = Pull(*table, rows->ids[i]);
      EXPECT_EQ(std::vector<float>(rows->values.begin() + i * kDim,
                                   rows->values.begin() + (i + 1) * kDim),
                pulled);
      EXPECT_FLOAT_EQ(rows->state[0][i * kDim + 2], 0.1f + 9.0f);
    }
    ids.insert(ids.end(), rows->ids.begin(), rows->ids.end());
    cursor = rows->next_cursor;
    done = rows->done;
  }
  std::sort(ids.begin(), ids.end());
  std::vector<uint64_t> want;
  for (uint64_t id = 30; id < 80; ++id) want.push_back(id);
  EXPECT_EQ(ids, want);
  EXPECT_GE(chunks, 8);
}

}  // namespace
}  // namespace ps
