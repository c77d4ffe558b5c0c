#include "proto/membership_error.h"

#include "absl/strings/cord.h"

namespace ps {

absl::Status MembershipErrorStatus(const proto::MembershipError& error,
                                   absl::string_view message) {
  absl::Status status = absl::FailedPreconditionError(message);
  status.SetPayload(kMembershipErrorUrl,
                    absl::Cord(error.SerializeAsString()));
  return status;
}

std::optional<proto::MembershipError> GetMembershipError(
    const absl::Status& status) {
  if (status.ok()) return std::nullopt;
  auto payload = status.GetPayload(kMembershipErrorUrl);
  if (!payload.has_value()) return std::nullopt;
  proto::MembershipError error;
  if (!error.ParseFromString(std::string(*payload))) return std::nullopt;
  return error;
}

std::string MembershipErrorDetails(const absl::Status& status) {
  if (status.ok()) return "";
  auto payload = status.GetPayload(kMembershipErrorUrl);
  return payload.has_value() ? std::string(*payload) : std::string();
}

absl::Status WithMembershipErrorDetails(absl::Status status,
                                        absl::string_view details) {
  if (status.ok() || details.empty()) return status;
  proto::MembershipError error;
  if (!error.ParseFromString(std::string(details)) ||
      error.state() == proto::MEMBERSHIP_MEMBER) {
    return status;
  }
  status.SetPayload(kMembershipErrorUrl, absl::Cord(std::string(details)));
  return status;
}

const char* MembershipStateName(proto::MembershipState state) {
  switch (state) {
    case proto::MEMBERSHIP_EVICTED:
      return "evicted";
    case proto::MEMBERSHIP_LEFT:
      return "left";
    case proto::MEMBERSHIP_REPLACED:
      return "replaced";
    case proto::MEMBERSHIP_OTHER_JOB:
      return "other_job";
    default:
      return "member";
  }
}

}  // namespace ps
