// One client's connection to one parameter server: a gRPC channel, the stub
// for control RPCs and ONE long-lived DataStream carrying many pipelined data
// requests matched by request_id.
//
// Reliability: when the stream breaks (server died, connection dropped) no
// request fails yet. The connection opens a new stream after an exponential
// backoff (reconnect_initial_backoff_ms doubling up to
// reconnect_max_backoff_ms) and resends every unanswered request unchanged
// (same request_id and client_id, so the server deduplicates retried pushes).
// A connection that stops answering without closing (a silent partition) is
// noticed by HTTP/2 keepalive pings (client.keepalive_ms) and handled the
// same way. After max_reconnect_attempts consecutive failed attempts every
// pending request fails with UNAVAILABLE naming the server; a later Send() starts a
// fresh series of attempts. A stream the server finishes with a
// non-transient status (e.g. UNAUTHENTICATED, INVALID_ARGUMENT) fails the
// pending requests with that status instead.
//
// The stream runs on gRPC's async API: its events are handled by whichever
// thread polls the client's CompletionPoller (client/completion_poller.h): a
// caller waiting for a result, or the poller's background thread.
//
// Thread safety: thread-safe. Response callbacks run on that thread (or the
// reconnect thread / destructor for failures), never under an internal lock;
// they must not block, and must not destroy the connection.
#ifndef PS_CLIENT_SERVER_CONNECTION_H_
#define PS_CLIENT_SERVER_CONNECTION_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/completion_poller.h"
#include "common/config.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps.grpc.pb.h"

namespace ps {

// Converts a gRPC status (code and message kept).
absl::Status FromGrpcStatus(const grpc::Status& status);
// Converts a DataResponse's status_code / status_message; unknown codes
// become UNKNOWN.
absl::Status FromResponseStatus(int32_t code, const std::string& message);

class ServerConnection {
 public:
  struct Options {
    std::string address;  // host:port
    ClientConfig client;
    TlsConfig tls;
    std::string auth_token;  // "" = none
    // Source of request ids, shared by every connection of one client so ids
    // are unique per client. Null: the connection uses its own counter.
    std::shared_ptr<std::atomic<uint64_t>> request_ids;
    // The queue of the stream's events and who polls it, shared by every
    // connection of one client. Null: the connection makes its own.
    std::shared_ptr<CompletionPoller> poller;
    // Replicated shards (server/replication/replica_node.h): the address of
    // the shard's primary now ("" = unknown: keep the current one), asked
    // before every new data stream. With it, a response UNAVAILABLE (a
    // replica that is not, or no longer, primary) is not delivered: the
    // request stays pending and the stream is reopened to the address this
    // returns, resending every unanswered request unchanged (same ids).
    // Control RPCs (stub()) keep using `address`.
    std::function<std::string()> resolve_address;
  };

  // `status` is OK when `response` carries status_code 0; otherwise it is the
  // transport failure or the response's error, and `response` may be null.
  using ResponseCallback =
      std::function<void(const absl::Status& status,
                         proto::DataResponse* response)>;

  // Builds the channel (reads the TLS files: NOT_FOUND / INVALID_ARGUMENT
  // when they are missing or empty). Does not contact the server.
  static absl::StatusOr<std::unique_ptr<ServerConnection>> Create(
      Options options);

  // Cancels the stream, waits for it to finish and fails every pending
  // request with CANCELLED.
  ~ServerConnection();

  ServerConnection(const ServerConnection&) = delete;
  ServerConnection& operator=(const ServerConnection&) = delete;

  // Sends `request` on the data stream; sets its request_id. `done` runs
  // exactly once with the response or the failure. Never blocks on the
  // network. The request is encoded once here (its values are moved into
  // the encoded buffer, not copied) and kept until answered, for resends.
  void Send(proto::DataRequest request, ResponseCallback done) {
    Send(std::move(request), absl::Span<char>(), std::move(done));
  }

  // Same, for a pull whose values are wanted in `values_into` (non-empty):
  // the response's values are copied from the received buffer straight
  // there (one copy) and `done` gets a response with empty values(). A
  // response with values of another size than values_into.size() gets
  // INTERNAL instead, naming the server and both sizes. `values_into` must
  // stay valid until `done` runs; it is written only before `done` runs.
  void Send(proto::DataRequest request, absl::Span<char> values_into,
            ResponseCallback done);

  // Same, with the values given as `payload` and sent without a copy (the
  // encoded request references it): `owner` keeps it alive, or, when null,
  // the caller keeps it valid and unchanged until `done` runs. `done` runs
  // only once gRPC reads the payload no more: after the server answered
  // (it had received every byte), or after the stream carrying it finished.
  // REQUIRES: request.values() is empty.
  void SendWithPayload(proto::DataRequest request, absl::string_view payload,
                       std::shared_ptr<const void> owner,
                       absl::Span<char> values_into, ResponseCallback done);

  // A context for a control RPC: carries the bearer token; with a deadline of
  // `timeout` unless it is absl::InfiniteDuration(). `wait_for_ready` makes
  // the call wait for the channel instead of failing fast while the server is
  // unreachable, except on a connection that follows a primary
  // (resolve_address): there an unreachable address means the primary died
  // or moved, and a call waiting for it would wait out its whole deadline
  // for a server that is gone while the shard's new primary serves. Such a
  // call fails fast (UNAVAILABLE); the callers' retries (Clock, RegisterWorker,
  // Barrier, the handshake) ask stub() again, which re-resolves the primary.
  std::unique_ptr<grpc::ClientContext> NewContext(
      absl::Duration timeout, bool wait_for_ready = false) const;

  // The stub for control RPCs. With options.resolve_address, the current
  // primary's (re-resolved on each call, so control RPCs follow a failover
  // as data streams do); else the connection's address. Valid as long as
  // the connection.
  proto::ParameterServer::Stub* stub();
  // The configured address: shard i's servers[i], its identity.
  const std::string& address() const { return options_.address; }
  // Where requests go now: address(), or with options.resolve_address the
  // primary it last named. Errors name this one (with replicated shards the
  // configured address may be a replica that is no longer the primary).
  std::string CurrentAddress() const ABSL_LOCKS_EXCLUDED(mu_);

  // Number of requests sent and not yet answered or failed.
  size_t NumPendingForTesting();
  // Streams opened so far (1 after the first request, +1 per reconnect).
  int64_t StreamsOpenedForTesting();

 private:
  class Stream;
  struct Pending {
    grpc::ByteBuffer wire;  // the encoded request (values not copied)
    absl::Span<char> values_into;
    ResponseCallback done;
  };
  enum class State { kIdle, kConnecting, kOpen };
  // The operation of a stream whose completion is being handled.
  enum class StreamEvent { kStart, kRead, kWrite, kFinish };

  ServerConnection(Options options, std::shared_ptr<grpc::Channel> channel,
                   std::shared_ptr<grpc::ChannelCredentials> credentials,
                   grpc::ChannelArguments args);
  // The data stub of the next stream: the re-resolved primary's when
  // options_.resolve_address is set, else data_stub_.
  grpc::GenericStub* DataStubForNewStream();
  // Re-resolves the primary (outside mu_) and makes stubs for a new one;
  // returns the current primary's stubs (owned by failover_stubs_, never
  // freed before the connection), or nulls while the first address is
  // current.
  struct CurrentStubs {
    grpc::GenericStub* data = nullptr;
    proto::ParameterServer::Stub* control = nullptr;
  };
  CurrentStubs CurrentFailoverStubs() ABSL_LOCKS_EXCLUDED(mu_);

  void ReconnectLoop();
  // Opens a new stream and queues every pending request on it.
  void OpenStream();
  // Pops the next queued request of `stream` when no write is in flight;
  // returns it (the caller starts the write outside the lock) or null.
  std::shared_ptr<Pending> NextWriteLocked(Stream* stream)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartWrite(Stream* stream, std::shared_ptr<Pending> entry);

  // Stream events (on the completion thread, never under mu_).
  void OnStreamEvent(Stream* stream, StreamEvent event, bool ok);
  void OnResponse(Stream* stream, const grpc::ByteBuffer& wire);
  void OnStreamDone(Stream* stream, const grpc::Status& status);

  // Fails `entries` with `status` (outside the lock) and tells the poller:
  // this may run on a thread that is not polling (Notify).
  void FailAll(std::map<uint64_t, std::shared_ptr<Pending>> entries,
               const absl::Status& status);

  // Constant after construction.
  const Options options_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<proto::ParameterServer::Stub> stub_;
  // DataStream with raw byte buffers (proto/data_wire.h).
  const std::unique_ptr<grpc::GenericStub> data_stub_;
  const std::shared_ptr<std::atomic<uint64_t>> request_ids_;
  const std::shared_ptr<CompletionPoller> poller_;
  // For channels to other replicas (resolve_address).
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  const grpc::ChannelArguments channel_args_;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // signalled on state_, shutting_down_, stream done
  State state_ ABSL_GUARDED_BY(mu_) = State::kIdle;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  // Unanswered requests by id (ordered, so a resend keeps the send order).
  std::map<uint64_t, std::shared_ptr<Pending>> pending_ ABSL_GUARDED_BY(mu_);
  // The current stream (open, or finished and waiting to be replaced).
  std::unique_ptr<Stream> stream_ ABSL_GUARDED_BY(mu_);
  // Consecutive failed stream attempts (reset by any response).
  int64_t failed_attempts_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time next_attempt_ ABSL_GUARDED_BY(mu_);
  int64_t streams_opened_ ABSL_GUARDED_BY(mu_) = 0;
  // resolve_address: where requests go now, and the stubs made for every
  // primary so far (kept: a finished call may still reference its channel).
  struct FailoverStubs {
    std::unique_ptr<grpc::GenericStub> data;
    std::unique_ptr<proto::ParameterServer::Stub> control;
  };
  std::string data_address_ ABSL_GUARDED_BY(mu_);
  std::vector<FailoverStubs> failover_stubs_ ABSL_GUARDED_BY(mu_);

  std::thread reconnect_thread_;  // owned; joined by the destructor
};

}  // namespace ps

#endif  // PS_CLIENT_SERVER_CONNECTION_H_
