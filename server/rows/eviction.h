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
//
// How, cheaply: each rule keeps a queue of the accesses it counts, oldest
// first, and marks the row's tag in its RowIndex record (the record the id
// lookup just read, so the mark costs no cache miss): the capacity rule
// with the access's sequence number, a TTL rule with its stamp (so a TTL
// rule skips a row already pushed at the current clock or second, and adds
// at most one entry per row and clock). An entry is current while its row
// is live and its tag still matches it; older entries of a row that was
// accessed again, or dropped, are stale and skipped. So the current entries
// are the rows in exact order of their last counted access, an access costs
// a tag compare or write and an append, and a sweep walks from the oldest
// end: O(rows dropped + stale entries passed). The queue is compacted in
// place when it holds more than 2 x the live rows + 1024 entries
// (amortized O(1) per access; row_cost.h counts the memory), keeping each
// live row's newest entry (found newest first with a bit per slot, without
// reading the records). Tags are 32
// bits: a TTL stamp 2^32 clocks or seconds after a row's previous one would
// look current, far beyond any run.
//
// Thread safety: none; the owning table serializes calls.
#ifndef PS_SERVER_ROWS_EVICTION_H_
#define PS_SERVER_ROWS_EVICTION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "common/table_config.h"
#include "server/rows/row_index.h"

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

  // Row events, a request's rows at a time (live, distinct). A created row
  // counts as accessed (pushed) by its request and is reported once.
  virtual void OnCreate(absl::Span<const uint32_t> slots,
                        const RowTime& now) = 0;
  virtual void OnAccess(absl::Span<const uint32_t> slots, bool push,
                        const RowTime& now) = 0;

  // The stamp this rule gives a row touched at `t` (checkpoint restores of
  // a rule the checkpoint lacks).
  virtual int64_t StampOf(const RowTime& t) const = 0;

  // Appends to `out` the slots this rule drops at `now`, oldest first, each
  // once; `live_rows` is the table's row count (capacity). The caller drops
  // them: the rule has forgotten them (and the stale entries it passed).
  virtual void Expired(const RowTime& now, uint64_t live_rows,
                       std::vector<uint32_t>* out) = 0;

  // Checkpoints: the live rows oldest first. Import replaces the ordering
  // (slots must be live and distinct).
  virtual EvictionOrder Export() const = 0;
  virtual void Import(const EvictionOrder& order) = 0;

  // Entries the rule's queue holds, stale ones included (16 bytes each for
  // TTL rules, 8 for capacity): at most 2 x the most rows live at once +
  // 1025, in an array of at most 1.25 x that (row_cost.h).
  virtual size_t queued_entries() const = 0;
};

// How many rules `config` sets (the tags a RowIndex needs for them).
int EvictionRuleCount(const EvictionConfig& config);

// The table's policies, one per rule set in `config` (none when off), in
// the order ttl_clocks, ttl_seconds, max_rows_per_shard; the i-th uses tag
// i of `index`. REQUIRES: `index` has EvictionRuleCount(config) tags and
// outlives the policies.
std::vector<std::unique_ptr<EvictionPolicy>> CreateEvictionPolicies(
    const EvictionConfig& config, RowIndex* index);

}  // namespace ps

#endif  // PS_SERVER_ROWS_EVICTION_H_
