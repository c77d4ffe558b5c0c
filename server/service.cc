#include "server/service.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "proto/membership_error.h"
#include "server/bearer_auth.h"
#include "server/unary_call.h"

namespace ps {
namespace {

// How long round 1 of a checkpoint cut holds the sync steps when round 2
// does not come (its coordinator died): the job pauses at most this long.
constexpr absl::Duration kCutHoldLease = absl::Seconds(10);

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // A membership refusal's MembershipError travels as the binary details.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()),
                      MembershipErrorDetails(status));
}

ParameterServerService::ParameterServerService(Shard* shard,
                                               std::string auth_token)
    : shard_(shard),
      expected_authorization_(ExpectedAuthorization(auth_token)) {}

absl::Status ParameterServerService::CheckAuth(
    const grpc::ServerContextBase& context) const {
  return CheckBearer(context, expected_authorization_);
}

absl::Status ParameterServerService::Admit(
    const grpc::ServerContextBase& context) const {
  RETURN_IF_ERROR(CheckAuth(context));
  if (restoring_.load()) {
    return absl::UnavailableError(absl::StrCat(
        "shard ", shard_->shard_index(), " is restoring its checkpoint "
        "(agreeing on the cluster checkpoint id with the other shards); "
        "retry"));
  }
  return absl::OkStatus();
}

template <typename Request, typename Response, typename RequestMethod>
void ParameterServerService::Serve(ServerQueue* queue,
                                   RequestMethod request_method,
                                   void (ParameterServerService::*handler)(
                                       const Request&, Response*, UnaryDone),
                                   bool membership) {
  UnaryMethod<Request, Response> method;
  method.request = [this, request_method](
                       grpc::ServerContext* context, Request* request,
                       grpc::ServerAsyncResponseWriter<Response>* writer,
                       grpc::ServerCompletionQueue* cq, void* tag) {
    (this->*request_method)(context, request, writer, cq, cq, tag);
  };
  method.handle = [this, handler, membership](
                      const grpc::ServerContext& context,
                      const Request& request, Response* response,
                      UnaryDone done) {
    if (absl::Status admitted = Admit(context); !admitted.ok()) {
      done(ToGrpcStatus(admitted));
      return;
    }
    if (!membership || !control_gate_.admit) {
      (this->*handler)(request, response, std::move(done));
      return;
    }
    // `request` and `response` live until `done` runs.
    control_gate_.admit([this, handler, request = &request, response,
                         done = std::move(done)](absl::Status admitted) {
      if (!admitted.ok()) {
        done(ToGrpcStatus(admitted));
        return;
      }
      (this->*handler)(
          *request, response, [this, done](const grpc::Status& served) {
            control_gate_.commit([served, done](absl::Status committed) {
              done(committed.ok() ? served : ToGrpcStatus(committed));
            });
          });
    });
  };
  ServeUnary(queue, std::move(method));
}

void ParameterServerService::ServeUnaryMethods(ServerQueue* queue) {
  using S = ParameterServerService;
  Serve(queue, &S::RequestGetShardInfo, &S::HandleGetShardInfo);
  Serve(queue, &S::RequestCreateTable, &S::HandleCreateTable);
  constexpr bool kMembership = true;
  Serve(queue, &S::RequestRegisterWorker, &S::HandleRegisterWorker,
        kMembership);
  Serve(queue, &S::RequestHeartbeat, &S::HandleHeartbeat, kMembership);
  Serve(queue, &S::RequestClock, &S::HandleClock, kMembership);
  Serve(queue, &S::RequestBarrier, &S::HandleBarrier, kMembership);
  Serve(queue, &S::RequestLeave, &S::HandleLeave, kMembership);
  Serve(queue, &S::RequestGetStats, &S::HandleGetStats);
  Serve(queue, &S::RequestCheckpoint, &S::HandleCheckpoint);
  ExportMethod exporting;
  exporting.request = [this](grpc::ServerContext* context,
                             proto::ExportRequest* request,
                             grpc::ServerAsyncWriter<proto::ExportChunk>* writer,
                             grpc::ServerCompletionQueue* cq, void* tag) {
    RequestExportTable(context, request, writer, cq, cq, tag);
  };
  exporting.authorize = [this](const grpc::ServerContext& context) {
    return Admit(context);
  };
  exporting.shard = shard_;
  ServeExportTable(queue, std::move(exporting));
}

void ParameterServerService::HandleGetShardInfo(const proto::ShardInfoRequest&,
                                                proto::ShardInfo* response,
                                                UnaryDone done) {
  *response = shard_->GetShardInfo();
  done(grpc::Status::OK);
}

void ParameterServerService::HandleCreateTable(
    const proto::CreateTableRequest& request,
    proto::CreateTableResponse* response, UnaryDone done) {
  absl::StatusOr<proto::TableSpec> spec = shard_->CreateTable(request.spec());
  if (spec.ok()) *response->mutable_spec() = *std::move(spec);
  done(ToGrpcStatus(spec.status()));
}

void ParameterServerService::HandleRegisterWorker(
    const proto::RegisterWorkerRequest& request,
    proto::RegisterWorkerResponse* response, UnaryDone done) {
  done(ToGrpcStatus(shard_->RegisterWorker(request, response)));
}

void ParameterServerService::HandleHeartbeat(
    const proto::HeartbeatRequest& request, proto::HeartbeatResponse* response,
    UnaryDone done) {
  done(ToGrpcStatus(shard_->Heartbeat(request, response)));
}

void ParameterServerService::HandleClock(const proto::ClockRequest& request,
                                         proto::ClockResponse* response,
                                         UnaryDone done) {
  shard_->Clock(
      request,
      [response, done = std::move(done)](absl::StatusOr<int64_t> clock) {
        if (clock.ok()) response->set_clock(*clock);
        done(ToGrpcStatus(clock.status()));
      });
}

void ParameterServerService::HandleBarrier(const proto::BarrierRequest& request,
                                           proto::BarrierResponse*,
                                           UnaryDone done) {
  shard_->Barrier(request, [done = std::move(done)](absl::Status status) {
    done(ToGrpcStatus(status));
  });
}

void ParameterServerService::HandleLeave(const proto::LeaveRequest& request,
                                         proto::LeaveResponse*,
                                         UnaryDone done) {
  done(ToGrpcStatus(shard_->Leave(request)));
}

void ParameterServerService::HandleGetStats(const proto::StatsRequest&,
                                            proto::StatsResponse* response,
                                            UnaryDone done) {
  *response = shard_->GetStats();
  done(grpc::Status::OK);
}

void ParameterServerService::HandleCheckpoint(
    const proto::CheckpointRequest& request,
    proto::CheckpointResponse* response, UnaryDone done) {
  if (checkpointer_ == nullptr) {
    done(ToGrpcStatus(absl::FailedPreconditionError(
        "checkpoints are off: the cluster config has no "
        "server.checkpoint_dir")));
    return;
  }
  if (request.checkpoint_id() == 0) {
    done(ToGrpcStatus(absl::InvalidArgumentError(
        "checkpoint_id is required: the coordinator picks one id and sends it "
        "to every shard (server/checkpoint_set.h)")));
    return;
  }
  if (request.prepare_cut() && !request.at_steps().empty()) {
    done(ToGrpcStatus(absl::InvalidArgumentError(
        "prepare_cut and at_steps are the two rounds of one cut "
        "(server/step_holds.h): send them in two requests")));
    return;
  }
  if (request.prepare_cut()) {
    // Round 1 of a cut (server/step_holds.h): only holds steps. The hold
    // lapses on its own if round 2 never comes.
    const StepsByTable held = shard_->HoldStepsForCut(
        request.checkpoint_id(), absl::Now() + kCutHoldLease);
    response->set_checkpoint_id(request.checkpoint_id());
    response->mutable_held_steps()->insert(held.begin(), held.end());
    done(grpc::Status::OK);
    return;
  }
  // Runs on the checkpointer's thread; this one goes on serving.
  checkpointer_->Request(
      request.checkpoint_id(),
      StepsByTable(request.at_steps().begin(), request.at_steps().end()),
      [response, done = std::move(done)](absl::StatusOr<CheckpointInfo> info) {
        if (info.ok()) {
          response->set_checkpoint_id(info->seq);
          response->set_path(info->path);
          response->set_bytes(info->bytes);
          response->set_duration_ms(absl::ToInt64Milliseconds(info->duration));
        }
        done(ToGrpcStatus(info.status()));
      });
}

}  // namespace ps
