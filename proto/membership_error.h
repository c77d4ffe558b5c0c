// A worker's call refused because it is not a member of the job (evicted,
// left, replaced by another process, or the shard serves another job):
// FAILED_PRECONDITION with a proto::MembershipError as the status' payload.
// The server produces it (server/worker_registry.h), the gRPC edge sends the
// payload as the status' binary error details, and the client SDK turns it
// back into a payload that trainers read (ps::MembershipRefusalOf in
// client/client.h). One home for the encoding on both sides.
//
// Thread safety: free functions, no shared state.
#ifndef PS_PROTO_MEMBERSHIP_ERROR_H_
#define PS_PROTO_MEMBERSHIP_ERROR_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/ps.pb.h"

namespace ps {

// The payload's type URL (absl::Status::SetPayload).
inline constexpr char kMembershipErrorUrl[] =
    "type.googleapis.com/ps.proto.MembershipError";

// FAILED_PRECONDITION with `message` and `error` as payload.
absl::Status MembershipErrorStatus(const proto::MembershipError& error,
                                   absl::string_view message);

// The payload of `status`, or nullopt (OK, another error, or no payload).
std::optional<proto::MembershipError> GetMembershipError(
    const absl::Status& status);

// The serialized payload ("" when there is none): a gRPC status' binary
// error details.
std::string MembershipErrorDetails(const absl::Status& status);

// `status` with the payload parsed from gRPC error `details` attached; a
// status without details, or details that are no MembershipError, come back
// unchanged.
absl::Status WithMembershipErrorDetails(absl::Status status,
                                        absl::string_view details);

// "evicted", "left", "replaced", "other_job" or "member".
const char* MembershipStateName(proto::MembershipState state);

}  // namespace ps

#endif  // PS_PROTO_MEMBERSHIP_ERROR_H_
