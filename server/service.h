// The ParameterServer gRPC service on the completion-queue API: converts
// RPCs to Shard calls and absl::Status to grpc::Status (once, here). Every
// method runs on the ServerQueue's thread (server/server_queue.h explains
// why no callback API); the handlers never block: a Clock or Barrier that
// must wait is parked in the shard and answered later from another thread.
//
// DataStream is served by DataStreamServer (server/data_stream.h), which
// requests its calls from this service.
//
// Authentication: when `auth_token` is non-empty every RPC must carry
// metadata "authorization: Bearer <auth_token>", else UNAUTHENTICATED.
//
// Thread safety: the service is thread-safe; `shard` must outlive it and
// every call it serves (the server's Shutdown() waits for them).
#ifndef PS_SERVER_SERVICE_H_
#define PS_SERVER_SERVICE_H_

#include <atomic>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps.grpc.pb.h"
#include "server/checkpointer.h"
#include "server/export_call.h"
#include "server/server_queue.h"
#include "server/shard.h"
#include "server/unary_call.h"

namespace ps {

grpc::Status ToGrpcStatus(const absl::Status& status);

// The generated service with every method on the async API; DataStream
// takes raw byte buffers: requests are decoded in place and applied from
// gRPC's slices, responses are encoded by hand so the pulled values are not
// copied again (proto/data_wire.h). The wire format is unchanged.
// Each WithAsyncMethod_X / WithRawMethod_X wraps the one after it.
using ParameterServerRpc = proto::ParameterServer;
using ParameterServerAsyncBase = ParameterServerRpc::WithAsyncMethod_GetShardInfo<
    ParameterServerRpc::WithAsyncMethod_CreateTable<
    ParameterServerRpc::WithAsyncMethod_RegisterWorker<
    ParameterServerRpc::WithAsyncMethod_Heartbeat<
    ParameterServerRpc::WithAsyncMethod_Clock<
    ParameterServerRpc::WithAsyncMethod_Barrier<
    ParameterServerRpc::WithAsyncMethod_GetStats<
    ParameterServerRpc::WithAsyncMethod_Checkpoint<
    ParameterServerRpc::WithAsyncMethod_Leave<
    ParameterServerRpc::WithAsyncMethod_ExportTable<
    ParameterServerRpc::WithRawMethod_DataStream<
    ParameterServerRpc::Service>>>>>>>>>>>;

class ParameterServerService final : public ParameterServerAsyncBase {
 public:
  ParameterServerService(Shard* shard, std::string auth_token);

  // OK when `context` carries the expected bearer token (or none is
  // required), else UNAUTHENTICATED.
  absl::Status CheckAuth(const grpc::ServerContextBase& context) const;

  // Whether a call of this service may be served: CheckAuth, then
  // UNAVAILABLE "shard <i> is restoring its checkpoint ...; retry" while
  // restoring (set_restoring). Every method and DataStream ask this.
  absl::Status Admit(const grpc::ServerContextBase& context) const;

  // While true, every call is refused with UNAVAILABLE: the server is bound
  // (so that the other shards can agree on a checkpoint with it,
  // server/checkpoint_set.h) but its shard is not restored yet. Any thread.
  void set_restoring(bool restoring) { restoring_.store(restoring); }

  // The shard's checkpointer for the Checkpoint RPC (null, the default:
  // FAILED_PRECONDITION, no checkpoint_dir). REQUIRES: set before serving;
  // `checkpointer` outlives every call.
  void SetCheckpointer(Checkpointer* checkpointer) {
    checkpointer_ = checkpointer;
  }

  // Replicated shards: each worker membership call (RegisterWorker,
  // Heartbeat, Clock, Barrier, Leave) passes `admit` before it is served
  // and `commit` after, before its answer goes out. Each calls its argument
  // once, now or later and on any thread. admit: OK serves the call, an
  // error is the call's answer (a replica that is not primary: UNAVAILABLE,
  // so the worker asks the primary). commit: OK sends the served call's
  // answer, an error replaces it (the membership change the call made was
  // not replicated: UNAVAILABLE, the worker asks again). Unset (the
  // default): every call is served and answered as it is. REQUIRES: set
  // before serving; both or neither.
  using ControlStep = std::function<void(std::function<void(absl::Status)>)>;
  struct ControlGate {
    ControlStep admit;
    ControlStep commit;
  };
  void SetControlGate(ControlGate gate) { control_gate_ = std::move(gate); }

  // Serves every method but DataStream on `queue` from now on (ExportTable:
  // server/export_call.h). Call once, after the server was built
  // (BuildAndStart).
  void ServeUnaryMethods(ServerQueue* queue);

 private:
  // Serves one method: `request_method` is the generated Request<Method>,
  // `handler` runs once the bearer token checked out (and, for a
  // `membership` method, the control admission).
  template <typename Request, typename Response, typename RequestMethod>
  void Serve(ServerQueue* queue, RequestMethod request_method,
             void (ParameterServerService::*handler)(const Request&, Response*,
                                                     UnaryDone),
             bool membership = false);

  // The handlers (see ps.proto for each method's contract).
  void HandleGetShardInfo(const proto::ShardInfoRequest& request,
                          proto::ShardInfo* response, UnaryDone done);
  void HandleCreateTable(const proto::CreateTableRequest& request,
                         proto::CreateTableResponse* response, UnaryDone done);
  void HandleRegisterWorker(const proto::RegisterWorkerRequest& request,
                            proto::RegisterWorkerResponse* response,
                            UnaryDone done);
  void HandleHeartbeat(const proto::HeartbeatRequest& request,
                       proto::HeartbeatResponse* response, UnaryDone done);
  void HandleClock(const proto::ClockRequest& request,
                   proto::ClockResponse* response, UnaryDone done);
  void HandleBarrier(const proto::BarrierRequest& request,
                     proto::BarrierResponse* response, UnaryDone done);
  void HandleLeave(const proto::LeaveRequest& request,
                   proto::LeaveResponse* response, UnaryDone done);
  void HandleGetStats(const proto::StatsRequest& request,
                      proto::StatsResponse* response, UnaryDone done);
  // Queues a checkpoint on the checkpointer's thread and answers once it is
  // durable.
  void HandleCheckpoint(const proto::CheckpointRequest& request,
                        proto::CheckpointResponse* response, UnaryDone done);

  Shard* const shard_;
  const std::string expected_authorization_;  // "" = no token required
  Checkpointer* checkpointer_ = nullptr;      // set before serving
  ControlGate control_gate_;  // set before serving
  std::atomic<bool> restoring_{false};
};

}  // namespace ps

#endif  // PS_SERVER_SERVICE_H_
