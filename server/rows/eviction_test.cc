#include "server/rows/eviction.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace ps {
namespace {

std::unique_ptr<EvictionPolicy> Only(const EvictionConfig& c) {
  std::vector<std::unique_ptr<EvictionPolicy>> all = CreateEvictionPolicies(c);
  EXPECT_EQ(all.size(), 1u);
  return std::move(all[0]);
}

std::vector<uint32_t> ExpiredAt(const EvictionPolicy& p, RowTime t,
                                uint64_t live = 0) {
  std::vector<uint32_t> out;
  p.Expired(t, live, &out);
  return out;
}

TEST(EvictionTest, NoRulesNoPolicies) {
  EXPECT_TRUE(CreateEvictionPolicies(EvictionConfig()).empty());
  EvictionConfig all;
  all.ttl_clocks = 1;
  all.ttl_seconds = 1;
  all.max_rows_per_shard = 1;
  std::vector<std::unique_ptr<EvictionPolicy>> p = CreateEvictionPolicies(all);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_STREQ(p[0]->name(), "ttl_clocks");
  EXPECT_STREQ(p[1]->name(), "ttl_seconds");
  EXPECT_STREQ(p[2]->name(), "max_rows_per_shard");
}

TEST(EvictionTest, TtlClocksDropsRowsNotPushedForMoreThanTClocks) {
  EvictionConfig c;
  c.ttl_clocks = 2;
  std::unique_ptr<EvictionPolicy> p = Only(c);
  p->OnCreate(0, {0, 0});
  p->OnCreate(1, {0, 0});
  p->OnCreate(2, {1, 0});
  p->OnPush(0, {3, 0});  // row 0 refreshed at clock 3
  p->OnPull(1, {3, 0});  // a pull does not refresh
  EXPECT_EQ(ExpiredAt(*p, {2, 0}), std::vector<uint32_t>{});
  EXPECT_EQ(ExpiredAt(*p, {3, 0}), std::vector<uint32_t>{1});
  EXPECT_EQ(ExpiredAt(*p, {4, 0}), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(ExpiredAt(*p, {6, 0}), (std::vector<uint32_t>{1, 2, 0}));
  p->OnRemove(1);
  EXPECT_EQ(ExpiredAt(*p, {4, 0}), std::vector<uint32_t>{2});
}

TEST(EvictionTest, TtlSecondsUsesWallClockStamps) {
  EvictionConfig c;
  c.ttl_seconds = 10;
  std::unique_ptr<EvictionPolicy> p = Only(c);
  p->OnCreate(4, {0, 1000});
  p->OnCreate(5, {0, 1005});
  EXPECT_EQ(ExpiredAt(*p, {0, 1010}), std::vector<uint32_t>{});
  EXPECT_EQ(ExpiredAt(*p, {0, 1011}), std::vector<uint32_t>{4});
  p->OnPush(4, {0, 1011});
  EXPECT_EQ(ExpiredAt(*p, {0, 1016}), std::vector<uint32_t>{5});
}

TEST(EvictionTest, CapacityDropsLeastRecentlyUsedBeyondTheLimit) {
  EvictionConfig c;
  c.max_rows_per_shard = 3;
  std::unique_ptr<EvictionPolicy> p = Only(c);
  for (uint32_t s = 0; s < 5; ++s) p->OnCreate(s, {});
  p->OnPull(0, {});
  p->OnPush(2, {});
  // Recency, oldest first: 1, 3, 4, 0, 2.
  EXPECT_EQ(ExpiredAt(*p, {}, 5), (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(ExpiredAt(*p, {}, 3), std::vector<uint32_t>{});
}

TEST(EvictionTest, OrderSurvivesExportAndImport) {
  EvictionConfig c;
  c.ttl_clocks = 1;
  std::unique_ptr<EvictionPolicy> a = Only(c);
  a->OnCreate(3, {5, 0});
  a->OnCreate(1, {6, 0});
  a->OnPush(3, {7, 0});
  const EvictionOrder order = a->Export();
  EXPECT_EQ(order.policy, "ttl_clocks");
  EXPECT_EQ(order.slots, (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(order.stamps, (std::vector<int64_t>{6, 7}));
  std::unique_ptr<EvictionPolicy> b = Only(c);
  b->Import(order);
  EXPECT_EQ(ExpiredAt(*b, {8, 0}), std::vector<uint32_t>{1});
}

}  // namespace
}  // namespace ps
