#include "server/dedup_window.h"

#include "gtest/gtest.h"

namespace ps {
namespace {

using Verdict = DedupWindow::Verdict;

DedupWindow::Options Opts(int64_t window, int64_t max_clients = 100) {
  DedupWindow::Options o;
  o.window = window;
  o.idle_timeout = absl::Hours(1);
  o.max_clients = max_clients;
  return o;
}

TEST(DedupWindowTest, RecordedPushIsDuplicateWithItsOriginalAnswer) {
  DedupWindow w(Opts(8));
  const absl::Time t = absl::UnixEpoch();
  DedupWindow::Applied original;
  EXPECT_EQ(w.Check(42, 5, &original), Verdict::kNew);
  w.Record(42, {5, 17, 3}, t);
  ASSERT_EQ(w.Check(42, 5, &original), Verdict::kDuplicate);
  EXPECT_EQ(original.request_id, 5u);
  EXPECT_EQ(original.version, 17u);
  EXPECT_EQ(original.step, 3);
  // Another client's id 5 and this client's other ids are new.
  EXPECT_EQ(w.Check(43, 5, &original), Verdict::kNew);
  EXPECT_EQ(w.Check(42, 6, &original), Verdict::kNew);
  EXPECT_EQ(w.num_clients(), 1);
  EXPECT_EQ(w.num_entries(), 1);
}

TEST(DedupWindowTest, ClientZeroIsNeverDeduplicated) {
  DedupWindow w(Opts(8));
  w.Record(0, {5, 1, 0}, absl::UnixEpoch());
  DedupWindow::Applied original;
  EXPECT_EQ(w.Check(0, 5, &original), Verdict::kNew);
  EXPECT_EQ(w.num_clients(), 0);
}

TEST(DedupWindowTest, WindowKeepsNewestIdsAndRefusesOlderOnes) {
  DedupWindow w(Opts(3));
  for (uint64_t id = 1; id <= 5; ++id) w.Record(9, {id, id, 0}, absl::UnixEpoch());
  DedupWindow::Applied original;
  EXPECT_EQ(w.Check(9, 1, &original), Verdict::kTooOld);
  EXPECT_EQ(w.Check(9, 2, &original), Verdict::kTooOld);
  for (uint64_t id = 3; id <= 5; ++id) {
    ASSERT_EQ(w.Check(9, id, &original), Verdict::kDuplicate) << id;
    EXPECT_EQ(original.version, id);
  }
  EXPECT_EQ(w.Check(9, 6, &original), Verdict::kNew);
  EXPECT_EQ(w.num_entries(), 3);
}

TEST(DedupWindowTest, IdleClientsAreForgotten) {
  DedupWindow w(Opts(8));
  const absl::Time t0 = absl::UnixEpoch();
  w.Record(1, {10, 1, 0}, t0);
  w.Record(2, {20, 1, 0}, t0 + absl::Minutes(50));
  EXPECT_EQ(w.EvictIdle(t0 + absl::Minutes(59)), 0);
  EXPECT_EQ(w.EvictIdle(t0 + absl::Minutes(61)), 1);
  DedupWindow::Applied original;
  EXPECT_EQ(w.Check(1, 10, &original), Verdict::kNew);
  EXPECT_EQ(w.Check(2, 20, &original), Verdict::kDuplicate);
  EXPECT_EQ(w.num_clients(), 1);
  EXPECT_EQ(w.num_entries(), 1);
}

TEST(DedupWindowTest, AtMostMaxClientsLeastRecentlyUsedGoesFirst) {
  DedupWindow w(Opts(8, /*max_clients=*/2));
  const absl::Time t = absl::UnixEpoch();
  w.Record(1, {1, 1, 0}, t);
  w.Record(2, {1, 1, 0}, t);
  w.Record(1, {2, 2, 0}, t);  // client 1 used last
  w.Record(3, {1, 1, 0}, t);  // evicts client 2
  DedupWindow::Applied original;
  EXPECT_EQ(w.Check(1, 1, &original), Verdict::kDuplicate);
  EXPECT_EQ(w.Check(2, 1, &original), Verdict::kNew);
  EXPECT_EQ(w.Check(3, 1, &original), Verdict::kDuplicate);
  EXPECT_EQ(w.num_clients(), 2);
}

TEST(DedupWindowTest, ExportImportRoundTripAndShrink) {
  DedupWindow w(Opts(4));
  const absl::Time t = absl::UnixEpoch();
  for (uint64_t id = 1; id <= 6; ++id) w.Record(7, {id, id * 10, int64_t(id)}, t);
  w.Record(8, {100, 1, 2}, t);
  std::vector<DedupWindow::ClientWindow> exported = w.Export();
  ASSERT_EQ(exported.size(), 2u);
  EXPECT_EQ(exported[0].client_id, 7u);
  EXPECT_EQ(exported[0].max_evicted_id, 2u);
  ASSERT_EQ(exported[0].applied.size(), 4u);
  EXPECT_EQ(exported[0].applied[0].request_id, 3u);
  EXPECT_EQ(exported[0].applied[3].version, 60u);

  DedupWindow same(Opts(4));
  same.Import(exported, t);
  DedupWindow::Applied original;
  EXPECT_EQ(same.Check(7, 2, &original), Verdict::kTooOld);
  ASSERT_EQ(same.Check(7, 5, &original), Verdict::kDuplicate);
  EXPECT_EQ(original.step, 5);
  EXPECT_EQ(same.Check(8, 100, &original), Verdict::kDuplicate);
  EXPECT_EQ(same.num_entries(), 5);

  DedupWindow smaller(Opts(2));
  smaller.Import(exported, t);
  EXPECT_EQ(smaller.Check(7, 4, &original), Verdict::kTooOld);
  EXPECT_EQ(smaller.Check(7, 5, &original), Verdict::kDuplicate);
  EXPECT_EQ(smaller.num_entries(), 3);

  DedupWindow::DropFrom(&exported, [](const DedupWindow::Applied& a) {
    return a.step == 6;
  });
  ASSERT_EQ(exported[0].applied.size(), 3u);
  EXPECT_EQ(exported[0].applied.back().request_id, 5u);
}

}  // namespace
}  // namespace ps
