#include "deploy/ctl/health_probe.h"

#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "deploy/ctl/channel.h"
#include "common/status_macros.h"
#include "proto/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace ps::ctl {
namespace {

constexpr char kServiceName[] = "ps.proto.ParameterServer";

}  // namespace

absl::StatusOr<Health> ProbeHealth(const std::string& address,
                                   const TlsConfig& tls,
                                   absl::Duration timeout) {
  // One attempt per probe: no reconnect backoff hiding the reason.
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                   MakeChannel(address, tls));
  std::unique_ptr<grpc::health::v1::Health::Stub> stub =
      grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  // Fail fast (the default): a refused connection is an error at once.
  context.set_wait_for_ready(false);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(kServiceName);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) {
    std::string why = status.error_message();
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      why = absl::StrCat("no answer within ", absl::FormatDuration(timeout));
    }
    return absl::UnavailableError(
        absl::StrCat("server ", address, " is unreachable: ", why));
  }
  return response.status() ==
                 grpc::health::v1::HealthCheckResponse::SERVING
             ? Health::kServing
             : Health::kNotServing;
}

}  // namespace ps::ctl
