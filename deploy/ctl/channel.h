// gRPC channels to the cluster's servers for ps_ctl's own RPCs (health
// probes, exports), with the cluster's client TLS settings.
//
// Thread safety: functions without shared state.
#ifndef PS_DEPLOY_CTL_CHANNEL_H_
#define PS_DEPLOY_CTL_CHANNEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/config.h"
#include "grpcpp/grpcpp.h"

namespace ps::ctl {

// A channel to `address` with `tls` (plaintext when disabled); one connect
// attempt is retried after 100 ms at most, so an unreachable server is
// reported quickly. NOT_FOUND / INVALID_ARGUMENT for unreadable or
// inconsistent TLS files.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(
    const std::string& address, const TlsConfig& tls);

// Adds "authorization: Bearer <token>" to `context` (nothing when empty).
void AddAuth(const std::string& token, grpc::ClientContext* context);

}  // namespace ps::ctl

#endif  // PS_DEPLOY_CTL_CHANNEL_H_
