#include "server/service.h"


#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "proto/data_wire.h"
#include "spdlog/spdlog.h"

namespace ps {

// One DataStream. Lifetime: gRPC calls OnDone() once after Finish; every
// request handed to the Shard holds a reference (outstanding_) until its
// response arrives. The object deletes itself when both happened, so a
// response completing after the client went away finds a live object that
// just drops it, and nothing touches gRPC after Finish.
//
// All gRPC operations (StartRead, StartWrite, Finish) are issued outside mu_:
// the decision is taken under mu_ (NextActions) and carried out after.
class DataStreamReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // `registry` tracks open streams for shutdown; it outlives the stream.
  DataStreamReactor(Shard* shard, StreamRegistry* registry,
                    const absl::Status& auth)
      : shard_(shard), registry_(registry) {
    absl::Status status = auth;
    if (status.ok() && !registry_->Add(this)) {
      status = absl::UnavailableError("server is shutting down");
    }
    if (!status.ok()) {
      {
        absl::MutexLock lock(&mu_);
        finish_called_ = true;
      }
      Finish(ToGrpcStatus(status));
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      read_in_flight_ = true;
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The client half-closed, or the call is broken / cancelled.
      Actions actions;
      {
        absl::MutexLock lock(&mu_);
        read_in_flight_ = false;
        reads_done_ = true;
        actions = NextActions();
      }
      Run(actions);
      return;
    }
    // Decoded in place: keys and values stay in gRPC's slices (or one
    // aligned copy when a slice boundary or alignment requires it).
    absl::StatusOr<std::shared_ptr<const ReceivedDataRequest>> received =
        DecodeDataRequest(request_);
    request_.Clear();
    if (!received.ok()) {
      Actions actions;
      {
        absl::MutexLock lock(&mu_);
        read_in_flight_ = false;
        reads_done_ = true;
        malformed_ = true;
        actions = NextActions();
      }
      Run(actions);
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      read_in_flight_ = false;
      ++outstanding_;
      read_paused_ = true;  // NextActions() restarts reading if allowed
    }
    // The view shares the ReceivedDataRequest's lifetime.
    std::shared_ptr<const DataRequestView> request(*received,
                                                   &(*received)->view());
    shard_->SubmitData(std::move(request), [this](proto::DataResponse r) {
      OnResponse(std::move(r));
    });
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      actions = NextActions();
    }
    Run(actions);
  }

  void OnWriteDone(bool ok) override {
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      write_in_flight_ = false;
      queue_.pop_front();
      if (!ok) aborted_ = true;  // the client is gone
      actions = NextActions();
    }
    Run(actions);
  }

  void OnCancel() override {
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      aborted_ = true;
      actions = NextActions();
    }
    Run(actions);
  }

  struct Actions {
    const grpc::ByteBuffer* write = nullptr;
    bool read = false;
    std::optional<grpc::Status> finish;
  };

  // Server shutdown: the stream finishes with UNAVAILABLE once its pending
  // responses are written; reading stops. Returns what the caller must Run()
  // (the decision is taken here, under the StreamRegistry's lock, so the
  // stream cannot finish and be deleted meanwhile; running it needs no lock).
  Actions PrepareShutdown() {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    return NextActions();
  }

  // Carries out decided actions. The stream stays alive while they run: a
  // decided Finish is the only one (OnDone follows it), and a decided write
  // or read blocks any Finish until it completes.
  void Run(const Actions& a) {
    if (a.write != nullptr) StartWrite(a.write);
    if (a.read) StartRead(&request_);
    if (a.finish.has_value()) Finish(*a.finish);
  }

  void OnDone() override {
    registry_->Remove(this);
    if (spdlog::should_log(spdlog::level::debug)) {
      const DataRequestDecodeStats stats = GetDataRequestDecodeStats();
      spdlog::debug(
          "DataStream ended; requests decoded by this process: {}, {} in "
          "several slices (at most {}), {} of {} bytes copied to align or "
          "join keys/values",
          stats.messages, stats.multi_slice_messages, stats.max_slices,
          stats.bytes_copied, stats.bytes_received);
    }
    bool destroy;
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
      destroy = outstanding_ == 0;
    }
    if (destroy) delete this;
  }

 private:
  void OnResponse(proto::DataResponse response) {
    // Encoded outside the lock; the values are moved, not copied.
    grpc::ByteBuffer encoded = SerializeDataResponse(std::move(response));
    Actions actions;
    bool destroy;
    {
      absl::MutexLock lock(&mu_);
      --outstanding_;
      if (!finish_called_ && !aborted_ && !malformed_) {
        queue_.push_back(std::move(encoded));
      }
      actions = NextActions();
      destroy = done_ && outstanding_ == 0;
    }
    Run(actions);
    if (destroy) delete this;  // done_ implies Finish ran: no actions above
  }

  Actions NextActions() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Actions a;
    if (finish_called_) return a;
    if (malformed_) {
      // A protocol violation: the pending answers are dropped.
      if (!write_in_flight_ && !read_in_flight_) {
        finish_called_ = true;
        a.finish = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                "malformed DataRequest (not a valid "
                                "ps.proto.DataRequest message)");
      }
      return a;
    }
    if (aborted_) {
      if (!write_in_flight_ && !read_in_flight_) {
        finish_called_ = true;
        a.finish = grpc::Status(grpc::StatusCode::CANCELLED,
                                "stream cancelled");
      }
      return a;
    }
    if (!write_in_flight_ && !queue_.empty()) {
      write_in_flight_ = true;
      a.write = &queue_.front();  // deque: stable while others are appended
    }
    if (read_paused_ && !reads_done_ && !shutting_down_ &&
        outstanding_ + static_cast<int64_t>(queue_.size()) <
            kMaxStreamInFlight) {
      read_paused_ = false;
      read_in_flight_ = true;
      a.read = true;
    }
    if (reads_done_ && outstanding_ == 0 && queue_.empty() &&
        !write_in_flight_) {
      finish_called_ = true;
      a.finish = grpc::Status::OK;
    } else if (shutting_down_ && outstanding_ == 0 && queue_.empty() &&
               !write_in_flight_) {
      // A read may still be pending; finishing completes it with ok=false.
      finish_called_ = true;
      a.finish = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                              "server is shutting down");
    }
    return a;
  }

  Shard* const shard_;
  StreamRegistry* const registry_;
  // Written by gRPC's read; touched only between StartRead and OnReadDone.
  grpc::ByteBuffer request_;

  absl::Mutex mu_;
  std::deque<grpc::ByteBuffer> queue_ ABSL_GUARDED_BY(mu_);
  int64_t outstanding_ ABSL_GUARDED_BY(mu_) = 0;  // submitted, not answered
  bool read_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool read_paused_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool aborted_ ABSL_GUARDED_BY(mu_) = false;
  bool malformed_ ABSL_GUARDED_BY(mu_) = false;  // finish INVALID_ARGUMENT
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

bool StreamRegistry::Add(DataStreamReactor* stream) {
  absl::MutexLock lock(&mu_);
  if (shutting_down_) return false;
  streams_.insert(stream);
  return true;
}

void StreamRegistry::Remove(DataStreamReactor* stream) {
  absl::MutexLock lock(&mu_);
  streams_.erase(stream);
}

void StreamRegistry::Shutdown() {
  // Decide under mu_ (a registered stream cannot reach OnDone, which calls
  // Remove, meanwhile), act outside it (a Finish may lead to OnDone).
  std::vector<std::pair<DataStreamReactor*, DataStreamReactor::Actions>> todo;
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    for (DataStreamReactor* stream : streams_) {
      todo.emplace_back(stream, stream->PrepareShutdown());
    }
  }
  for (auto& [stream, actions] : todo) stream->Run(actions);
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

ParameterServerService::ParameterServerService(Shard* shard,
                                               std::string auth_token)
    : shard_(shard),
      expected_authorization_(auth_token.empty() ? ""
                                                 : "Bearer " + auth_token) {}

absl::Status ParameterServerService::CheckAuth(
    const grpc::CallbackServerContext* context) const {
  if (expected_authorization_.empty()) return absl::OkStatus();
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return absl::UnauthenticatedError("missing authorization metadata");
  }
  const std::string given(it->second.data(), it->second.size());
  // Compare without an early exit so timing does not reveal the prefix.
  bool equal = given.size() == expected_authorization_.size();
  unsigned char diff = 0;
  for (size_t i = 0; equal && i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^ expected_authorization_[i]);
  }
  if (!equal || diff != 0) {
    return absl::UnauthenticatedError("invalid bearer token");
  }
  return absl::OkStatus();
}

namespace {

// Answers a unary call synchronously: `handler()` runs only when `auth` is OK
// (the bearer-token check), and the call finishes with the resulting status.
template <typename Handler>
grpc::ServerUnaryReactor* AnswerNow(grpc::CallbackServerContext* context,
                                    absl::Status auth, Handler handler) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (auth.ok()) auth = handler();
  reactor->Finish(ToGrpcStatus(auth));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* ParameterServerService::GetShardInfo(
    grpc::CallbackServerContext* context, const proto::ShardInfoRequest*,
    proto::ShardInfo* response) {
  return AnswerNow(context, CheckAuth(context), [&] {
    *response = shard_->GetShardInfo();
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ParameterServerService::CreateTable(
    grpc::CallbackServerContext* context,
    const proto::CreateTableRequest* request,
    proto::CreateTableResponse* response) {
  return AnswerNow(context, CheckAuth(context), [&]() -> absl::Status {
    ASSIGN_OR_RETURN(*response->mutable_spec(),
                     shard_->CreateTable(request->spec()));
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ParameterServerService::RegisterWorker(
    grpc::CallbackServerContext* context,
    const proto::RegisterWorkerRequest* request,
    proto::RegisterWorkerResponse* response) {
  return AnswerNow(context, CheckAuth(context), [&]() -> absl::Status {
    ASSIGN_OR_RETURN(const int64_t clock,
                     shard_->RegisterWorker(request->worker_id()));
    response->set_clock(clock);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ParameterServerService::Heartbeat(
    grpc::CallbackServerContext* context,
    const proto::HeartbeatRequest* request,
    proto::HeartbeatResponse* response) {
  return AnswerNow(context, CheckAuth(context), [&]() -> absl::Status {
    ASSIGN_OR_RETURN(const bool registered,
                     shard_->Heartbeat(request->worker_id()));
    response->set_registered(registered);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ParameterServerService::Clock(
    grpc::CallbackServerContext* context, const proto::ClockRequest* request,
    proto::ClockResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status s = CheckAuth(context); !s.ok()) {
    reactor->Finish(ToGrpcStatus(s));
    return reactor;
  }
  shard_->Clock(request->worker_id(), request->clock(),
                [reactor, response](absl::StatusOr<int64_t> clock) {
                  if (clock.ok()) {
                    response->set_clock(*clock);
                    reactor->Finish(grpc::Status::OK);
                  } else {
                    reactor->Finish(ToGrpcStatus(clock.status()));
                  }
                });
  return reactor;
}

grpc::ServerUnaryReactor* ParameterServerService::Barrier(
    grpc::CallbackServerContext* context, const proto::BarrierRequest* request,
    proto::BarrierResponse*) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status s = CheckAuth(context); !s.ok()) {
    reactor->Finish(ToGrpcStatus(s));
    return reactor;
  }
  shard_->Barrier(request->worker_id(), request->generation(),
                  [reactor](absl::Status s) {
                    reactor->Finish(ToGrpcStatus(s));
                  });
  return reactor;
}

grpc::ServerUnaryReactor* ParameterServerService::GetStats(
    grpc::CallbackServerContext* context, const proto::StatsRequest*,
    proto::StatsResponse* response) {
  return AnswerNow(context, CheckAuth(context), [&] {
    *response = shard_->GetStats();
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ParameterServerService::Checkpoint(
    grpc::CallbackServerContext* context, const proto::CheckpointRequest*,
    proto::CheckpointResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status s = CheckAuth(context); !s.ok()) {
    reactor->Finish(ToGrpcStatus(s));
    return reactor;
  }
  if (checkpointer_ == nullptr) {
    reactor->Finish(ToGrpcStatus(absl::FailedPreconditionError(
        "checkpoints are off: the cluster config has no "
        "server.checkpoint_dir")));
    return reactor;
  }
  checkpointer_->Request(
      [reactor, response](absl::StatusOr<CheckpointInfo> info) {
        if (!info.ok()) {
          reactor->Finish(ToGrpcStatus(info.status()));
          return;
        }
        response->set_path(info->path);
        response->set_bytes(info->bytes);
        response->set_duration_ms(absl::ToInt64Milliseconds(info->duration));
        reactor->Finish(grpc::Status::OK);
      });
  return reactor;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
ParameterServerService::DataStream(grpc::CallbackServerContext* context) {
  return new DataStreamReactor(shard_, &streams_, CheckAuth(context));
}

}  // namespace ps
