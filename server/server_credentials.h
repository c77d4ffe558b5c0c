// The gRPC server credentials a cluster config's `tls:` section asks for.
//
// Thread safety: a stateless function.
#ifndef PS_SERVER_SERVER_CREDENTIALS_H_
#define PS_SERVER_SERVER_CREDENTIALS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "common/config.h"
#include "grpcpp/security/server_credentials.h"

namespace ps {

// Insecure credentials when TLS is off; else TLS with tls.cert_file and
// tls.key_file (PEM), and with tls.require_client_cert mutual TLS, peers
// verified against tls.ca_file. INVALID_ARGUMENT when a file the settings
// need is not named; the file reader's error (NOT_FOUND, naming the key and
// path) when one cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const TlsConfig& tls);

}  // namespace ps

#endif  // PS_SERVER_SERVER_CREDENTIALS_H_
