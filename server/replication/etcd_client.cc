#include "server/replication/etcd_client.h"

#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ps::replication {
namespace {

std::chrono::system_clock::time_point DeadlineAfter(absl::Duration timeout) {
  return std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout);
}

// Every call waits for a connection until its deadline instead of failing
// at once while the channel is in TRANSIENT_FAILURE. Besides being what we
// want (a call within its deadline should reach an etcd that is just coming
// back), it matters with the synchronous API: a waiting call's thread polls
// the channel, which is what drives a reconnection attempt forward. With
// fail-fast calls nothing polls between calls, and an attempt completes only
// when gRPC's 5 s backup poller runs: measured here, an etcd restarted after
// SIGKILL was reached 5-10 s late, after the leases of its clients expired.
void Prepare(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(DeadlineAfter(timeout));
  context.set_wait_for_ready(true);
}

absl::Status CheckEndpoint(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(endpoint.substr(colon + 1), &port) || port <= 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "etcd endpoint '", endpoint, "' is not host:port (e.g. 127.0.0.1:2379)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Create(
    const EtcdClientOptions& options) {
  if (options.endpoints.empty()) {
    return absl::InvalidArgumentError("no etcd endpoint given");
  }
  for (const std::string& endpoint : options.endpoints) {
    if (absl::Status s = CheckEndpoint(endpoint); !s.ok()) return s;
  }
  std::unique_ptr<EtcdClient> client(new EtcdClient());
  client->options_ = options;
  // A single endpoint uses the default resolver (it may be a DNS name, as a
  // Kubernetes Service is); several are listed for the ipv4: resolver when
  // they are literal addresses and gRPC's pick_first walks them in order.
  client->target_ = options.endpoints.size() == 1
                        ? options.endpoints[0]
                        : absl::StrCat("ipv4:", absl::StrJoin(options.endpoints, ","));
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.max_reconnect_backoff)));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  if (options.keepalive_time > absl::ZeroDuration()) {
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(options.keepalive_time));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, ms);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, ms);
    // Only while a call is open (a watch, a lease's keep-alive stream: what
    // must notice a dead etcd; a unary call has its deadline). etcd counts
    // a ping on a connection without a stream as abuse and closes it with
    // GOAWAY "too_many_pings" (seen in every replication test's log).
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  // Each client gets its own connection (a shared subchannel would let one
  // test contender's partition or failure leak into another's).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  client->channel_ = grpc::CreateCustomChannel(
      client->target_,
      options.credentials != nullptr ? options.credentials
                                     : grpc::InsecureChannelCredentials(),
      args);
  client->kv_ = etcdserverpb::KV::NewStub(client->channel_);
  client->lease_ = etcdserverpb::Lease::NewStub(client->channel_);
  client->watch_ = etcdserverpb::Watch::NewStub(client->channel_);
  client->maintenance_ = etcdserverpb::Maintenance::NewStub(client->channel_);
  return client;
}

absl::Status EtcdClient::ToStatus(const grpc::Status& status,
                                  const char* what) const {
  if (status.ok()) return absl::OkStatus();
  const std::string message =
      absl::StrCat("etcd ", target_, ": ", what, ": ", status.error_message());
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
      return absl::UnavailableError(message);
    default:
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()), message);
  }
}

void EtcdClient::SetDeadline(grpc::ClientContext& context) const {
  Prepare(context, options_.call_timeout);
}

absl::Status EtcdClient::Ping(absl::Duration timeout) const {
  grpc::ClientContext context;
  Prepare(context, timeout);
  etcdserverpb::StatusResponse response;
  absl::Status status = ToStatus(
      maintenance_->Status(&context, etcdserverpb::StatusRequest(), &response), "Status");
  if (!status.ok()) return status;
  if (response.errors_size() > 0) {
    return absl::UnavailableError(absl::StrCat("etcd ", target_, " reports: ",
                                               absl::StrJoin(response.errors(), "; ")));
  }
  return absl::OkStatus();
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Range(
    const etcdserverpb::RangeRequest& request) const {
  grpc::ClientContext context;
  SetDeadline(context);
  etcdserverpb::RangeResponse response;
  absl::Status status = ToStatus(kv_->Range(&context, request, &response), "Range");
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<etcdserverpb::PutResponse> EtcdClient::Put(
    const etcdserverpb::PutRequest& request) const {
  grpc::ClientContext context;
  SetDeadline(context);
  etcdserverpb::PutResponse response;
  absl::Status status = ToStatus(kv_->Put(&context, request, &response), "Put");
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<etcdserverpb::DeleteRangeResponse> EtcdClient::DeleteRange(
    const etcdserverpb::DeleteRangeRequest& request) const {
  grpc::ClientContext context;
  SetDeadline(context);
  etcdserverpb::DeleteRangeResponse response;
  absl::Status status =
      ToStatus(kv_->DeleteRange(&context, request, &response), "DeleteRange");
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(
    const etcdserverpb::TxnRequest& request) const {
  grpc::ClientContext context;
  SetDeadline(context);
  etcdserverpb::TxnResponse response;
  absl::Status status = ToStatus(kv_->Txn(&context, request, &response), "Txn");
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<etcdserverpb::LeaseGrantResponse> EtcdClient::LeaseGrant(
    int64_t ttl_seconds) const {
  grpc::ClientContext context;
  SetDeadline(context);
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl_seconds);
  etcdserverpb::LeaseGrantResponse response;
  absl::Status status =
      ToStatus(lease_->LeaseGrant(&context, request, &response), "LeaseGrant");
  if (!status.ok()) return status;
  if (!response.error().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("etcd ", target_, ": LeaseGrant: ", response.error()));
  }
  return response;
}

absl::Status EtcdClient::LeaseRevoke(int64_t lease_id) const {
  grpc::ClientContext context;
  SetDeadline(context);
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease_id);
  etcdserverpb::LeaseRevokeResponse response;
  return ToStatus(lease_->LeaseRevoke(&context, request, &response), "LeaseRevoke");
}

absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> EtcdClient::LeaseKeepAliveOnce(
    int64_t lease_id, absl::Duration timeout) const {
  // etcd renews per request on a long-lived stream; one request per short
  // stream keeps every renewal bounded by its own deadline, so a stalled etcd
  // (SIGSTOP) costs one timed-out call, never a reader blocked forever.
  grpc::ClientContext context;
  Prepare(context, timeout);
  std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::LeaseKeepAliveRequest,
                                           etcdserverpb::LeaseKeepAliveResponse>>
      stream = lease_->LeaseKeepAlive(&context);
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease_id);
  etcdserverpb::LeaseKeepAliveResponse response;
  const bool written = stream->Write(request) && stream->WritesDone();
  const bool read = written && stream->Read(&response);
  if (read) {
    context.TryCancel();  // the answer is in; do not wait for the stream's end
    (void)stream->Finish();
    return response;
  }
  grpc::Status status = stream->Finish();
  if (status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("etcd ", target_, ": LeaseKeepAlive: stream ended without an answer"));
  }
  return ToStatus(status, "LeaseKeepAlive");
}

absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse> EtcdClient::LeaseTimeToLive(
    int64_t lease_id) const {
  grpc::ClientContext context;
  SetDeadline(context);
  etcdserverpb::LeaseTimeToLiveRequest request;
  request.set_id(lease_id);
  etcdserverpb::LeaseTimeToLiveResponse response;
  absl::Status status = ToStatus(
      lease_->LeaseTimeToLive(&context, request, &response), "LeaseTimeToLive");
  if (!status.ok()) return status;
  return response;
}

std::string PrefixRangeEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    unsigned char last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

}  // namespace ps::replication
