#include "server/rows/eviction.h"

#include <type_traits>
#include <utility>

namespace ps {
namespace {

// How many slots ahead a walk prefetches records (RowIndex::Prefetch):
// enough to cover a memory latency at a few ns per slot, few enough that
// the lines are still cached when their turn comes.
constexpr size_t kPrefetchAhead = 8;

// The accesses a rule counts, oldest first (see the header). kStamped:
// entries carry the access's stamp and the tag marks the row's stamp (TTL
// rules); else the tag is the access's sequence number (capacity).
template <bool kStamped>
class AccessQueue {
 public:
  AccessQueue(RowIndex* index, int tag) : index_(index), tag_(tag) {}

  // Records an access of live `slot` (at `stamp` for TTL rules). `force`:
  // even when the row's tag already matches (restoring an order).
  void Touch(uint32_t slot, int64_t stamp, bool force = false) {
    Entry e;
    e.slot = slot;
    if constexpr (kStamped) {
      const uint32_t code = Code(stamp);
      // Same stamp as its last access: its entry is in order already.
      if (!force && index_->tag(slot, tag_) == code) return;
      index_->set_tag(slot, tag_, code);
      e.stamp = stamp;
    } else {
      if (++seq_ == 0) ++seq_;  // 0 is a fresh record's tag
      index_->set_tag(slot, tag_, seq_);
      e.seq = seq_;
    }
    // Grown by 1.25x, not the vector's 2x: its capacity is what the memory
    // formula charges (row_cost.h: 2.5 entries per row).
    if (entries_.size() == entries_.capacity()) {
      entries_.reserve(entries_.size() + entries_.size() / 4 + 16);
    }
    entries_.push_back(e);
    // The stale entries before head_ count: with churn (rows created, never
    // used again, dropped) they are nearly all the queue.
    if (entries_.size() > 2 * index_->size() + 1024) Compact();
  }

  // Records `slots`' accesses in order (Touch with `stamp`), prefetching.
  void TouchAll(absl::Span<const uint32_t> slots, int64_t stamp) {
    for (size_t i = 0; i < slots.size(); ++i) {
      if (i + kPrefetchAhead < slots.size()) {
        index_->Prefetch(slots[i + kPrefetchAhead]);
      }
      Touch(slots[i], stamp);
    }
  }

  // Calls visit(slot, stamp) for current entries, oldest first, until it
  // returns false; stale entries at the front are forgotten.
  template <typename F>
  void ForEachOldest(F visit) {
    while (head_ < entries_.size() && !Current(entries_[head_])) ++head_;
    for (size_t i = head_; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      if (Current(e) && !visit(e.slot, StampOf(e))) return;
    }
  }

  // Makes every entry of `slot` stale: the row is being dropped. Needed by
  // stamped queues, where a slot freed and reused within one stamp (the
  // capacity rule dropped its row, a new row took it in the same second)
  // has its old entry current again beside the new one, with the same
  // stamp: a walk must not return the slot twice.
  void Forget(uint32_t slot) { index_->set_tag(slot, tag_, 0); }

  // Current entries, oldest first, each slot once (at its oldest current
  // entry: where walks meet it; see Forget).
  EvictionOrder Order() const {
    EvictionOrder order;
    std::vector<bool> seen(index_->num_slots());
    for (size_t i = head_; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      if (!Current(e) || seen[e.slot]) continue;
      seen[e.slot] = true;
      order.slots.push_back(e.slot);
      order.stamps.push_back(StampOf(e));
    }
    return order;
  }

  void Clear() {
    entries_.clear();
    head_ = 0;
  }

  size_t size() const { return entries_.size(); }

 private:
  struct Sequenced {
    uint32_t slot;
    uint32_t seq;
  };
  struct Stamped {
    uint32_t slot;
    int64_t stamp;
  };
  using Entry = std::conditional_t<kStamped, Stamped, Sequenced>;

  // A stamp's tag: never 0 (a fresh record's) for stamps >= 0 below 2^32.
  static uint32_t Code(int64_t stamp) {
    return static_cast<uint32_t>(stamp) + 1;
  }
  static int64_t StampOf(const Entry& e) {
    if constexpr (kStamped) {
      return e.stamp;
    } else {
      return 0;
    }
  }
  bool Current(const Entry& e) const {
    if (!index_->live(e.slot)) return false;
    if constexpr (kStamped) {
      return index_->tag(e.slot, tag_) == Code(e.stamp);
    } else {
      return index_->tag(e.slot, tag_) == e.seq;
    }
  }
  // Keeps each live slot's newest entry, in order, in place (no
  // reallocation). That is a superset of the current entries: a current
  // entry is its slot's newest (a Touch that changes the tag appends), and
  // a newest entry that is not current (a reused slot whose new row's
  // OnCreate is still to come) stays filtered by Current() where entries
  // are read. Walking newest first with a bit per slot reads 1/8 byte per
  // slot where the former walk (keep the entries whose record tag matches)
  // read each entry's record: perf put ~70% of the capacity rule's time in
  // those reads; this walk cut the rule's share of sparse_table_bench's
  // samples from 2.6% to 1.5%. Compacting at 2x the live rows instead of
  // 1.5x halves the entries moved and cuts the entries walked by a third
  // per access (each compaction walks ~2 L entries every ~L appends, not
  // ~1.5 L every ~0.5 L), for 4 (capacity) or 8 (TTL) more bytes per row.
  void Compact() {
    // Live slots whose newest entry is still to come (a word-wise copy of
    // the liveness bits, so an entry costs one bit read, not two).
    std::vector<bool> unseen = index_->liveness();
    size_t kept = entries_.size();
    for (size_t i = entries_.size(); i-- > head_;) {
      const uint32_t slot = entries_[i].slot;
      if (slot >= unseen.size() || !unseen[slot]) continue;
      unseen[slot] = false;
      entries_[--kept] = entries_[i];
    }
    entries_.erase(entries_.begin(), entries_.begin() + kept);
    head_ = 0;
  }

  RowIndex* const index_;
  const int tag_;
  uint32_t seq_ = 0;
  std::vector<Entry> entries_;
  size_t head_ = 0;  // entries before it are stale
};

// Rows drop once `now` is more than `ttl` past the stamp of their last push,
// both in the unit `kUnit` picks out of a RowTime (a clock or seconds).
template <int64_t RowTime::*kUnit>
class TtlEviction final : public EvictionPolicy {
 public:
  TtlEviction(const char* name, int64_t ttl, RowIndex* index, int tag)
      : name_(name), ttl_(ttl), queue_(index, tag) {}

  const char* name() const override { return name_; }
  void OnCreate(absl::Span<const uint32_t> slots,
                const RowTime& now) override {
    queue_.TouchAll(slots, now.*kUnit);
  }
  void OnAccess(absl::Span<const uint32_t> slots, bool push,
                const RowTime& now) override {
    if (!push) return;  // only pushes (updates) refresh a row
    queue_.TouchAll(slots, now.*kUnit);
  }
  int64_t StampOf(const RowTime& t) const override { return t.*kUnit; }

  // Stamps grow with the queue (the table clock never goes back; a
  // request's second is when it arrived, and requests apply in arrival
  // order but for the few that wait or run on the executor), so the expired
  // rows are a run at the oldest end; an entry behind a newer one expires
  // with it, at most that reordering late.
  void Expired(const RowTime& now, uint64_t,
               std::vector<uint32_t>* out) override {
    const int64_t limit = now.*kUnit - ttl_;
    queue_.ForEachOldest([&](uint32_t slot, int64_t stamp) {
      if (stamp >= limit) return false;
      out->push_back(slot);
      queue_.Forget(slot);  // a duplicate entry further on is not current
      return true;
    });
  }

  EvictionOrder Export() const override {
    EvictionOrder order = queue_.Order();
    order.policy = name_;
    return order;
  }
  void Import(const EvictionOrder& order) override {
    queue_.Clear();
    for (size_t i = 0; i < order.slots.size(); ++i) {
      queue_.Touch(order.slots[i], order.stamps[i], /*force=*/true);
    }
  }
  size_t queued_entries() const override { return queue_.size(); }

 private:
  const char* const name_;
  const int64_t ttl_;
  AccessQueue<true> queue_;
};

class CapacityEviction final : public EvictionPolicy {
 public:
  CapacityEviction(uint64_t max_rows, RowIndex* index, int tag)
      : max_rows_(max_rows), queue_(index, tag) {}

  const char* name() const override { return "max_rows_per_shard"; }
  void OnCreate(absl::Span<const uint32_t> slots, const RowTime&) override {
    queue_.TouchAll(slots, 0);
  }
  void OnAccess(absl::Span<const uint32_t> slots, bool,
                const RowTime&) override {
    queue_.TouchAll(slots, 0);
  }
  int64_t StampOf(const RowTime&) const override { return 0; }

  void Expired(const RowTime&, uint64_t live_rows,
               std::vector<uint32_t>* out) override {
    uint64_t excess = live_rows > max_rows_ ? live_rows - max_rows_ : 0;
    if (excess == 0) return;
    queue_.ForEachOldest([&](uint32_t slot, int64_t) {
      out->push_back(slot);
      return --excess > 0;
    });
  }

  EvictionOrder Export() const override {
    EvictionOrder order = queue_.Order();
    order.policy = name();
    return order;
  }
  void Import(const EvictionOrder& order) override {
    queue_.Clear();
    for (uint32_t s : order.slots) queue_.Touch(s, 0);
  }
  size_t queued_entries() const override { return queue_.size(); }

 private:
  const uint64_t max_rows_;
  AccessQueue<false> queue_;
};

}  // namespace

int EvictionRuleCount(const EvictionConfig& config) {
  return (config.ttl_clocks > 0 ? 1 : 0) + (config.ttl_seconds > 0 ? 1 : 0) +
         (config.max_rows_per_shard > 0 ? 1 : 0);
}

std::vector<std::unique_ptr<EvictionPolicy>> CreateEvictionPolicies(
    const EvictionConfig& config, RowIndex* index) {
  std::vector<std::unique_ptr<EvictionPolicy>> policies;
  int tag = 0;
  if (config.ttl_clocks > 0) {
    policies.push_back(std::make_unique<TtlEviction<&RowTime::clock>>(
        "ttl_clocks", config.ttl_clocks, index, tag++));
  }
  if (config.ttl_seconds > 0) {
    policies.push_back(std::make_unique<TtlEviction<&RowTime::unix_seconds>>(
        "ttl_seconds", config.ttl_seconds, index, tag++));
  }
  if (config.max_rows_per_shard > 0) {
    policies.push_back(std::make_unique<CapacityEviction>(
        config.max_rows_per_shard, index, tag));
  }
  return policies;
}

}  // namespace ps
