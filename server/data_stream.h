// The server side of DataStream, on the ServerQueue's completion queue
// (server/server_queue.h: why the async API and one polling thread). The
// thread that wakes up in the poller decodes the request, runs a small one
// inline (Shard::SubmitData) and starts the response write itself: one
// wake-up per small request.
//
// Per stream (DataStreamCall in data_stream.cc): at most one read and one
// write in flight, responses queued in order of completion, never blocks in
// an event handler, and answers each DataRequest with exactly one
// DataResponse (an error goes into status_code / status_message and the
// stream keeps running). It stops reading while kMaxStreamInFlight requests
// are pending (backpressure) and resumes as responses drain. The stream is
// finished with OK after the client half-closes and every response is
// written; with CANCELLED when the client cancels or a write fails; with
// INVALID_ARGUMENT for a malformed DataRequest (bytes protobuf cannot parse,
// or a group; see proto/data_request_view.h); with UNAUTHENTICATED when the
// bearer token is wrong; with UNAVAILABLE when the server shuts down (after
// the pending responses are written).
//
// Thread safety: thread-safe. Lifecycle: Start() after BuildAndStart;
// BeginShutdown() before grpc::Server::Shutdown(); then ServerQueue::Stop()
// waits for every stream's gRPC side to end.
#ifndef PS_SERVER_DATA_STREAM_H_
#define PS_SERVER_DATA_STREAM_H_

#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "server/server_queue.h"
#include "server/service.h"
#include "server/shard.h"

namespace ps {

// Requests a stream may have pending (submitted or answered but not yet
// written) before the server stops reading from it.
inline constexpr int kMaxStreamInFlight = 1024;

class DataStreamCall;  // data_stream.cc

class DataStreamServer {
 public:
  // `service` checks the bearer token and is where calls are requested;
  // `shard` serves the requests; the calls run on `queue`. All three
  // outlive this object and every stream.
  DataStreamServer(ParameterServerService* service, Shard* shard,
                   ServerQueue* queue);

  DataStreamServer(const DataStreamServer&) = delete;
  DataStreamServer& operator=(const DataStreamServer&) = delete;

  // Where decoded data requests go instead of Shard::SubmitData, with the
  // same contract (replicated shards: replication::ReplicaNode::Submit).
  // REQUIRES: set before Start().
  using SubmitHook = std::function<void(std::shared_ptr<const DataRequestView>,
                                        Shard::DataDone)>;
  void set_submit_hook(SubmitHook hook) { submit_hook_ = std::move(hook); }

  // Starts accepting streams. Call once, after BuildAndStart.
  void Start() { RequestCall(); }
  // Every open stream finishes with UNAVAILABLE once its pending responses
  // are written; streams that arrive later are refused the same way. Call
  // before grpc::Server::Shutdown() so it does not wait out its deadline on
  // idle streams.
  void BeginShutdown();

 private:
  friend class DataStreamCall;

  // Makes a fresh DataStreamCall wait for the next stream (nothing once the
  // queue stops).
  void RequestCall();
  // An accepted call joins the open streams; false once shutdown began.
  bool AddOpen(DataStreamCall* call);
  // A call has no gRPC operation in flight and will start none.
  void CallEnded(DataStreamCall* call);

  ParameterServerService* const service_;
  Shard* const shard_;
  ServerQueue* const queue_;
  SubmitHook submit_hook_;  // set before Start(), constant afterwards

  absl::Mutex mu_;
  // Accepted streams whose gRPC side has not ended.
  absl::flat_hash_set<DataStreamCall*> open_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ps

#endif  // PS_SERVER_DATA_STREAM_H_
