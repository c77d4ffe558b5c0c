#include "deploy/ctl/health_probe.h"

#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "proto/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace ps::ctl {
namespace {

constexpr char kServiceName[] = "ps.proto.ParameterServer";

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(
    const TlsConfig& tls) {
  if (!tls.enabled) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  if (!tls.ca_file.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadFileToString(tls.ca_file, "tls.ca_file"));
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "tls.cert_file and tls.key_file must be given together");
  }
  if (!tls.cert_file.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_cert_chain,
                     ReadFileToString(tls.cert_file, "tls.cert_file"));
    ASSIGN_OR_RETURN(ssl.pem_private_key, ReadFileToString(tls.key_file, "tls.key_file"));
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace

absl::StatusOr<Health> ProbeHealth(const std::string& address,
                                   const TlsConfig& tls,
                                   absl::Duration timeout) {
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials,
                   Credentials(tls));
  grpc::ChannelArguments args;
  if (tls.enabled && !tls.server_name_override.empty()) {
    args.SetSslTargetNameOverride(tls.server_name_override);
  }
  // One attempt per probe: no reconnect backoff hiding the reason.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(address, credentials, args);
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
