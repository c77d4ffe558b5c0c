#include "proto/membership_error.h"

#include "gtest/gtest.h"

namespace ps {
namespace {

TEST(MembershipErrorTest, RoundTripsThroughGrpcDetails) {
  proto::MembershipError error;
  error.set_state(proto::MEMBERSHIP_EVICTED);
  error.set_worker_id(3);
  error.set_current_step(57);
  error.set_job_id("job-a");
  const absl::Status status = MembershipErrorStatus(error, "worker 3 evicted");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "worker 3 evicted");

  // What the server sends as details comes back as the same payload.
  const std::string details = MembershipErrorDetails(status);
  ASSERT_FALSE(details.empty());
  const absl::Status received = WithMembershipErrorDetails(
      absl::FailedPreconditionError("annotated: worker 3 evicted"), details);
  std::optional<proto::MembershipError> parsed = GetMembershipError(received);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->state(), proto::MEMBERSHIP_EVICTED);
  EXPECT_EQ(parsed->worker_id(), 3u);
  EXPECT_EQ(parsed->current_step(), 57);
  EXPECT_EQ(parsed->job_id(), "job-a");
  EXPECT_STREQ(MembershipStateName(parsed->state()), "evicted");
}

TEST(MembershipErrorTest, OtherStatusesCarryNone) {
  EXPECT_FALSE(GetMembershipError(absl::OkStatus()).has_value());
  EXPECT_FALSE(
      GetMembershipError(absl::FailedPreconditionError("x")).has_value());
  EXPECT_EQ(MembershipErrorDetails(absl::InternalError("x")), "");
  // Details that are not a MembershipError are ignored.
  const absl::Status garbage =
      WithMembershipErrorDetails(absl::UnavailableError("x"), "\xff\xff");
  EXPECT_FALSE(GetMembershipError(garbage).has_value());
  EXPECT_EQ(WithMembershipErrorDetails(absl::OkStatus(), "abc"),
            absl::OkStatus());
}

}  // namespace
}  // namespace ps
