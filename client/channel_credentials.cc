#include "client/channel_credentials.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"

namespace ps {
namespace {

// A PEM file's content; an empty file is INVALID_ARGUMENT (gRPC would only
// fail later, with a less helpful handshake error).
absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        const char* what) {
  ASSIGN_OR_RETURN(std::string contents,
                   ReadFileToString(path, absl::StrCat("TLS ", what, " file")));
  if (contents.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS ", what, " file '", path, "' is empty"));
  }
  return contents;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(
    const TlsConfig& tls) {
  if (!tls.enabled) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  if (!tls.ca_file.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPemFile(tls.ca_file, "CA"));
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS client certificate and key must be given together (cert_file '" +
        tls.cert_file + "', key_file '" + tls.key_file + "')");
  }
  if (!tls.cert_file.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_cert_chain,
                     ReadPemFile(tls.cert_file, "certificate"));
    ASSIGN_OR_RETURN(ssl.pem_private_key, ReadPemFile(tls.key_file, "key"));
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace ps
