// How every process of a replicated cluster reaches etcd: the config's
// replication.etcd_endpoints and, with replication.etcd_tls, TLS (the
// servers, clients following the primary, ps_launch and ps_ctl alike).
//
// Thread safety: stateless functions.
#ifndef PS_SERVER_REPLICATION_ETCD_OPTIONS_H_
#define PS_SERVER_REPLICATION_ETCD_OPTIONS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "common/config.h"
#include "grpcpp/grpcpp.h"
#include "server/replication/etcd_client.h"

namespace ps::replication {

// Credentials for etcd's client URLs: TLS verifying etcd's certificate
// against tls.ca_file (with a client certificate when one is set) when
// tls.enabled, else plaintext. The files are read now: NOT_FOUND /
// INVALID_ARGUMENT naming a missing or empty file.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> EtcdCredentials(
    const EtcdTlsConfig& tls);

// EtcdClientOptions with `replication`'s endpoints and credentials (the
// other fields at their defaults). Errors: EtcdCredentials's.
absl::StatusOr<EtcdClientOptions> EtcdClientOptionsFor(
    const ReplicationConfig& replication);

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_ETCD_OPTIONS_H_
