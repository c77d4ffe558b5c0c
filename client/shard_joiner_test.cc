#include "client/shard_joiner.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/membership_error.h"

namespace ps {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::shared_ptr<const std::vector<std::string>> Addresses() {
  return std::make_shared<const std::vector<std::string>>(
      std::vector<std::string>{"h:1", "h:2", "h:3"});
}

TEST(ShardJoinerTest, CompletesOkWhenEveryRequestSucceeds) {
  Promise promise;
  auto joiner = ShardJoiner::Create(3, promise.state,
                                    {proto::PUSH, "w", Addresses()});
  proto::DataResponse ok;
  joiner->Done(0, absl::OkStatus(), &ok);
  joiner->Done(1, absl::OkStatus(), &ok);
  EXPECT_FALSE(promise.future().Ready());
  joiner->Done(1, absl::OkStatus(), &ok);
  ASSERT_TRUE(promise.future().Ready());
  EXPECT_TRUE(promise.future().Wait().ok());
}

TEST(ShardJoinerTest, PartialPushNamesTheShardsThatAppliedIt) {
  Promise promise;
  auto joiner = ShardJoiner::Create(4, promise.state,
                                    {proto::PUSH, "w", Addresses()});
  proto::DataResponse ok;
  joiner->Done(0, absl::OkStatus(), &ok);
  // Shard 1 never answered (connection gave up); shard 2 refused.
  joiner->Done(1, absl::UnavailableError("server h:2 unreachable"), nullptr);
  proto::DataResponse refused;
  refused.set_status_code(9);
  joiner->Done(2, absl::FailedPreconditionError("no"), &refused);
  joiner->Done(0, absl::OkStatus(), &ok);
  const absl::Status s = promise.future().Wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "push to table 'w' was applied on shard(s) 0 (h:1); refused (not "
            "applied) by shard(s) 2 (h:3); no answer from shard(s) 1 (h:2) "
            "after the reconnect attempts (applied or not: unknown): server "
            "h:2 unreachable");
  std::optional<PushOutcome> outcome = PushOutcomeOf(s);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_THAT(outcome->applied, ElementsAre(0));
  EXPECT_THAT(outcome->not_applied, ElementsAre(2));
  EXPECT_THAT(outcome->unknown, ElementsAre(1));
}

TEST(ShardJoinerTest, PushFailingEverywhereKeepsItsMessageAndCarriesOutcome) {
  Promise promise;
  auto joiner = ShardJoiner::Create(2, promise.state,
                                    {proto::PUSH, "w", Addresses()});
  proto::DataResponse refused;
  refused.set_membership(proto::MEMBERSHIP_EVICTED);
  refused.set_step(12);
  joiner->Done(0, absl::FailedPreconditionError("worker 1 was evicted"),
               &refused);
  joiner->Done(1, absl::FailedPreconditionError("worker 1 was evicted"),
               &refused);
  const absl::Status s = promise.future().Wait();
  EXPECT_EQ(s.message(), "worker 1 was evicted");
  std::optional<proto::MembershipError> error = GetMembershipError(s);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->state(), proto::MEMBERSHIP_EVICTED);
  EXPECT_EQ(error->current_step(), 12);
  std::optional<PushOutcome> outcome = PushOutcomeOf(s);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_THAT(outcome->applied, IsEmpty());
  EXPECT_THAT(outcome->not_applied, ElementsAre(0, 1));
}

TEST(ShardJoinerTest, PullsKeepTheFirstErrorAndNoOutcome) {
  Promise promise;
  auto joiner = ShardJoiner::Create(2, promise.state,
                                    {proto::PULL, "w", Addresses()});
  proto::DataResponse ok;
  joiner->Done(0, absl::OkStatus(), &ok);
  joiner->Done(1, absl::OutOfRangeError("range"), &ok);
  const absl::Status s = promise.future().Wait();
  EXPECT_EQ(s, absl::OutOfRangeError("range"));
  EXPECT_FALSE(PushOutcomeOf(s).has_value());
  EXPECT_FALSE(PushOutcomeOf(absl::OkStatus()).has_value());
  EXPECT_THAT(std::string(s.message()), HasSubstr("range"));
}

// The single-request fast path fails exactly like a joiner of one request.
TEST(ShardJoinerTest, SingleRequestCompletionFailsLikeAJoinerOfOne) {
  proto::DataResponse refused;
  refused.set_status_code(9);
  refused.set_membership(proto::MEMBERSHIP_EVICTED);
  refused.set_step(7);
  const absl::Status error = absl::FailedPreconditionError("evicted");
  Promise via_joiner;
  ShardJoiner::Create(1, via_joiner.state, {proto::PUSH, "w", Addresses()})
      ->Done(2, error, &refused);
  Promise via_completion;
  const ShardJoiner::Completion completion(1, via_completion.state,
                                           {proto::PUSH, "w", Addresses()});
  completion.Done(2, error, &refused);
  ASSERT_TRUE(via_completion.future().Ready());
  const absl::Status expected = via_joiner.future().Wait();
  const absl::Status got = via_completion.future().Wait();
  EXPECT_EQ(got, expected);  // code, message and every payload
  EXPECT_TRUE(PushOutcomeOf(got).has_value());
  EXPECT_TRUE(got.GetPayload(kMembershipErrorUrl).has_value());
}

TEST(ShardJoinerTest, SingleRequestCompletionSucceedsWithoutAJoiner) {
  Promise promise;
  const ShardJoiner::Completion completion(1, promise.state,
                                           {proto::PULL, "w", Addresses()});
  proto::DataResponse ok;
  completion.Done(0, absl::OkStatus(), &ok);
  ASSERT_TRUE(promise.future().Ready());
  EXPECT_TRUE(promise.future().Wait().ok());
}

TEST(ShardJoinerTest, CompletionOfSeveralRequestsWaitsForAll) {
  Promise promise;
  const ShardJoiner::Completion completion(2, promise.state,
                                           {proto::PULL, "w", Addresses()});
  proto::DataResponse ok;
  completion.Done(0, absl::OkStatus(), &ok);
  EXPECT_FALSE(promise.future().Ready());
  completion.Done(1, absl::OkStatus(), &ok);
  ASSERT_TRUE(promise.future().Ready());
  EXPECT_TRUE(promise.future().Wait().ok());
}

}  // namespace
}  // namespace ps
