#include "deploy/launcher/stall_detector.h"

#include "gtest/gtest.h"

namespace ps::launcher {
namespace {

std::vector<int> Workers(const StallDetector::Verdict& v) {
  std::vector<int> out;
  for (const StallDetector::Stalled& s : v.stalled) out.push_back(s.worker);
  return out;
}

TEST(StallDetectorTest, ReportsSilentWorkersOnceThenEveryPeriodAndFails) {
  StallDetector d(/*report_after_s=*/10, /*fail_after_s=*/35);
  d.Progress(0, 0);
  d.Progress(1, 0);
  EXPECT_TRUE(d.Check(9.9).stalled.empty());
  d.Progress(0, 9);  // worker 0 goes on, worker 1 is silent
  StallDetector::Verdict v = d.Check(10);
  EXPECT_EQ(Workers(v), std::vector<int>{1});
  EXPECT_DOUBLE_EQ(v.stalled[0].silent_s, 10);
  EXPECT_TRUE(v.report);
  EXPECT_FALSE(v.fail);
  v = d.Check(15);  // the same stall, reported 5 s ago
  EXPECT_EQ(Workers(v), std::vector<int>{1});
  EXPECT_FALSE(v.report);
  v = d.Check(19.5);  // worker 0 newly stalled: report again at once
  EXPECT_EQ(Workers(v), (std::vector<int>{0, 1}));
  EXPECT_TRUE(v.report);
  EXPECT_FALSE(d.Check(25).report);
  EXPECT_TRUE(d.Check(29.5).report);  // report_after_s since the last one
  v = d.Check(35);
  EXPECT_TRUE(v.fail);
  EXPECT_DOUBLE_EQ(v.stalled[1].silent_s, 35);
}

TEST(StallDetectorTest, ForgottenWorkersAndNoFailLimit) {
  StallDetector d(/*report_after_s=*/1, /*fail_after_s=*/0);
  d.Progress(3, 0);
  d.Forget(3);  // exited
  EXPECT_TRUE(d.Check(100).stalled.empty());
  d.Progress(3, 100);  // restarted
  StallDetector::Verdict v = d.Check(1000);
  EXPECT_EQ(Workers(v), std::vector<int>{3});
  EXPECT_FALSE(v.fail);
  d.Progress(3, 1000);
  EXPECT_TRUE(d.Check(1000.5).stalled.empty());
  EXPECT_TRUE(d.Check(1001).report);  // a new stall after recovering
}

}  // namespace
}  // namespace ps::launcher
