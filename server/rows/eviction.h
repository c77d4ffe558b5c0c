// Eviction policies of sparse tables (TableConfig::eviction): which rows to
// drop. One implementation per rule, chosen once when the table is created
// (CreateEvictionPolicies returns one per rule set; a table applies all):
//   - TTL in clocks (ttl_clocks T): a row whose last push came at table
//     clock c is dropped once the table clock is > c + T. The table clock
//     is the highest clock any push to the table carried (for sync tables,
//     the step); a row created by a pull counts as pushed at creation.
//   - TTL in seconds (ttl_seconds T): dropped once its last push is more
//     than T seconds old (wall-clock unix seconds, so time a server spends
//     down counts as idle time after a restore).
//   - capacity (max_rows_per_shard M): at most M rows; the least recently
//     used (pulled or pushed) are dropped first.
// Each keeps a RecencyList of the table's live slots; Expired() walks it
// from the oldest end, so a sweep costs O(rows dropped).
//
// Thread safety: none; the owning table serializes calls.
#ifndef PS_SERVER_ROWS_EVICTION_H_
#define PS_SERVER_ROWS_EVICTION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/table_config.h"
#include "server/rows/recency_list.h"

namespace ps {

// When an event happens: the table clock and wall-clock unix seconds.
struct RowTime {
  int64_t clock = 0;
  int64_t unix_seconds = 0;
};

// A policy's ordering for a checkpoint: slots oldest first with stamps.
struct EvictionOrder {
  std::string policy;  // name()
  std::vector<uint32_t> slots;
  std::vector<int64_t> stamps;
};

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;

  // "ttl_clocks", "ttl_seconds" or "max_rows_per_shard" (messages).
  virtual const char* name() const = 0;

  // Row events. A created row is also pulled or pushed by its request.
  virtual void OnCreate(uint32_t slot, const RowTime& now) = 0;
  virtual void OnPull(uint32_t slot, const RowTime& now) = 0;
  virtual void OnPush(uint32_t slot, const RowTime& now) = 0;
  virtual void OnRemove(uint32_t slot) = 0;

  // The stamp this rule gives a row touched at `t` (checkpoint restores of
  // a rule the checkpoint lacks).
  virtual int64_t StampOf(const RowTime& t) const = 0;

  // Appends to `out` the slots this rule drops at `now`, oldest first;
  // `live_rows` is the table's row count (capacity).
  virtual void Expired(const RowTime& now, uint64_t live_rows,
                       std::vector<uint32_t>* out) const = 0;

  // Checkpoints. Import replaces the ordering (slots must be distinct).
  virtual EvictionOrder Export() const = 0;
  virtual void Import(const EvictionOrder& order) = 0;
};

// The table's policies, one per rule set in `config` (none when off), in
// the order ttl_clocks, ttl_seconds, max_rows_per_shard.
std::vector<std::unique_ptr<EvictionPolicy>> CreateEvictionPolicies(
    const EvictionConfig& config);

}  // namespace ps

#endif  // PS_SERVER_ROWS_EVICTION_H_
