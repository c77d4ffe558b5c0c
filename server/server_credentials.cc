#include "server/server_credentials.h"

#include <string>

#include "common/file_util.h"
#include "common/status_macros.h"
#include "grpcpp/security/server_credentials.h"

namespace ps {

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const TlsConfig& tls) {
  if (!tls.enabled) return grpc::InsecureServerCredentials();
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "tls.enabled needs tls.cert_file and tls.key_file");
  }
  grpc::SslServerCredentialsOptions options(
      tls.require_client_cert
          ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
          : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  ASSIGN_OR_RETURN(std::string cert,
                   ReadFileToString(tls.cert_file, "tls.cert_file"));
  ASSIGN_OR_RETURN(std::string key,
                   ReadFileToString(tls.key_file, "tls.key_file"));
  if (!tls.ca_file.empty()) {
    ASSIGN_OR_RETURN(options.pem_root_certs,
                     ReadFileToString(tls.ca_file, "tls.ca_file"));
  } else if (tls.require_client_cert) {
    return absl::InvalidArgumentError(
        "tls.require_client_cert needs tls.ca_file");
  }
  options.pem_key_cert_pairs.push_back({key, cert});
  return grpc::SslServerCredentials(options);
}

}  // namespace ps
