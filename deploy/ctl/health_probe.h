// gRPC health check of one server, as an operator tool needs it: fail fast,
// and say why a server cannot be reached.
//
// Thread safety: ProbeHealth is thread-safe (no shared state).
#ifndef PS_DEPLOY_CTL_HEALTH_PROBE_H_
#define PS_DEPLOY_CTL_HEALTH_PROBE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/config.h"

namespace ps::ctl {

enum class Health { kServing, kNotServing };

// Calls grpc.health.v1.Health/Check for "ps.proto.ParameterServer" on
// `address` with `tls` (the cluster's client TLS settings), failing fast on
// a refused connection and otherwise within `timeout`.
// Returns kServing / kNotServing (up, but starting or shutting down).
// Errors: UNAVAILABLE "server <address> is unreachable: <why>" (refused,
// unknown host, TLS failure, no answer within the timeout); NOT_FOUND /
// INVALID_ARGUMENT for unreadable TLS files.
absl::StatusOr<Health> ProbeHealth(const std::string& address,
                                   const TlsConfig& tls,
                                   absl::Duration timeout);

}  // namespace ps::ctl

#endif  // PS_DEPLOY_CTL_HEALTH_PROBE_H_
