#include "server/rows/eviction.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "server/rows/row_index.h"

namespace ps {
namespace {

// One rule over an index of `rows` live slots (ids 100 + slot).
struct Rule {
  Rule(const EvictionConfig& c, uint32_t rows) : index(EvictionRuleCount(c)) {
    std::vector<std::unique_ptr<EvictionPolicy>> all =
        CreateEvictionPolicies(c, &index);
    EXPECT_EQ(all.size(), 1u);
    policy = std::move(all[0]);
    for (uint32_t s = 0; s < rows; ++s) index.Insert(100 + s);
  }
  std::vector<uint32_t> ExpiredAt(RowTime t, uint64_t live = 0) {
    std::vector<uint32_t> out;
    policy->Expired(t, live, &out);
    return out;
  }
  RowIndex index;
  std::unique_ptr<EvictionPolicy> policy;
};

TEST(EvictionTest, OnePolicyPerRuleInAFixedOrder) {
  EXPECT_EQ(EvictionRuleCount(EvictionConfig()), 0);
  RowIndex none;
  EXPECT_TRUE(CreateEvictionPolicies(EvictionConfig(), &none).empty());
  EvictionConfig all;
  all.ttl_clocks = 1;
  all.ttl_seconds = 1;
  all.max_rows_per_shard = 1;
  RowIndex index(EvictionRuleCount(all));
  std::vector<std::unique_ptr<EvictionPolicy>> p =
      CreateEvictionPolicies(all, &index);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_STREQ(p[0]->name(), "ttl_clocks");
  EXPECT_STREQ(p[1]->name(), "ttl_seconds");
  EXPECT_STREQ(p[2]->name(), "max_rows_per_shard");
}

TEST(EvictionTest, TtlClocksDropsRowsNotPushedForMoreThanTClocks) {
  EvictionConfig c;
  c.ttl_clocks = 2;
  Rule r(c, 3);
  r.policy->OnCreate({0, 1}, {0, 0});
  r.policy->OnCreate({2}, {1, 0});
  r.policy->OnAccess({0}, true, {3, 0});   // row 0 refreshed at clock 3
  r.policy->OnAccess({1}, false, {3, 0});  // a pull does not refresh
  r.policy->OnAccess({0}, true, {3, 0});   // nor does a second push at 3
  EXPECT_EQ(r.ExpiredAt({2, 0}), std::vector<uint32_t>{});
  // Each slot returned is forgotten (the caller drops its row).
  EXPECT_EQ(r.ExpiredAt({3, 0}), std::vector<uint32_t>{1});
  EXPECT_EQ(r.ExpiredAt({3, 0}), std::vector<uint32_t>{});
  r.index.Remove(1);
  // A reused slot is a new row: its old accesses do not count.
  EXPECT_EQ(r.index.Insert(7), 1u);
  r.policy->OnCreate({1}, {5, 0});
  EXPECT_EQ(r.ExpiredAt({4, 0}), std::vector<uint32_t>{2});
  EXPECT_EQ(r.ExpiredAt({6, 0}), std::vector<uint32_t>{0});
  EXPECT_EQ(r.ExpiredAt({8, 0}), std::vector<uint32_t>{1});
}

// A slot whose row another rule dropped and that a new row took within the
// same stamp has two current-looking entries (same slot, same stamp): it is
// still ordered and returned once. (Returned twice, its row was dropped
// twice: the slot went to the free list twice and two ids shared it; a
// checkpoint's order listed more rows than the table held and its restore
// failed.)
TEST(EvictionTest, SlotReusedWithinOneStampIsOrderedAndReturnedOnce) {
  EvictionConfig c;
  c.ttl_seconds = 10;
  Rule r(c, 2);
  r.policy->OnCreate({0, 1}, {0, 1000});
  r.index.Remove(0);  // e.g. the capacity rule dropped it
  EXPECT_EQ(r.index.Insert(9), 0u);
  r.policy->OnCreate({0}, {0, 1000});
  EXPECT_EQ(r.policy->Export().slots, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(r.ExpiredAt({0, 1011}), (std::vector<uint32_t>{0, 1}));
}

TEST(EvictionTest, TtlSecondsUsesWallClockStamps) {
  EvictionConfig c;
  c.ttl_seconds = 10;
  Rule r(c, 6);
  r.policy->OnCreate({4}, {0, 1000});
  r.policy->OnCreate({5}, {0, 1005});
  EXPECT_EQ(r.ExpiredAt({0, 1010}), std::vector<uint32_t>{});
  EXPECT_EQ(r.ExpiredAt({0, 1011}), std::vector<uint32_t>{4});
  r.policy->OnAccess({4}, true, {0, 1011});
  EXPECT_EQ(r.ExpiredAt({0, 1016}), std::vector<uint32_t>{5});
}

TEST(EvictionTest, CapacityDropsLeastRecentlyUsedBeyondTheLimit) {
  EvictionConfig c;
  c.max_rows_per_shard = 3;
  Rule r(c, 5);
  r.policy->OnCreate({0, 1, 2, 3, 4}, {});
  r.policy->OnAccess({0}, false, {});
  r.policy->OnAccess({2}, true, {});
  // Recency, oldest first: 1, 3, 4, 0, 2.
  EXPECT_EQ(r.ExpiredAt({}, 5), (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(r.ExpiredAt({}, 3), std::vector<uint32_t>{});
}

TEST(EvictionTest, ExactOrderSurvivesManyAccessesAndCompactions) {
  EvictionConfig c;
  c.max_rows_per_shard = 1;
  constexpr uint32_t kRows = 50;
  Rule r(c, kRows);
  std::vector<uint32_t> order;  // reference LRU, oldest first
  for (uint32_t s = 0; s < kRows; ++s) {
    r.policy->OnCreate({s}, {});
    order.push_back(s);
  }
  uint64_t x = 1;
  for (int i = 0; i < 20000; ++i) {  // many times the compaction threshold
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const uint32_t s = static_cast<uint32_t>((x >> 33) % kRows);
    r.policy->OnAccess({s}, false, {});
    order.erase(std::find(order.begin(), order.end(), s));
    order.push_back(s);
  }
  EXPECT_EQ(r.policy->Export().slots, order);
  std::vector<uint32_t> victims = r.ExpiredAt({}, kRows);
  EXPECT_EQ(victims, std::vector<uint32_t>(order.begin(), order.end() - 1));
}

// Compactions meet dropped slots (their entries must go) and slots reused by
// new rows (only the new row's entries count), as a table at its capacity
// does: every step accesses a few rows, creates one and drops the victim.
TEST(EvictionTest, ExactOrderWithDropsAndReusedSlotsAcrossCompactions) {
  EvictionConfig c;
  constexpr uint32_t kRows = 64;
  c.max_rows_per_shard = kRows;
  Rule r(c, kRows);
  std::vector<uint32_t> order;  // reference LRU of live slots, oldest first
  for (uint32_t s = 0; s < kRows; ++s) {
    r.policy->OnCreate({s}, {});
    order.push_back(s);
  }
  auto touch = [&order](uint32_t s) {
    order.erase(std::find(order.begin(), order.end(), s));
    order.push_back(s);
  };
  uint64_t x = 7;
  uint64_t next_id = 1000;
  // Each step accesses the 8 most recent rows 30 times and one row at
  // random, so the other rows age out in order, ~56 steps (1700 entries)
  // after their last access: the queue past its head outgrows the
  // compaction threshold (2 x 64 + 1024) again and again.
  for (int i = 0; i < 2000; ++i) {
    for (int k = 0; k <= 30; ++k) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const uint32_t s = k < 30 ? order[kRows - 1 - (x >> 33) % 8]
                                : order[(x >> 33) % kRows];
      r.policy->OnAccess({s}, false, {});
      touch(s);
    }
    const uint32_t slot = r.index.Insert(next_id++);  // one row over: M + 1
    r.policy->OnCreate({slot}, {});
    order.push_back(slot);
    const std::vector<uint32_t> victims = r.ExpiredAt({}, kRows + 1);
    ASSERT_EQ(victims, std::vector<uint32_t>{order.front()}) << "step " << i;
    r.index.Remove(victims[0]);
    order.erase(order.begin());
  }
  EXPECT_EQ(r.policy->Export().slots, order);
}

// Rows that are created, never used again and dropped (churn) leave only
// stale entries in front of the queue's head: they must be compacted away
// too, or the queue grows with every row ever created.
TEST(EvictionTest, ChurnKeepsEachQueueWithinItsBound) {
  constexpr uint64_t kLive = 100;
  EvictionConfig capacity;
  capacity.max_rows_per_shard = kLive;
  EvictionConfig ttl;
  ttl.ttl_clocks = 1;
  for (const EvictionConfig& c : {capacity, ttl}) {
    Rule r(c, 0);
    std::vector<uint32_t> live;
    uint64_t next_id = 1;
    size_t most = 0;       // entries queued
    size_t most_rows = 0;  // rows live at once (before a step's drops)
    for (int64_t clock = 1; clock <= 2000; ++clock) {
      // Capacity: 50 new rows a step, the 50 oldest dropped beyond kLive.
      // TTL: 50 new rows a clock, each dropped 2 clocks later.
      std::vector<uint32_t> created;
      for (int k = 0; k < 50; ++k) created.push_back(r.index.Insert(next_id++));
      r.policy->OnCreate(created, {clock, 0});
      most_rows = std::max(most_rows, r.index.size());
      const std::vector<uint32_t> dropped =
          r.ExpiredAt({clock, 0}, r.index.size());
      for (uint32_t s : dropped) r.index.Remove(s);
      most = std::max(most, r.policy->queued_entries());
    }
    EXPECT_LE(r.index.size(), kLive) << r.policy->name();
    // eviction.h, row_cost.h: 2 entries per row + 1025 (before the fix:
    // one per row ever created, 100,000).
    EXPECT_LE(most, 2 * most_rows + 1025) << r.policy->name();
  }
}

TEST(EvictionTest, OrderSurvivesExportAndImport) {
  EvictionConfig c;
  c.ttl_clocks = 1;
  Rule a(c, 4);
  a.policy->OnCreate({3}, {5, 0});
  a.policy->OnCreate({1}, {6, 0});
  a.policy->OnAccess({3}, true, {7, 0});
  const EvictionOrder order = a.policy->Export();
  EXPECT_EQ(order.policy, "ttl_clocks");
  EXPECT_EQ(order.slots, (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(order.stamps, (std::vector<int64_t>{6, 7}));
  Rule b(c, 4);
  b.policy->Import(order);
  EXPECT_EQ(b.ExpiredAt({8, 0}), std::vector<uint32_t>{1});
}

}  // namespace
}  // namespace ps
