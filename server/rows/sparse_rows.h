// The rows of one sparse shard-table: the id -> row index (row_index.h), the
// table's admission policy (admission.h) and eviction policies
// (eviction.h), the table clock, and the memory the rows are charged for
// (memory_budget.h, row_cost.h). ShardTable owns one per sparse table and
// calls it under its lock; the store rows themselves live in the table's
// ParamStore, which SparseRows appends to and resets.
//
// Lifecycle of a row: an id without a row is resolved to kNoRow unless the
// admission policy admits it (pulls: only when the policy creates on
// pulls); an admitted id gets a freed row (reset to its initializer values
// and fresh optimizer state) or a new one appended to the store. Sweep()
// drops the rows the eviction rules expire, freeing their rows for reuse.
//
// Determinism (replication): the rows follow from the sequence of Resolve
// and Sweep calls and their arguments alone (times and push keys come from
// the caller, probability draws are hashes, server/rows/admission.h). With
// `pulls_count` off, pulls only look rows up (no row created, no access
// counted), so replicas that see the same pushes hold the same rows.
// Counters: rows admitted (created) and evicted since the table was created
// (kept across checkpoints), live rows, ids counted and not yet admitted.
//
// Thread safety: none; the owning ShardTable serializes every call.
#ifndef PS_SERVER_ROWS_SPARSE_ROWS_H_
#define PS_SERVER_ROWS_SPARSE_ROWS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/backend/update_backend.h"
#include "common/table_config.h"
#include "server/rows/admission.h"
#include "server/rows/eviction.h"
#include "server/rows/memory_budget.h"
#include "server/rows/row_cost.h"
#include "server/rows/row_index.h"
#include "server/shard_state.h"

namespace ps {

class SparseRows {
 public:
  // A resolved id that has no row (not admitted).
  static constexpr uint64_t kNoRow = ~uint64_t{0};

  // Rows of sparse table `config` on shard `shard_index` of `num_shards`,
  // kept in `store` (the table's; rows of config.dim elements) and charged
  // to `budget` (null: none). `pulls_count`: whether pulls create rows
  // (admit-all) and count as accesses for the capacity rule (false on a
  // replicated shard, whose backups see only pushes). REQUIRES: `store` and
  // `budget` outlive this. INVALID_ARGUMENT when `config` is not a valid
  // sparse table.
  static absl::StatusOr<std::unique_ptr<SparseRows>> Create(
      const TableConfig& config, uint32_t shard_index, uint32_t num_shards,
      ParamStore* store, MemoryBudget* budget, bool pulls_count = true);
  ~SparseRows();  // releases the budget charge

  SparseRows(const SparseRows&) = delete;
  SparseRows& operator=(const SparseRows&) = delete;

  // Resolves the sorted, unique `ids` of one request to store rows, in
  // order, into `rows` (kNoRow for ids without a row), creating the rows of
  // the ids the admission policy admits, and records the access for the
  // eviction rules. A push first raises the table clock to `clock`;
  // `push_key` tells pushes apart for probability admission (how many
  // pushes the table executed before this one: the same on every replica).
  // RESOURCE_EXHAUSTED when the memory cap (or the 2^32 - 1 rows a table
  // may have per shard) leaves no room for the new rows, or for the counts
  // of the pushed ids the admission policy counts without admitting them;
  // then, and on a store error, nothing changed (no row, no count).
  absl::Status Resolve(absl::Span<const uint64_t> ids, bool push,
                       int64_t clock, absl::Time now, uint64_t push_key,
                       std::vector<uint64_t>* rows);

  // The values of resolved `rows` of `ids` (as Resolve gave them) into
  // `out` (rows.size() x dim), float32: stored rows read from the store,
  // kNoRow ones filled with the initializer's values. Errors: the store's.
  absl::Status Read(absl::Span<const uint64_t> ids,
                    absl::Span<const uint64_t> rows,
                    absl::Span<float> out) const;

  // Drops every row an eviction rule expires at `now`. Returns how many.
  uint64_t Sweep(absl::Time now);

  uint64_t live() const { return index_.size(); }
  uint64_t admitted() const { return admitted_; }
  uint64_t evicted() const { return evicted_; }
  uint64_t pending() const { return admission_->pending(); }
  int64_t clock() const { return clock_; }
  const RowCost& cost() const { return cost_; }
  // Bytes charged against the memory cap: the live rows (live() x
  // cost().total()) and the ids counted for admission without a row yet
  // (pending() x kPendingBytesPerId).
  uint64_t charged_bytes() const { return charged_ + pending_charged_; }
  // Heap bytes the index and the admission counts hold now.
  uint64_t IndexBytes() const {
    return index_.AllocatedBytes() + admission_->PendingBytes();
  }

  // The live rows as TableState's values / slots / rows (rows numbered
  // 0..live()-1 in id order) and lifecycle. Errors: the store's.
  absl::Status Snapshot(TableState* state) const;
  // Loads a Snapshot into a table without rows. DATA_LOSS when the state is
  // inconsistent (counts, duplicate or foreign ids, bad row numbers);
  // FAILED_PRECONDITION when rows exist already. The memory is charged even
  // past the cap (the server must come back with what it had).
  absl::Status Restore(const TableState& state);

  // Export: up to `max_rows` live rows from slot *cursor on, in slot order:
  // their ids, values (float32) and, with `with_state`, every optimizer
  // slot's values (state[slot], packed like values). Advances *cursor past
  // the rows read; done when *cursor == num_slots(). Errors: the store's.
  absl::Status ReadLiveRows(uint64_t* cursor, uint64_t max_rows,
                            bool with_state, std::vector<uint64_t>* ids,
                            std::vector<float>* values,
                            std::vector<std::vector<float>>* state) const;
  uint64_t num_slots() const { return index_.num_slots(); }

 private:
  SparseRows(const TableConfig& config, uint32_t shard_index,
             uint32_t num_shards, ParamStore* store, MemoryBudget* budget,
             RowCost cost, bool pulls_count);

  RowTime TimeAt(absl::Time now) const;
  // Creates rows for ids[at[k]] (absent, admitted), writing their rows.
  absl::Status CreateRows(absl::Span<const uint64_t> ids,
                          const std::vector<size_t>& at, const RowTime& t,
                          std::vector<uint64_t>* rows);
  // Sets the pending counts' charge to pending() x kPendingBytesPerId,
  // given that `tentative` bytes were charged for this push's counts.
  void SettlePendingCharge(uint64_t tentative);
  void Drop(uint32_t slot);
  absl::Status RestoreEviction(const TableState& state, absl::Time now);

  // Constant after construction.
  const TableConfig config_;
  const uint32_t shard_index_;
  const uint32_t num_shards_;
  ParamStore* const store_;
  MemoryBudget* const budget_;
  const RowCost cost_;
  const bool pulls_count_;
  const std::unique_ptr<AdmissionPolicy> admission_;
  // The eviction rules stamp tags in index_'s records (declared first).
  RowIndex index_;
  const std::vector<std::unique_ptr<EvictionPolicy>> eviction_;

  int64_t clock_ = 0;
  uint64_t admitted_ = 0;
  uint64_t evicted_ = 0;
  uint64_t charged_ = 0;          // for the live rows
  uint64_t pending_charged_ = 0;  // for the pending counts (pending() x 39)
};

}  // namespace ps

#endif  // PS_SERVER_ROWS_SPARSE_ROWS_H_
