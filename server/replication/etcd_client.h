// A small client for etcd's v3 API over gRPC (the subset in etcdpb/): unary
// KV / Lease / Maintenance calls with deadlines and statuses, and the stubs
// for the streaming calls (Watch, LeaseKeepAlive) that Lease and ElectionView
// drive themselves.
//
// Errors: every call returns UNAVAILABLE "etcd <target>: <what>: <grpc
// message>" when etcd cannot be reached or did not answer within the call's
// timeout (retry later), and etcd's own code otherwise (e.g. NOT_FOUND for a
// LeaseRevoke of an unknown lease, INVALID_ARGUMENT for a bad request).
//
// Thread safety: all methods are thread-safe (gRPC stubs are).
#ifndef PS_SERVER_REPLICATION_ETCD_CLIENT_H_
#define PS_SERVER_REPLICATION_ETCD_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/replication/etcdpb/rpc.grpc.pb.h"

namespace ps::replication {

struct EtcdClientOptions {
  // host:port of each etcd member's client URL. The channel picks the
  // first that answers and moves on when it fails.
  std::vector<std::string> endpoints;
  // TLS (https client URLs) or plaintext when null (EtcdCredentials in
  // etcd_options.h makes them from a config).
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // Deadline of each unary call. Default 2 s.
  absl::Duration call_timeout = absl::Seconds(2);
  // gRPC keepalive pings on the connection, so that a watch on a dead or
  // partitioned etcd fails instead of hanging. etcd refuses pings more often
  // than its --grpc-keepalive-min-time (default 5 s; LocalEtcd sets 500 ms),
  // so keep this at or above it. Default 5 s; 0 disables.
  absl::Duration keepalive_time = absl::Seconds(5);
  // Longest wait between reconnect attempts after etcd went away (gRPC's own
  // default, 120 s, would delay recovery by minutes). Default 1 s.
  absl::Duration max_reconnect_backoff = absl::Seconds(1);
};

class EtcdClient {
 public:
  // INVALID_ARGUMENT when `endpoints` is empty or an endpoint is not
  // host:port. Does not connect (the first call does).
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Create(
      const EtcdClientOptions& options);

  // The gRPC target, e.g. "ipv4:127.0.0.1:2379,127.0.0.1:22379".
  const std::string& target() const { return target_; }
  const EtcdClientOptions& options() const { return options_; }

  // Maintenance.Status of the member the channel talks to: OK when etcd
  // answers and reports no alarm/error.
  absl::Status Ping(absl::Duration timeout) const;

  absl::StatusOr<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& request) const;
  absl::StatusOr<etcdserverpb::PutResponse> Put(
      const etcdserverpb::PutRequest& request) const;
  absl::StatusOr<etcdserverpb::DeleteRangeResponse> DeleteRange(
      const etcdserverpb::DeleteRangeRequest& request) const;
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& request) const;
  // TTL in whole seconds, at least 1 (etcd may raise it to its minimum).
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> LeaseGrant(
      int64_t ttl_seconds) const;
  absl::Status LeaseRevoke(int64_t lease_id) const;
  // One keep-alive round trip on its own short stream, bounded by `timeout`.
  // The response's TTL is the lease's remaining time in seconds after the
  // renewal; TTL <= 0 means etcd no longer has the lease.
  absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> LeaseKeepAliveOnce(
      int64_t lease_id, absl::Duration timeout) const;
  absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse> LeaseTimeToLive(
      int64_t lease_id) const;

  // For streaming calls (Watch).
  etcdserverpb::Watch::Stub& watch_stub() const { return *watch_; }

 private:
  EtcdClient() = default;
  // UNAVAILABLE for "cannot reach / no answer", etcd's own code otherwise.
  absl::Status ToStatus(const grpc::Status& status, const char* what) const;
  void SetDeadline(grpc::ClientContext& context) const;

  EtcdClientOptions options_;
  std::string target_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease_;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch_;
  std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance_;
};

// The end of the key range that holds exactly the keys starting with
// `prefix` (etcd's clientv3.GetPrefixRangeEnd): the prefix with its last
// byte below 0xff incremented and the rest dropped; "\0" (every key) when
// the prefix is empty or all 0xff.
std::string PrefixRangeEnd(const std::string& prefix);

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_ETCD_CLIENT_H_
