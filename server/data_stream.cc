#include "server/data_stream.h"

#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/completion_tag.h"
#include "proto/data_wire.h"
#include "spdlog/spdlog.h"

namespace ps {

// A completion-queue tag: one kind of operation of one call.
struct DataStreamTag final : CompletionTag {
  enum Kind { kAccept, kRead, kWrite, kFinish, kDone };
  DataStreamTag(DataStreamCall* call, Kind kind) : call(call), kind(kind) {}
  void OnComplete(bool ok) override;

  DataStreamCall* const call;
  const Kind kind;
};

// One DataStream call, from the request for it to its end.
//
// Lifetime: the gRPC side ends when Finish and the done notification have
// completed (then DataStreamServer::CallEnded); every request handed to the
// Shard holds a reference (outstanding_) until its response arrives. The
// object deletes itself when both happened, so a response completing after
// the client went away finds a live object that just drops it, and nothing
// touches gRPC or the DataStreamServer after the gRPC side ended.
//
// Every gRPC operation is started outside mu_: the decision is taken under
// mu_ (NextActions) and carried out after (Run).
class DataStreamCall {
 public:
  DataStreamCall(DataStreamServer* server, grpc::ServerCompletionQueue* cq)
      : server_(server), cq_(cq), stream_(&context_) {}

  // Registers for the next DataStream call on cq_. Called once, inside
  // ServerQueue::BeginCall (so the queue is not shut down meanwhile).
  void Request() {
    context_.AsyncNotifyWhenDone(&done_tag_);
    server_->service_->RequestDataStream(&context_, &stream_, cq_, cq_,
                                         &accept_tag_);
  }

  void OnEvent(DataStreamTag::Kind kind, bool ok) {
    switch (kind) {
      case DataStreamTag::kAccept:
        OnAccepted(ok);
        return;
      case DataStreamTag::kRead:
        OnReadDone(ok);
        return;
      case DataStreamTag::kWrite:
        OnWriteDone(ok);
        return;
      case DataStreamTag::kFinish:
      case DataStreamTag::kDone:
        OnOperationEnded(kind);
        return;
    }
  }

  struct Actions {
    const grpc::ByteBuffer* write = nullptr;
    bool read = false;
    std::optional<grpc::Status> finish;
  };

  // Server shutdown: the stream finishes with UNAVAILABLE once its pending
  // responses are written; reading stops. Returns what the caller must Run()
  // (decided under the server's mu_, so the call cannot end meanwhile).
  Actions PrepareShutdown() {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    return DecideLocked();
  }

  // Carries out decided actions. The gRPC side stays alive while they run:
  // a decided Finish is the only one, and a decided write or read blocks any
  // Finish until it completes.
  void Run(const Actions& a) {
    if (a.write != nullptr) stream_.Write(*a.write, &write_tag_);
    if (a.read) stream_.Read(&request_, &read_tag_);
    if (a.finish.has_value()) stream_.Finish(*a.finish, &finish_tag_);
  }

 private:
  void OnAccepted(bool ok) {
    if (!ok) {
      // The server shuts down: no call came, and none will for this object
      // (the done notification is only armed by a matched call).
      server_->CallEnded(this);
      delete this;
      return;
    }
    server_->RequestCall();  // the next client's stream
    absl::Status status = server_->service_->Admit(context_);
    if (status.ok() && !server_->AddOpen(this)) {
      status = absl::UnavailableError("server is shutting down");
    }
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      // `+=`: once AddOpen() returned, a shutdown may already have decided
      // (and counted) a Finish through PrepareShutdown().
      grpc_ops_ += 1;  // the done notification
      if (status.ok()) {
        read_paused_ = true;  // the first read, unless shutdown came first
        actions = DecideLocked();
      } else {
        finish_called_ = true;
        actions.finish = ToGrpcStatus(status);
        ++grpc_ops_;
      }
    }
    Run(actions);
  }

  void OnReadDone(bool ok) {
    if (!ok) {
      // The client half-closed, or the call is broken / cancelled.
      EndReads(/*malformed=*/false);
      return;
    }
    // Decoded in place: keys and values stay in gRPC's slices (or one
    // aligned copy when a slice boundary or alignment requires it).
    absl::StatusOr<std::shared_ptr<const ReceivedDataRequest>> received =
        DecodeDataRequest(request_, absl::ToUnixSeconds(absl::Now()));
    request_.Clear();
    if (!received.ok()) {
      EndReads(/*malformed=*/true);
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
    Shard::DataDone done = [this](proto::DataResponse r) {
      OnResponse(std::move(r));
    };
    if (server_->submit_hook_) {
      server_->submit_hook_(std::move(request), std::move(done));
    } else {
      server_->shard_->SubmitData(std::move(request), std::move(done));
    }
    // The read's own operation ends here (a new read, if any, counts anew).
    Step step;
    {
      absl::MutexLock lock(&mu_);
      step = OperationEndedLocked();
    }
    Take(step);
  }

  // The read that completed was the last one; `malformed`: it carried bytes
  // that are not a DataRequest.
  void EndReads(bool malformed) {
    Step step;
    {
      absl::MutexLock lock(&mu_);
      read_in_flight_ = false;
      reads_done_ = true;
      if (malformed) malformed_ = true;
      step = OperationEndedLocked();
    }
    Take(step);
  }

  void OnWriteDone(bool ok) {
    Step step;
    {
      absl::MutexLock lock(&mu_);
      write_in_flight_ = false;
      queue_.pop_front();
      if (!ok) aborted_ = true;  // the client is gone
      step = OperationEndedLocked();
    }
    Take(step);
  }

  // The Finish or the done notification completed.
  void OnOperationEnded(DataStreamTag::Kind kind) {
    Step step;
    {
      absl::MutexLock lock(&mu_);
      // The done notification also comes when the client cancels: nothing
      // more will be read or written, so the stream finishes (only a Finish
      // can be decided from here on).
      if (kind == DataStreamTag::kDone && context_.IsCancelled()) {
        aborted_ = true;
      }
      step = OperationEndedLocked();
    }
    Take(step);
  }

  // What follows a completed gRPC operation.
  struct Step {
    Actions actions;
    bool ended = false;    // the gRPC side is over: tell the server
    bool destroy = false;  // ... and no response is outstanding either
  };

  // Accounts for the completed operation (one of grpc_ops_) and decides what
  // follows; the operations decided are counted.
  Step OperationEndedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Step step;
    --grpc_ops_;
    step.actions = DecideLocked();
    step.ended = grpc_ops_ == 0 && finish_called_;
    step.destroy = step.ended && outstanding_ == 0;
    if (step.ended) grpc_side_ended_ = true;
    return step;
  }

  // Carries out a Step outside mu_ (this object may be gone after it).
  void Take(const Step& step) {
    Run(step.actions);
    if (step.ended) server_->CallEnded(this);
    if (step.destroy) delete this;
  }

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
      actions = DecideLocked();  // nothing once the stream is finished
      destroy = grpc_side_ended_ && outstanding_ == 0;
    }
    // An operation started here keeps the gRPC side from ending first.
    Run(actions);
    if (destroy) delete this;
  }

  // NextActions(), with the operations it decides counted in grpc_ops_.
  Actions DecideLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Actions a = NextActions();
    grpc_ops_ += (a.write != nullptr) + a.read + a.finish.has_value();
    return a;
  }

  Actions NextActions() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Actions a;
    if (finish_called_) return a;
    if (malformed_ || aborted_) {
      // A protocol violation, or nobody left to answer: the pending answers
      // are dropped and the stream finishes once no operation is in flight.
      if (!write_in_flight_ && !read_in_flight_) {
        finish_called_ = true;
        a.finish = malformed_
                       ? grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                      "malformed DataRequest (not a valid "
                                      "ps.proto.DataRequest message)")
                       : grpc::Status(grpc::StatusCode::CANCELLED,
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

  DataStreamServer* const server_;
  grpc::ServerCompletionQueue* const cq_;
  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer> stream_;
  DataStreamTag accept_tag_{this, DataStreamTag::kAccept};
  DataStreamTag read_tag_{this, DataStreamTag::kRead};
  DataStreamTag write_tag_{this, DataStreamTag::kWrite};
  DataStreamTag finish_tag_{this, DataStreamTag::kFinish};
  DataStreamTag done_tag_{this, DataStreamTag::kDone};
  // Written by gRPC's read; touched only between Read and its completion.
  grpc::ByteBuffer request_;

  absl::Mutex mu_;
  std::deque<grpc::ByteBuffer> queue_ ABSL_GUARDED_BY(mu_);
  int64_t outstanding_ ABSL_GUARDED_BY(mu_) = 0;  // submitted, not answered
  // gRPC operations started and not completed (read, write, Finish, the
  // done notification).
  int64_t grpc_ops_ ABSL_GUARDED_BY(mu_) = 0;
  bool read_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool read_paused_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool aborted_ ABSL_GUARDED_BY(mu_) = false;
  bool malformed_ ABSL_GUARDED_BY(mu_) = false;  // finish INVALID_ARGUMENT
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool grpc_side_ended_ ABSL_GUARDED_BY(mu_) = false;
};

void DataStreamTag::OnComplete(bool ok) { call->OnEvent(kind, ok); }

DataStreamServer::DataStreamServer(ParameterServerService* service,
                                   Shard* shard, ServerQueue* queue)
    : service_(service), shard_(shard), queue_(queue) {}

void DataStreamServer::RequestCall() {
  queue_->BeginCall([this](grpc::ServerCompletionQueue* cq) {
    (new DataStreamCall(this, cq))->Request();
  });
}

bool DataStreamServer::AddOpen(DataStreamCall* call) {
  absl::MutexLock lock(&mu_);
  if (shutting_down_) return false;
  open_.insert(call);
  return true;
}

void DataStreamServer::CallEnded(DataStreamCall* call) {
  {
    absl::MutexLock lock(&mu_);
    open_.erase(call);
  }
  if (spdlog::should_log(spdlog::level::debug)) {
    const DataRequestDecodeStats stats = GetDataRequestDecodeStats();
    spdlog::debug(
        "DataStream ended; requests decoded by this process: {}, {} in "
        "several slices (at most {}), {} of {} bytes copied to align or join "
        "keys/values",
        stats.messages, stats.multi_slice_messages, stats.max_slices,
        stats.bytes_copied, stats.bytes_received);
  }
  queue_->EndCall();
}

void DataStreamServer::BeginShutdown() {
  // Decide under mu_ (an open call cannot end, which needs mu_ in
  // CallEnded, meanwhile), act outside it.
  std::vector<std::pair<DataStreamCall*, DataStreamCall::Actions>> todo;
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    for (DataStreamCall* call : open_) {
      todo.emplace_back(call, call->PrepareShutdown());
    }
  }
  for (auto& [call, actions] : todo) call->Run(actions);
}

}  // namespace ps
