#include "server/rows/admission.h"

#include <memory>

#include "gtest/gtest.h"

namespace ps {
namespace {

// One push of `id` as the table performs it (`push_key`: the table's
// pushes before it); returns whether it admitted.
bool Push(AdmissionPolicy& policy, uint64_t id, uint64_t push_key = 0) {
  const bool admit = policy.WouldAdmit(id, push_key);
  policy.Record(id, admit);
  return admit;
}

TEST(AdmissionTest, DefaultAdmitsEverythingAndCreatesOnPull) {
  std::unique_ptr<AdmissionPolicy> p =
      CreateAdmissionPolicy(AdmissionConfig(), 1, 0);
  EXPECT_TRUE(p->CreatesOnPull());
  EXPECT_TRUE(Push(*p, 5));
  AdmissionConfig one;
  one.min_count = 1;
  EXPECT_TRUE(CreateAdmissionPolicy(one, 1, 0)->CreatesOnPull());
}

TEST(AdmissionTest, CountFilterAdmitsExactlyAtTheNthPush) {
  AdmissionConfig c;
  c.min_count = 3;
  std::unique_ptr<AdmissionPolicy> p = CreateAdmissionPolicy(c, 1, 0);
  EXPECT_FALSE(p->CreatesOnPull());
  EXPECT_FALSE(Push(*p, 9));
  EXPECT_FALSE(p->WouldAdmit(9, 1));  // deciding does not count
  EXPECT_FALSE(p->WouldAdmit(9, 1));
  EXPECT_FALSE(Push(*p, 9));
  EXPECT_FALSE(Push(*p, 4));
  EXPECT_EQ(p->pending(), 2u);
  EXPECT_GT(p->PendingBytes(), 0u);
  EXPECT_EQ(p->ExportCounts(),
            (std::vector<std::pair<uint64_t, uint32_t>>{{4, 1}, {9, 2}}));
  EXPECT_TRUE(Push(*p, 9));  // the third
  EXPECT_EQ(p->pending(), 1u);
  // Admitted ids are forgotten: counted from zero again after an eviction.
  EXPECT_FALSE(Push(*p, 9));
}

TEST(AdmissionTest, CountsSurviveExportAndImport) {
  AdmissionConfig c;
  c.min_count = 4;
  std::unique_ptr<AdmissionPolicy> a = CreateAdmissionPolicy(c, 1, 0);
  for (int i = 0; i < 3; ++i) Push(*a, 77);
  std::unique_ptr<AdmissionPolicy> b = CreateAdmissionPolicy(c, 1, 0);
  ASSERT_TRUE(b->ImportCounts(a->ExportCounts()).ok());
  EXPECT_TRUE(Push(*b, 77));
  EXPECT_EQ(b->ImportCounts({{1, 0}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b->ImportCounts({{1, 4}}).code(),
            absl::StatusCode::kInvalidArgument);
  // A policy that keeps no counts ignores them (the config changed).
  EXPECT_TRUE(CreateAdmissionPolicy(AdmissionConfig(), 1, 0)
                  ->ImportCounts({{1, 2}})
                  .ok());
}

TEST(AdmissionTest, ProbabilityAdmitsAboutThatFraction) {
  AdmissionConfig c;
  c.probability = 0.25f;
  std::unique_ptr<AdmissionPolicy> p = CreateAdmissionPolicy(c, 7, 1);
  EXPECT_FALSE(p->CreatesOnPull());
  int admitted = 0;
  constexpr int kIds = 40000;
  for (uint64_t id = 0; id < kIds; ++id) admitted += Push(*p, id) ? 1 : 0;
  // Binomial(40000, 0.25): sd 87; 6 sd.
  EXPECT_NEAR(admitted, kIds / 4, 520);
  EXPECT_EQ(p->pending(), 0u);
}

TEST(AdmissionTest, CountThenProbability) {
  AdmissionConfig c;
  c.min_count = 2;
  c.probability = 0.5f;
  std::unique_ptr<AdmissionPolicy> p = CreateAdmissionPolicy(c, 3, 0);
  int admitted_first = 0;
  int admitted_later = 0;
  uint64_t pushes = 0;  // the table's push count
  for (uint64_t id = 0; id < 4000; ++id) {
    admitted_first += Push(*p, id, ++pushes) ? 1 : 0;  // below the count
    for (int k = 0; k < 30; ++k) {
      if (Push(*p, id, ++pushes)) {
        ++admitted_later;
        break;
      }
    }
  }
  EXPECT_EQ(admitted_first, 0);
  EXPECT_EQ(admitted_later, 4000);  // 2^-30 chance per id of staying out
}

// What keeps replicas identical: a draw depends on (seed, shard, id, push
// key) only, not on the draws made before it (a backup that joined from a
// snapshot, or a restored server, has made none of them).
TEST(AdmissionTest, ProbabilityDrawIsAFunctionOfIdAndPushKeyOnly) {
  AdmissionConfig c;
  c.probability = 0.5f;
  std::unique_ptr<AdmissionPolicy> busy = CreateAdmissionPolicy(c, 7, 1);
  for (uint64_t id = 0; id < 1000; ++id) busy->WouldAdmit(id, id * 3);
  std::unique_ptr<AdmissionPolicy> fresh = CreateAdmissionPolicy(c, 7, 1);
  std::unique_ptr<AdmissionPolicy> other_shard = CreateAdmissionPolicy(c, 7, 2);
  int same = 0, same_other_shard = 0, admitted = 0, readmitted = 0;
  for (uint64_t id = 5000; id < 9000; ++id) {
    const bool a = busy->WouldAdmit(id, 42);
    same += a == fresh->WouldAdmit(id, 42) ? 1 : 0;
    same_other_shard += a == other_shard->WouldAdmit(id, 42) ? 1 : 0;
    admitted += a ? 1 : 0;
    // The next push of the same id draws anew.
    readmitted += a == busy->WouldAdmit(id, 43) ? 1 : 0;
  }
  EXPECT_EQ(same, 4000);
  // Independent draws agree half the time: Binomial(4000, 0.5), sd 32; 6 sd.
  EXPECT_NEAR(same_other_shard, 2000, 190);
  EXPECT_NEAR(readmitted, 2000, 190);
  EXPECT_NEAR(admitted, 2000, 190);
}

}  // namespace
}  // namespace ps
