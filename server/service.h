// gRPC callback-API front of a Shard: converts RPCs to Shard calls and
// absl::Status to grpc::Status (once, here).
//
// DataStream: one DataStreamReactor per stream (see service.cc). It keeps at
// most one read and one write in flight, queues responses, never blocks in a
// reaction, and answers each DataRequest with exactly one DataResponse (an
// error goes into status_code / status_message and the stream keeps
// running). It stops reading while kMaxStreamInFlight requests are pending
// (backpressure) and resumes as responses drain. The stream is finished with
// OK after the client half-closes and every response is written, or with
// CANCELLED when the client cancels or a write fails, or with UNAVAILABLE
// when the server shuts down (after the pending responses are written).
//
// Authentication: when `auth_token` is non-empty every RPC must carry
// metadata "authorization: Bearer <auth_token>", else UNAUTHENTICATED.
//
// Thread safety: the service is thread-safe; `shard` must outlive it and
// every call it serves (the server's Shutdown() waits for them).
#ifndef PS_SERVER_SERVICE_H_
#define PS_SERVER_SERVICE_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps.grpc.pb.h"
#include "server/checkpoint.h"
#include "server/shard.h"

namespace ps {

// Requests a stream may have pending (submitted or answered but not yet
// written) before the server stops reading from it.
inline constexpr int kMaxStreamInFlight = 1024;

grpc::Status ToGrpcStatus(const absl::Status& status);

class DataStreamReactor;  // service.cc

// The open DataStreams, so shutdown can end them. Thread-safe.
class StreamRegistry {
 public:
  // False once Shutdown() began (the stream must finish UNAVAILABLE).
  bool Add(DataStreamReactor* stream);
  void Remove(DataStreamReactor* stream);
  // Makes every open stream finish with UNAVAILABLE after writing its
  // pending responses; later streams are refused.
  void Shutdown();

 private:
  absl::Mutex mu_;
  absl::flat_hash_set<DataStreamReactor*> streams_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

// The generated callback service with DataStream taking raw byte buffers:
// requests are decoded in place and applied from gRPC's slices, responses
// are encoded by hand so the pulled values are not copied again
// (proto/data_wire.h). The wire format is unchanged.
using ParameterServerCallbackBase = proto::ParameterServer::WithCallbackMethod_GetShardInfo<
    proto::ParameterServer::WithCallbackMethod_CreateTable<
        proto::ParameterServer::WithCallbackMethod_RegisterWorker<
            proto::ParameterServer::WithCallbackMethod_Heartbeat<
                proto::ParameterServer::WithCallbackMethod_Clock<
                    proto::ParameterServer::WithCallbackMethod_Barrier<
                        proto::ParameterServer::WithCallbackMethod_GetStats<
                            proto::ParameterServer::WithCallbackMethod_Checkpoint<
                                proto::ParameterServer::
                                    WithRawCallbackMethod_DataStream<
                                        proto::ParameterServer::Service>>>>>>>>>;

class ParameterServerService final : public ParameterServerCallbackBase {
 public:
  ParameterServerService(Shard* shard, std::string auth_token);

  // Ends open DataStreams with UNAVAILABLE (after their pending responses)
  // and refuses new ones; call before grpc::Server::Shutdown() so it does
  // not wait out its deadline on idle streams.
  void BeginShutdown() { streams_.Shutdown(); }

  // The shard's checkpointer for the Checkpoint RPC (null, the default:
  // FAILED_PRECONDITION, no checkpoint_dir). REQUIRES: set before serving;
  // `checkpointer` outlives every call.
  void SetCheckpointer(Checkpointer* checkpointer) {
    checkpointer_ = checkpointer;
  }

  grpc::ServerUnaryReactor* GetShardInfo(
      grpc::CallbackServerContext* context,
      const proto::ShardInfoRequest* request,
      proto::ShardInfo* response) override;
  grpc::ServerUnaryReactor* CreateTable(
      grpc::CallbackServerContext* context,
      const proto::CreateTableRequest* request,
      proto::CreateTableResponse* response) override;
  grpc::ServerUnaryReactor* RegisterWorker(
      grpc::CallbackServerContext* context,
      const proto::RegisterWorkerRequest* request,
      proto::RegisterWorkerResponse* response) override;
  grpc::ServerUnaryReactor* Heartbeat(
      grpc::CallbackServerContext* context,
      const proto::HeartbeatRequest* request,
      proto::HeartbeatResponse* response) override;
  grpc::ServerUnaryReactor* Clock(grpc::CallbackServerContext* context,
                                  const proto::ClockRequest* request,
                                  proto::ClockResponse* response) override;
  grpc::ServerUnaryReactor* Barrier(grpc::CallbackServerContext* context,
                                    const proto::BarrierRequest* request,
                                    proto::BarrierResponse* response) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const proto::StatsRequest* request,
                                     proto::StatsResponse* response) override;
  // Queues a checkpoint on the checkpointer's thread (never blocks a gRPC
  // thread) and answers once it is durable.
  grpc::ServerUnaryReactor* Checkpoint(
      grpc::CallbackServerContext* context,
      const proto::CheckpointRequest* request,
      proto::CheckpointResponse* response) override;
  // A malformed DataRequest (bytes protobuf cannot parse, or a group; see
  // proto/data_request_view.h) finishes the stream with INVALID_ARGUMENT.
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* DataStream(
      grpc::CallbackServerContext* context) override;

 private:
  absl::Status CheckAuth(const grpc::CallbackServerContext* context) const;

  Shard* const shard_;
  const std::string expected_authorization_;  // "" = no token required
  StreamRegistry streams_;
  Checkpointer* checkpointer_ = nullptr;  // set before serving
};

}  // namespace ps

#endif  // PS_SERVER_SERVICE_H_
