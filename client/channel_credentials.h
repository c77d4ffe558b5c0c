// The gRPC channel credentials a cluster config's `tls:` section asks for,
// for every process that connects to a ps_server: clients (ServerConnection)
// and backups following their primary (replication::ReplicaNode).
//
// Thread safety: a stateless function.
#ifndef PS_CLIENT_CHANNEL_CREDENTIALS_H_
#define PS_CLIENT_CHANNEL_CREDENTIALS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "common/client_config.h"
#include "grpcpp/security/credentials.h"

namespace ps {

// Insecure credentials when TLS is off; else TLS verifying the server
// against tls.ca_file (the system roots when empty), presenting
// tls.cert_file / tls.key_file as this process's certificate when set (for
// servers with tls.require_client_cert). INVALID_ARGUMENT when only one of
// cert_file / key_file is set or a file is empty; the file reader's error
// (NOT_FOUND, naming the file) when one cannot be read. The expected server
// name (tls.server_name_override) is a channel argument: set it with
// grpc::ChannelArguments::SetSslTargetNameOverride.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(
    const TlsConfig& tls);

}  // namespace ps

#endif  // PS_CLIENT_CHANNEL_CREDENTIALS_H_
