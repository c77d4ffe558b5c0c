// A unary RPC served on a ServerQueue (server/server_queue.h): one
// UnaryCall object waits for the next call of its method, spawns the next
// waiting one when a call arrives, runs the handler and answers.
//
//   ServeUnary<Request, Response>(queue,
//       [service](grpc::ServerContext* context, Request* request,
//                 grpc::ServerAsyncResponseWriter<Response>* writer,
//                 grpc::ServerCompletionQueue* cq, void* tag) {
//         service->RequestMethod(context, request, writer, cq, cq, tag);
//       },
//       [](const grpc::ServerContext& context, const Request& request,
//          Response* response, UnaryDone done) { ...; done(status); });
//
// The handler runs on the queue's thread and must not block; it calls
// `done` exactly once, at once or later from any thread (a parked barrier,
// a checkpoint thread), and must not touch `response` after that.
#ifndef PS_SERVER_UNARY_CALL_H_
#define PS_SERVER_UNARY_CALL_H_

#include <functional>
#include <memory>
#include <utility>

#include "common/completion_tag.h"
#include "grpcpp/grpcpp.h"
#include "server/server_queue.h"

namespace ps {

using UnaryDone = std::function<void(const grpc::Status& status)>;

template <typename Request, typename Response>
struct UnaryMethod {
  // Asks gRPC for the next call (tag on the given queue).
  std::function<void(grpc::ServerContext*, Request*,
                     grpc::ServerAsyncResponseWriter<Response>*,
                     grpc::ServerCompletionQueue*, void*)>
      request;
  std::function<void(const grpc::ServerContext&, const Request&, Response*,
                     UnaryDone)>
      handle;
};

template <typename Request, typename Response>
class UnaryCall final : public CompletionTag {
 public:
  // Makes one object wait for the method's next call (nothing once the
  // queue stops).
  static void Spawn(
      ServerQueue* queue,
      std::shared_ptr<const UnaryMethod<Request, Response>> method) {
    queue->BeginCall([&](grpc::ServerCompletionQueue* cq) {
      auto* call = new UnaryCall(queue, method);
      method->request(&call->context_, &call->request_, &call->writer_, cq,
                      call);
    });
  }

  void OnComplete(bool ok) override {
    if (!answering_ && ok) {
      answering_ = true;
      Spawn(queue_, method_);  // the next caller's call
      method_->handle(context_, request_, &response_,
                      [this](const grpc::Status& status) {
                        writer_.Finish(response_, status, this);
                      });
      return;
    }
    // The answer went out (or failed), or no call came (shutdown).
    queue_->EndCall();
    delete this;
  }

 private:
  UnaryCall(ServerQueue* queue,
            std::shared_ptr<const UnaryMethod<Request, Response>> method)
      : queue_(queue), method_(std::move(method)), writer_(&context_) {}

  ServerQueue* const queue_;
  const std::shared_ptr<const UnaryMethod<Request, Response>> method_;
  grpc::ServerContext context_;
  Request request_;
  Response response_;
  grpc::ServerAsyncResponseWriter<Response> writer_;
  bool answering_ = false;  // the call arrived; only the queue thread reads
};

// Serves `method` on `queue` from now on (call after BuildAndStart).
template <typename Request, typename Response>
void ServeUnary(ServerQueue* queue, UnaryMethod<Request, Response> method) {
  UnaryCall<Request, Response>::Spawn(
      queue, std::make_shared<const UnaryMethod<Request, Response>>(
                 std::move(method)));
}

}  // namespace ps

#endif  // PS_SERVER_UNARY_CALL_H_
