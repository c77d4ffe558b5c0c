// What one row of a sparse table costs a shard, by part: the formula
// `ps_ctl plan` prints and the server charges its memory cap with
// (memory_budget.h). Documented in README.md ("Embedding tables: capacity").
//
//   bytes per row = values + state + accumulator + index + lifecycle
//     values      = dim x bytes(storage_type)             (4, or 2 for half)
//     state       = dim x slots x bytes(state_type)       (optimizer slots:
//                   sgd 0, momentum / adagrad 1, adam / adamw / ftrl 2)
//     accumulator = dim x 4 for sync tables (the step's gradient sum)
//     index       = kIndexBytesPerRow (id -> row; row_index.h)
//     lifecycle   = 46 per TTL rule + 26 for max_rows_per_shard: each rule
//                   keeps a 4-byte tag in the index record (x 1.5, the
//                   records' growth) and a queue of at most 2 entries per
//                   row (+ 1025) in an array grown by 1.25x (2.5 entries per
//                   row allocated), of 16 bytes (TTL: slot, stamp) or 8
//                   (capacity: slot, sequence); eviction.h
//   plus, with a count filter, kPendingBytesPerId per id counted and not
//   yet admitted (charged against the memory cap as well: sparse_rows.h).
//
// kIndexBytesPerRow: RowIndex keeps 8 bytes of id per row in an array grown
// by 1.5x (8 to 12 bytes per row), one liveness bit, and a hash set of
// 4-byte slots with one control byte each whose load lies between 7/16 and
// 7/8 (absl grows it by doubling at 7/8: 5.7 to 11.4 bytes per row): 13.8
// to 23.6 bytes per row; the formula charges the upper end, 24.
// //tests/bench:row_memory_bench measures it (README, Embedding tables).
//
// Not in the formula: the CPU store's arrays grow by 1.25x when rows are
// appended, so right after a growth up to a quarter of values + state (+
// accumulator) is allocated ahead of use (the CUDA store grows by 1.5x, in
// device memory); freed rows are reused, so the arrays never grow past the
// peak row count.
//
// Thread safety: pure functions.
#ifndef PS_SERVER_ROWS_ROW_COST_H_
#define PS_SERVER_ROWS_ROW_COST_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "common/table_config.h"

namespace ps {

inline constexpr uint64_t kIndexBytesPerRow = 24;
// absl::flat_hash_map<uint64_t, uint32_t>: a 16-byte slot and a control byte
// per capacity slot at a load of at least 7/16: at most 39 bytes per id.
inline constexpr uint64_t kPendingBytesPerId = 39;

struct RowCost {
  uint64_t values = 0;
  uint64_t state = 0;
  uint64_t accumulator = 0;
  uint64_t index = 0;
  uint64_t lifecycle = 0;

  uint64_t total() const {
    return values + state + accumulator + index + lifecycle;
  }
  // The row's data without any overhead: values and optimizer state as
  // float32 (what "raw row bytes" means in the benchmarks).
  uint64_t raw_float32 = 0;
};

// The cost of one row of sparse table `table`. INVALID_ARGUMENT when it is
// not sparse or its optimizer is unknown.
absl::StatusOr<RowCost> SparseRowCost(const TableConfig& table);

// Bytes per element of dense table `table` (float32 parameters and state,
// plus the accumulator of a sync table). INVALID_ARGUMENT as above.
absl::StatusOr<uint64_t> DenseElementBytes(const TableConfig& table);

}  // namespace ps

#endif  // PS_SERVER_ROWS_ROW_COST_H_
