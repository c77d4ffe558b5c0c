#include "server/health_service.h"

#include <utility>

#include "server/unary_call.h"

namespace ps {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

void HealthService::SetServingStatus(const std::string& service, bool serving) {
  absl::MutexLock lock(&mu_);
  if (!shut_down_) serving_[service] = serving;
}

void HealthService::Shutdown() {
  absl::MutexLock lock(&mu_);
  shut_down_ = true;
  for (auto& [service, serving] : serving_) serving = false;
}

grpc::Status HealthService::Answer(const HealthCheckRequest& request,
                                   HealthCheckResponse* response) {
  absl::MutexLock lock(&mu_);
  auto it = serving_.find(request.service());
  if (it == serving_.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "unknown service '" + request.service() + "'");
  }
  response->set_status(it->second ? HealthCheckResponse::SERVING
                                  : HealthCheckResponse::NOT_SERVING);
  return grpc::Status::OK;
}

void HealthService::Serve(ServerQueue* queue) {
  UnaryMethod<HealthCheckRequest, HealthCheckResponse> method;
  method.request =
      [this](grpc::ServerContext* context, HealthCheckRequest* request,
             grpc::ServerAsyncResponseWriter<HealthCheckResponse>* writer,
             grpc::ServerCompletionQueue* cq, void* tag) {
        RequestCheck(context, request, writer, cq, cq, tag);
      };
  method.handle = [this](const grpc::ServerContext&,
                         const HealthCheckRequest& request,
                         HealthCheckResponse* response,
                         UnaryDone done) { done(Answer(request, response)); };
  ServeUnary(queue, std::move(method));
}

}  // namespace ps
