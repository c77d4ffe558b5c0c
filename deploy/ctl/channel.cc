#include "deploy/ctl/channel.h"

#include "common/file_util.h"
#include "common/status_macros.h"

namespace ps::ctl {
namespace {

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(
    const TlsConfig& tls) {
  if (!tls.enabled) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  if (!tls.ca_file.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs,
                     ReadFileToString(tls.ca_file, "tls.ca_file"));
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "tls.cert_file and tls.key_file must be given together");
  }
  if (!tls.cert_file.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_cert_chain,
                     ReadFileToString(tls.cert_file, "tls.cert_file"));
    ASSIGN_OR_RETURN(ssl.pem_private_key,
                     ReadFileToString(tls.key_file, "tls.key_file"));
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(
    const std::string& address, const TlsConfig& tls) {
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials,
                   Credentials(tls));
  grpc::ChannelArguments args;
  if (tls.enabled && !tls.server_name_override.empty()) {
    args.SetSslTargetNameOverride(tls.server_name_override);
  }
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetMaxReceiveMessageSize(-1);  // export chunks are bounded server-side
  return grpc::CreateCustomChannel(address, credentials, args);
}

void AddAuth(const std::string& token, grpc::ClientContext* context) {
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
}

}  // namespace ps::ctl
