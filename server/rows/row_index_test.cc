#include "server/rows/row_index.h"

#include <random>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"
#include "server/rows/row_cost.h"

namespace ps {
namespace {

TEST(RowIndexTest, InsertFindRemoveReusesFreedSlotsLastFreedFirst) {
  RowIndex index;
  EXPECT_EQ(index.Find(7), RowIndex::kNoSlot);
  EXPECT_EQ(index.Insert(7), 0u);
  EXPECT_EQ(index.Insert(~uint64_t{0}), 1u);  // every uint64 is an id
  EXPECT_EQ(index.Insert(3), 2u);
  EXPECT_EQ(index.Find(~uint64_t{0}), 1u);
  index.Remove(0);
  index.Remove(2);
  EXPECT_FALSE(index.live(0));
  EXPECT_EQ(index.Find(7), RowIndex::kNoSlot);
  EXPECT_EQ(index.size(), 1u);
  EXPECT_EQ(index.num_slots(), 3u);
  EXPECT_EQ(index.num_free(), 2u);
  EXPECT_EQ(index.Insert(11), 2u);  // LIFO
  EXPECT_EQ(index.Insert(12), 0u);
  EXPECT_EQ(index.Insert(13), 3u);  // then a new slot
  EXPECT_EQ(index.id_at(2), 11u);
  EXPECT_EQ(index.Find(12), 0u);
}

TEST(RowIndexTest, AgreesWithAMapUnderRandomChurn) {
  RowIndex index;
  absl::flat_hash_map<uint64_t, uint32_t> reference;
  std::mt19937_64 rng(5);
  for (int step = 0; step < 200000; ++step) {
    const uint64_t id = rng() % 5000;
    const uint32_t slot = index.Find(id);
    auto it = reference.find(id);
    ASSERT_EQ(slot == RowIndex::kNoSlot, it == reference.end());
    if (it == reference.end()) {
      reference[id] = index.Insert(id);
    } else {
      ASSERT_EQ(slot, it->second);
      if (rng() % 2 == 0) {
        index.Remove(slot);
        reference.erase(it);
      }
    }
  }
  EXPECT_EQ(index.size(), reference.size());
  EXPECT_LE(index.num_slots(), 5000u);  // freed slots were reused
}

// The formula's index term (row_cost.h) bounds what the index holds at
// every size, right after each growth too.
TEST(RowIndexTest, AllocatedBytesStayWithinTheFormula) {
  RowIndex index;
  double worst = 0;
  for (uint64_t id = 0; id < 300000; ++id) {
    index.Insert(id * 7919);
    if (id >= 1000) {
      worst = std::max(worst, static_cast<double>(index.AllocatedBytes()) /
                                  static_cast<double>(index.size()));
    }
  }
  EXPECT_LE(worst, static_cast<double>(kIndexBytesPerRow));
  EXPECT_GE(worst, 13.0);
}

}  // namespace
}  // namespace ps
