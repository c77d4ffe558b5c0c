#include "server/rows/eviction.h"

#include <utility>

namespace ps {
namespace {

// Rows drop once `now` is more than `ttl` past the stamp of their last push,
// both in the unit `kUnit` picks out of a RowTime (a clock or seconds).
template <int64_t RowTime::*kUnit>
class TtlEviction final : public EvictionPolicy {
 public:
  TtlEviction(const char* name, int64_t ttl)
      : name_(name), ttl_(ttl), list_(/*with_stamps=*/true) {}

  const char* name() const override { return name_; }
  void OnCreate(uint32_t slot, const RowTime& now) override {
    list_.Touch(slot, now.*kUnit);
  }
  void OnPull(uint32_t, const RowTime&) override {}
  void OnPush(uint32_t slot, const RowTime& now) override {
    list_.Touch(slot, now.*kUnit);
  }
  void OnRemove(uint32_t slot) override { list_.Remove(slot); }
  int64_t StampOf(const RowTime& t) const override { return t.*kUnit; }

  void Expired(const RowTime& now, uint64_t,
               std::vector<uint32_t>* out) const override {
    // Stamps only grow toward the front (the table clock and wall-clock
    // seconds as sampled per request never go back), so the expired rows
    // are a run at the oldest end.
    for (uint32_t s = list_.Oldest();
         s != RecencyList::kNone && now.*kUnit - list_.stamp(s) > ttl_;
         s = list_.Newer(s)) {
      out->push_back(s);
    }
  }

  EvictionOrder Export() const override {
    EvictionOrder order;
    order.policy = name_;
    order.slots = list_.OldestFirst();
    for (uint32_t s : order.slots) order.stamps.push_back(list_.stamp(s));
    return order;
  }
  void Import(const EvictionOrder& order) override {
    list_.Clear();
    for (size_t i = 0; i < order.slots.size(); ++i) {
      list_.Touch(order.slots[i], order.stamps[i]);
    }
  }

 private:
  const char* const name_;
  const int64_t ttl_;
  RecencyList list_;
};

class CapacityEviction final : public EvictionPolicy {
 public:
  explicit CapacityEviction(uint64_t max_rows)
      : max_rows_(max_rows), list_(/*with_stamps=*/false) {}

  const char* name() const override { return "max_rows_per_shard"; }
  void OnCreate(uint32_t slot, const RowTime&) override {
    list_.Touch(slot, 0);
  }
  void OnPull(uint32_t slot, const RowTime&) override { list_.Touch(slot, 0); }
  void OnPush(uint32_t slot, const RowTime&) override { list_.Touch(slot, 0); }
  void OnRemove(uint32_t slot) override { list_.Remove(slot); }
  int64_t StampOf(const RowTime&) const override { return 0; }

  void Expired(const RowTime&, uint64_t live_rows,
               std::vector<uint32_t>* out) const override {
    uint64_t excess = live_rows > max_rows_ ? live_rows - max_rows_ : 0;
    for (uint32_t s = list_.Oldest(); s != RecencyList::kNone && excess > 0;
         s = list_.Newer(s), --excess) {
      out->push_back(s);
    }
  }

  EvictionOrder Export() const override {
    EvictionOrder order;
    order.policy = name();
    order.slots = list_.OldestFirst();
    order.stamps.assign(order.slots.size(), 0);
    return order;
  }
  void Import(const EvictionOrder& order) override {
    list_.Clear();
    for (uint32_t s : order.slots) list_.Touch(s, 0);
  }

 private:
  const uint64_t max_rows_;
  RecencyList list_;
};

}  // namespace

std::vector<std::unique_ptr<EvictionPolicy>> CreateEvictionPolicies(
    const EvictionConfig& config) {
  std::vector<std::unique_ptr<EvictionPolicy>> policies;
  if (config.ttl_clocks > 0) {
    policies.push_back(std::make_unique<TtlEviction<&RowTime::clock>>(
        "ttl_clocks", config.ttl_clocks));
  }
  if (config.ttl_seconds > 0) {
    policies.push_back(std::make_unique<TtlEviction<&RowTime::unix_seconds>>(
        "ttl_seconds", config.ttl_seconds));
  }
  if (config.max_rows_per_shard > 0) {
    policies.push_back(
        std::make_unique<CapacityEviction>(config.max_rows_per_shard));
  }
  return policies;
}

}  // namespace ps
