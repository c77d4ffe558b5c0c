#include "server/replication/entry_tail.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ps::replication {
namespace {

Entry MakeEntry(uint64_t seq, int64_t term, size_t bytes = 10) {
  Entry e;
  e.set_seq(seq);
  e.set_term(term);
  e.set_data_request(std::string(bytes, 'x'));
  return e;
}

std::vector<uint64_t> Seqs(const std::vector<Entry>& entries) {
  std::vector<uint64_t> seqs;
  for (const Entry& e : entries) seqs.push_back(e.seq());
  return seqs;
}

TEST(EntryTailTest, ResumesAfterAMatchingEntryAcrossTerms) {
  EntryTail tail(1000);
  for (uint64_t s = 5; s <= 7; ++s) tail.Append(MakeEntry(s, 1));
  for (uint64_t s = 8; s <= 9; ++s) tail.Append(MakeEntry(s, 4));
  EXPECT_EQ(tail.newest_seq(), 9u);
  EXPECT_EQ(tail.newest_term(), 4);
  absl::StatusOr<std::vector<Entry>> after = tail.After(6, 1);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(Seqs(*after), (std::vector<uint64_t>{7, 8, 9}));
  after = tail.After(9, 4);  // caught up: nothing to send
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(after->empty());
}

TEST(EntryTailTest, RefusesAnotherHistoryAnAheadBackupAndForgottenEntries) {
  EntryTail tail(1000);
  for (uint64_t s = 5; s <= 9; ++s) tail.Append(MakeEntry(s, s < 8 ? 1 : 4));
  // Entry 8 of term 1: a deposed primary's, which this history replaced.
  absl::StatusOr<std::vector<Entry>> after = tail.After(8, 1);
  EXPECT_EQ(after.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(after.status().message().find("differs"), std::string::npos)
      << after.status();
  after = tail.After(10, 4);
  EXPECT_EQ(after.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(after.status().message().find("ahead"), std::string::npos);
  after = tail.After(4, 1);
  EXPECT_EQ(after.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(after.status().message().find("no longer holds entry 4"),
            std::string::npos);
}

TEST(EntryTailTest, KeepsTheNewestEntriesWithinItsBudgetAndRestartsOnAGap) {
  EntryTail tail(25);
  for (uint64_t s = 1; s <= 4; ++s) tail.Append(MakeEntry(s, 1));
  // 10 bytes each: entries 3 and 4 fit in 25 bytes.
  EXPECT_FALSE(tail.After(1, 1).ok());
  ASSERT_TRUE(tail.After(3, 1).ok());
  EXPECT_EQ(Seqs(*tail.After(3, 1)), (std::vector<uint64_t>{4}));
  tail.Append(MakeEntry(5, 1, 100));  // over the budget alone: still kept
  EXPECT_EQ(tail.newest_seq(), 5u);
  EXPECT_FALSE(tail.After(4, 1).ok());
  EXPECT_TRUE(tail.After(5, 1).ok());
  tail.Append(MakeEntry(9, 2));  // a gap: the tail starts over
  EXPECT_FALSE(tail.After(5, 1).ok());
  EXPECT_TRUE(tail.After(9, 2).ok());
  tail.Clear();
  EXPECT_TRUE(tail.empty());
}

TEST(EntryTailTest, ZeroBudgetKeepsNothing) {
  EntryTail tail(0);
  tail.Append(MakeEntry(1, 1));
  EXPECT_TRUE(tail.empty());
  EXPECT_FALSE(tail.After(1, 1).ok());
}

}  // namespace
}  // namespace ps::replication
