#include "server/replication/etcd_options.h"

#include "client/channel_credentials.h"
#include "common/status_macros.h"

namespace ps::replication {

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> EtcdCredentials(
    const EtcdTlsConfig& tls) {
  TlsConfig channel;
  channel.enabled = tls.enabled;
  channel.ca_file = tls.ca_file;
  channel.cert_file = tls.cert_file;
  channel.key_file = tls.key_file;
  return ChannelCredentials(channel);
}

absl::StatusOr<EtcdClientOptions> EtcdClientOptionsFor(
    const ReplicationConfig& replication) {
  EtcdClientOptions options;
  options.endpoints = replication.etcd_endpoints;
  ASSIGN_OR_RETURN(options.credentials, EtcdCredentials(replication.etcd_tls));
  return options;
}

}  // namespace ps::replication
