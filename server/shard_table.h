// One table's shard: parameters, optimizer state and consistency bookkeeping
// of the keys this server owns.
//
// Dense tables own the element range DenseShardRange(size, shard, shards);
// requests carry global offsets, the store holds the owned range at local
// offsets 0..range.size(). Sparse tables map each owned id (SparseShardOf)
// to a row of the store (server/rows/sparse_rows.h), created with the
// table's initializer (initializer.h: values are independent of the shard
// count and creation order) when the table's admission policy admits the id
// (by default at its first pull or push); an id without a row reads as its
// initializer's values and its pushed gradients are only counted. After
// each request the table drops the rows its eviction rules expire (sync
// tables: only at step boundaries, so an open step's accumulated rows stay),
// and freed rows are reused. The lifecycle's wall clock (ttl_seconds) is the
// second a request arrived (DataRequestView::received_unix_seconds; the
// table's own clock for requests without one), so a replica's backups,
// which apply their primary's requests with its stamps, count the same
// time; on a replicated shard pulls leave the lifecycle alone
// (lifecycle_counts_pulls below). Stores keep values and optimizer state in the
// table's storage_type / state_type (update_backend.h).
//
// Memory: a dense table's store and every sparse row are charged to the
// server's MemoryBudget (server/rows/memory_budget.h); a request that would
// create rows past its cap fails with RESOURCE_EXHAUSTED and changes
// nothing.
//
// Versions: version() counts the logical updates applied; the optimizer's
// step t (Adam bias correction) is the version after the bump (>= 1).
//
// Consistency: the table's ConsistencyPolicy (server/consistency/), chosen
// at creation, decides what a push does (async / ssp: applied on arrival,
// one version per logical push; sync: accumulated into the open step and
// applied once per step, see sync_policy.h), when steps complete
// (ApplyStepsUpTo) and what a checkpoint waits for; the table keeps the
// store, the exactly-once dedup window and validation.
//
// Thread safety: thread-safe; one mutex per table guards the store.
#ifndef PS_SERVER_SHARD_TABLE_H_
#define PS_SERVER_SHARD_TABLE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/backend/update_backend.h"
#include "common/config.h"
#include "common/partition.h"
#include "proto/data_request_view.h"
#include "proto/ps.pb.h"
#include "server/consistency/consistency_policy.h"
#include "server/dedup_window.h"
#include "server/rows/memory_budget.h"
#include "server/rows/sparse_rows.h"
#include "server/shard_state.h"

namespace ps {

struct ShardTableOptions {
  uint32_t shard_index = 0;
  uint32_t num_shards = 1;
  int num_workers = 1;
  bool reject_non_finite = true;  // NaN / Inf gradients: INVALID_ARGUMENT
  // Exactly-once pushes (dedup_window.h): applied push ids kept per client.
  int64_t dedup_window = 4096;
  absl::Duration dedup_idle_timeout = absl::Hours(1);
  // The server's table memory (shared by its tables; null: not counted).
  // REQUIRES: outlives the table.
  MemoryBudget* memory_budget = nullptr;
  // Wall clock of ttl_seconds eviction for requests that carry no arrival
  // second (tests replace it).
  std::function<absl::Time()> now = [] { return absl::Now(); };
  // Whether sparse pulls take part in the row lifecycle: create rows
  // (admit-all), count as accesses for max_rows_per_shard, and sweep. Off
  // on a replicated shard: its backups see only pushes, and each replica's
  // rows must follow from those alone (server/rows/sparse_rows.h).
  bool lifecycle_counts_pulls = true;
};

// One chunk of a sparse table's export (ShardTable::ExportRows).
struct ExportedRows {
  std::vector<uint64_t> ids;
  std::vector<float> values;              // ids.size() x dim, float32
  std::vector<std::vector<float>> state;  // per optimizer slot, like values
  uint64_t next_cursor = 0;
  bool done = false;
};

class ShardTable : private TableUpdates {
 public:
  // Creates the shard of `config` with initialized values. `backend` is used
  // only during the call. `initial_step` is where a sync table's step count
  // starts (the cluster's floor clock when the table is created at runtime).
  // Errors: those of backend->CreateStore (INVALID_ARGUMENT,
  // RESOURCE_EXHAUSTED), RESOURCE_EXHAUSTED when a dense table does not fit
  // in options.memory_budget.
  static absl::StatusOr<std::unique_ptr<ShardTable>> Create(
      const TableConfig& config, const ShardTableOptions& options,
      UpdateBackend* backend, int64_t initial_step = 0);

  ShardTable(const ShardTable&) = delete;
  ShardTable& operator=(const ShardTable&) = delete;
  ~ShardTable();  // releases its memory charge

  const TableConfig& config() const { return config_; }
  const ConsistencyPolicy& policy() const { return *policy_; }
  // Dense: the owned global element range; sparse: empty.
  Range owned_range() const { return owned_; }

  // Checks every field of `request` against this table without touching
  // data: op set; worker_id in [-1, num_workers); non-workers push only to
  // async tables (FAILED_PRECONDITION); clock >= 0; dense: length > 0, range
  // inside the table (else OUT_OF_RANGE) and owned by this shard, no keys;
  // sparse: keys a whole number of uint64, non-empty, sorted and unique,
  // each owned by this shard; push values exactly length (dense) or
  // num_keys * dim (sparse) floats, pulls carry none; gradients finite when
  // reject_non_finite (a view whose values_finite_known is set is trusted
  // for that). INVALID_ARGUMENT unless said otherwise; messages say what was
  // expected and what came. The proto overloads view `request`.
  absl::Status Validate(const DataRequestView& request) const;
  absl::Status Validate(const proto::DataRequest& request) const {
    return Validate(ViewOf(request));
  }

  // Executes a request that passed Validate(): pushes, then (PULL /
  // PUSH_PULL) writes the values in request order into response->values,
  // plus version and step. Sync pushes need request.clock() == steps()
  // (FAILED_PRECONDITION otherwise: the step was already applied, or is not
  // open yet). Nothing is changed when an error is returned before the
  // store is touched; backend errors are passed through.
  // Exactly-once: a push (PUSH / PUSH_PULL) with client_id != 0 whose
  // (client_id, request_id) this table already applied is not applied
  // again; the response carries the original version and step (PUSH_PULL:
  // plus the current values) and duplicate = true. A push whose id is older than the client's
  // dedup window is refused with FAILED_PRECONDITION (it may have been
  // applied already).
  absl::Status Execute(const DataRequestView& request,
                       proto::DataResponse* response);
  absl::Status Execute(const proto::DataRequest& request,
                       proto::DataResponse* response) {
    return Execute(ViewOf(request), response);
  }

  // Steps applied (sync: a pull at clock c may read once steps() >= c).
  // Other tables: 0.
  int64_t steps() const { return policy_->steps(); }

  uint64_t version() const;

  // Completes every step below `floor_clock` (the policy's CompleteSteps);
  // `live` are the live workers. Returns how many steps advanced. No-op for
  // modes without steps. A sparse table then drops the rows its eviction
  // rules expire at `unix_seconds` (0: the table's clock), as after a
  // request.
  absl::StatusOr<int64_t> ApplyStepsUpTo(
      int64_t floor_clock, const absl::flat_hash_set<uint32_t>& live,
      int64_t unix_seconds = 0);

  void FillStats(proto::TableStats* stats) const;

  // A consistent copy of the table's durable state (shard_state.h), taken
  // under the table's lock (updates pause while it is copied). A sync table
  // whose open step has pushes waits up to `sync_wait` for that step to be
  // applied and copies right after it; if it is not applied in time, the
  // copy leaves the open step out: its pushes are neither in the values nor
  // in the copy's dedup window (dropped_open_step_pushes counts them).
  // With `at_step` (a cluster cut, step_holds.h) the copy is taken once
  // steps() reaches at_step instead, the open step left out:
  // DEADLINE_EXCEEDED when it does not within `sync_wait`,
  // FAILED_PRECONDITION when the table is already past it. Errors: the
  // store's.
  absl::StatusOr<TableState> Snapshot(
      absl::Duration sync_wait, std::optional<int64_t> at_step = std::nullopt);

  // Replaces the table's state with `state` (same table id, kind, size / dim
  // and optimizer slot count, else FAILED_PRECONDITION; state of a shard of
  // another size: DATA_LOSS). Meant for a table nobody uses yet.
  absl::Status Restore(const TableState& state);

  // Forgets the dedup windows of clients idle for dedup_idle_timeout.
  void EvictIdleClients(absl::Time now);

  // Sparse export: up to `max_rows` live rows from `cursor` (0 to start;
  // then the previous chunk's next_cursor) in store order, with their
  // optimizer state when `with_state`. Rows are read under the table's lock
  // chunk by chunk, so training goes on between chunks: a row created
  // meanwhile may be missed and one evicted and re-created may appear twice
  // (the later copy is the newer). FAILED_PRECONDITION for a dense table;
  // errors: the store's.
  absl::StatusOr<ExportedRows> ExportRows(uint64_t cursor, uint64_t max_rows,
                                          bool with_state) const;

  // Retried pushes that were answered without applying them again.
  uint64_t duplicates_for_testing() const;

 private:
  ShardTable(const TableConfig& config, const ShardTableOptions& options,
             std::unique_ptr<ParamStore> store,
             std::unique_ptr<SparseRows> sparse, Range owned,
             std::unique_ptr<ConsistencyPolicy> policy, uint64_t dense_charge);

  // TableUpdates, for the policy; called under mu_ (asserted).
  absl::Status Apply(const DataRequestView& push,
                     absl::Span<const uint64_t> rows, int64_t t) override;
  absl::Status Accumulate(const DataRequestView& push,
                          absl::Span<const uint64_t> rows) override;
  absl::Status ApplyAccumulated(absl::Span<const uint64_t> rows, float scale,
                                int64_t t) override;
  uint64_t LockedVersion() const override;
  void BumpVersion() override;

  bool OpenStepEmpty() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Status ValidateDense(const DataRequestView& request,
                             bool push) const;
  absl::Status ValidateSparse(const DataRequestView& request,
                              bool push) const;

  // The row lifecycle's time of a request that arrived at `unix_seconds`
  // (0: not stamped, options_.now()).
  absl::Time LifecycleTime(int64_t unix_seconds) const;

  // The answer to a push already applied: no update; a PUSH_PULL reads.
  absl::Status AnswerDuplicateLocked(const DataRequestView& request,
                                     absl::Span<const uint64_t> ids,
                                     const DedupWindow::Applied& original,
                                     proto::DataResponse* response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sparse: `rows` as SparseRows::Resolve gave them (kNoRow: not stored).
  absl::Status PushLocked(const DataRequestView& request,
                          absl::Span<const uint64_t> rows)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status PullLocked(const DataRequestView& request,
                          absl::Span<const uint64_t> ids,
                          absl::Span<const uint64_t> rows,
                          proto::DataResponse* response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const TableConfig config_;
  const ShardTableOptions options_;
  const Range owned_;  // dense only
  // Thread-safe; its step state changes under mu_ (see consistency_policy.h).
  const std::unique_ptr<ConsistencyPolicy> policy_;
  // Bytes of a dense store charged to options_.memory_budget.
  const uint64_t dense_charge_;

  mutable absl::Mutex mu_;
  std::unique_ptr<ParamStore> store_ ABSL_GUARDED_BY(mu_);
  // Sparse tables: the rows of store_ (null for dense tables).
  std::unique_ptr<SparseRows> sparse_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  // Statistics.
  uint64_t pushes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t pulls_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t bytes_in_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t bytes_out_ ABSL_GUARDED_BY(mu_) = 0;
  // Pushes applied (async) or accumulated (sync), per client.
  DedupWindow dedup_ ABSL_GUARDED_BY(mu_);
  // Retried pushes answered from the window.
  uint64_t duplicates_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ps

#endif  // PS_SERVER_SHARD_TABLE_H_
