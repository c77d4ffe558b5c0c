#include "server/health_service.h"

#include <optional>
#include <utility>

#include "common/completion_tag.h"
#include "server/unary_call.h"

namespace ps {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// One Watch call, from the request for it to its end. At most one write in
// flight; a status that changes meanwhile is sent once that write is done
// (only the latest, and only if it differs from the last one sent).
//
// Lifetime: the object deletes itself once Finish and the done notification
// have completed (no gRPC operation left) after unregistering from the
// service, which calls Notify() only under its lock on registered watches.
class HealthWatch {
 public:
  HealthWatch(HealthService* service, ServerQueue* queue,
              grpc::ServerCompletionQueue* cq)
      : service_(service), queue_(queue), cq_(cq), writer_(&context_) {}

  // Registers for the next Watch call. Called inside ServerQueue::BeginCall.
  void Request() {
    context_.AsyncNotifyWhenDone(&done_tag_);
    service_->RequestWatch(&context_, &request_, &writer_, cq_, cq_,
                           &accept_tag_);
  }

  // The service's status for this watch is `status`; `end`: the server
  // shuts down, the stream ends after sending it. Called under the
  // service's lock.
  void Notify(HealthService::ServingStatus status, bool end) {
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      pending_ = status;
      if (end) ending_ = true;
      actions = DecideLocked();
    }
    Run(actions);
  }

 private:
  struct Tag final : CompletionTag {
    enum Kind { kAccept, kWrite, kFinish, kDone };
    Tag(HealthWatch* watch, Kind kind) : watch(watch), kind(kind) {}
    void OnComplete(bool ok) override { watch->OnEvent(kind, ok); }
    HealthWatch* const watch;
    const Kind kind;
  };

  struct Actions {
    std::optional<HealthCheckResponse> write;
    std::optional<grpc::Status> finish;
  };

  void OnEvent(Tag::Kind kind, bool ok) {
    if (kind == Tag::kAccept) {
      if (!ok) {  // the server shuts down; the done notification never comes
        queue_->EndCall();
        delete this;
        return;
      }
      service_->SpawnWatch(queue_);  // the next client's call
      {
        absl::MutexLock lock(&mu_);
        grpc_ops_ = 1;  // the done notification
      }
      service_->Register(this, request_.service());  // sends the status
      return;
    }
    bool ended;
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      --grpc_ops_;
      if (kind == Tag::kWrite) {
        write_in_flight_ = false;
        if (!ok) aborted_ = true;  // the client is gone
      }
      if (kind == Tag::kDone && context_.IsCancelled()) aborted_ = true;
      actions = DecideLocked();
      ended = grpc_ops_ == 0 && finish_called_;
    }
    Run(actions);
    if (ended) {
      service_->Unregister(this);
      queue_->EndCall();
      delete this;
    }
  }

  // What to start next; the operations decided are counted in grpc_ops_.
  Actions DecideLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Actions a;
    if (finish_called_ || write_in_flight_) return a;
    if (aborted_) {
      a.finish = grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled");
    } else if (pending_.has_value() && *pending_ != last_sent_) {
      a.write.emplace();
      a.write->set_status(*pending_);
      last_sent_ = *pending_;
      pending_.reset();
      write_in_flight_ = true;
      ++grpc_ops_;
      return a;
    } else if (ending_) {
      a.finish = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                              "server is shutting down");
    } else {
      return a;
    }
    finish_called_ = true;
    ++grpc_ops_;
    return a;
  }

  void Run(const Actions& a) {
    if (a.write.has_value()) writer_.Write(*a.write, &write_tag_);
    if (a.finish.has_value()) writer_.Finish(*a.finish, &finish_tag_);
  }

  HealthService* const service_;
  ServerQueue* const queue_;
  grpc::ServerCompletionQueue* const cq_;
  grpc::ServerContext context_;
  HealthCheckRequest request_;
  grpc::ServerAsyncWriter<HealthCheckResponse> writer_;
  Tag accept_tag_{this, Tag::kAccept};
  Tag write_tag_{this, Tag::kWrite};
  Tag finish_tag_{this, Tag::kFinish};
  Tag done_tag_{this, Tag::kDone};

  absl::Mutex mu_;
  std::optional<HealthService::ServingStatus> pending_ ABSL_GUARDED_BY(mu_);
  // Nothing sent yet: UNKNOWN is never a status the service reports.
  HealthService::ServingStatus last_sent_ ABSL_GUARDED_BY(mu_) =
      HealthCheckResponse::UNKNOWN;
  int64_t grpc_ops_ ABSL_GUARDED_BY(mu_) = 0;  // done, write, finish
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool aborted_ ABSL_GUARDED_BY(mu_) = false;  // cancelled or write failed
  bool ending_ ABSL_GUARDED_BY(mu_) = false;   // server shutdown
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
};

void HealthService::SetServingStatus(const std::string& service, bool serving) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  serving_[service] = serving;
  NotifyLocked(&service);
}

void HealthService::Shutdown() {
  absl::MutexLock lock(&mu_);
  shut_down_ = true;
  for (auto& [service, serving] : serving_) serving = false;
  NotifyLocked(nullptr);
}

HealthService::ServingStatus HealthService::StatusLocked(
    const std::string& service) const {
  auto it = serving_.find(service);
  if (it == serving_.end()) {
    return shut_down_ ? HealthCheckResponse::NOT_SERVING
                      : HealthCheckResponse::SERVICE_UNKNOWN;
  }
  return it->second ? HealthCheckResponse::SERVING
                    : HealthCheckResponse::NOT_SERVING;
}

void HealthService::NotifyLocked(const std::string* service) {
  for (const auto& [watch, name] : watches_) {
    if (service == nullptr || name == *service) {
      watch->Notify(StatusLocked(name), shut_down_);
    }
  }
}

void HealthService::Register(HealthWatch* watch, const std::string& service) {
  absl::MutexLock lock(&mu_);
  watches_.emplace(watch, service);
  watch->Notify(StatusLocked(service), shut_down_);
}

void HealthService::Unregister(HealthWatch* watch) {
  absl::MutexLock lock(&mu_);
  watches_.erase(watch);
}

void HealthService::SpawnWatch(ServerQueue* queue) {
  queue->BeginCall([&](grpc::ServerCompletionQueue* cq) {
    (new HealthWatch(this, queue, cq))->Request();
  });
}

grpc::Status HealthService::Answer(const HealthCheckRequest& request,
                                   HealthCheckResponse* response) {
  absl::MutexLock lock(&mu_);
  if (!serving_.contains(request.service())) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "unknown service '" + request.service() + "'");
  }
  response->set_status(StatusLocked(request.service()));
  return grpc::Status::OK;
}

void HealthService::Serve(ServerQueue* queue) {
  UnaryMethod<HealthCheckRequest, HealthCheckResponse> check;
  check.request =
      [this](grpc::ServerContext* context, HealthCheckRequest* request,
             grpc::ServerAsyncResponseWriter<HealthCheckResponse>* writer,
             grpc::ServerCompletionQueue* cq, void* tag) {
        RequestCheck(context, request, writer, cq, cq, tag);
      };
  check.handle = [this](const grpc::ServerContext&,
                        const HealthCheckRequest& request,
                        HealthCheckResponse* response,
                        UnaryDone done) { done(Answer(request, response)); };
  ServeUnary(queue, std::move(check));
  SpawnWatch(queue);
}

}  // namespace ps
