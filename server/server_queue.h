// The completion queue every RPC of a ps_server runs on, the one thread that
// polls it, and the bookkeeping that makes shutting it down safe.
//
// One queue and one thread for all services: with gRPC's epoll1 poller
// every thread that waits on any completion queue of the process takes its
// turn at epoll_wait, and the role moves on each event, so every other
// polling thread (a second queue, or the callback API's threads, which
// gRPC's built-in health service alone would start) adds wake-ups to every
// message. See tests/bench/TRANSPORT_RESULTS.md.
//
// Calls: every object that requests a call or has an operation in flight is
// a live call (BeginCall .. EndCall). Stop() waits for all of them to end
// before it shuts the queue down, because gRPC aborts the process when an
// operation starts on a queue that is shut down.
//
// Lifecycle: AddTo(&builder); server = builder.BuildAndStart(); request the
// first calls; Start(); ... ; server->Shutdown(deadline); Stop().
// Thread-safe.
#ifndef PS_SERVER_SERVER_QUEUE_H_
#define PS_SERVER_SERVER_QUEUE_H_

#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"

namespace ps {

class ServerQueue {
 public:
  ServerQueue() = default;
  // Stop()s, if that has not happened.
  ~ServerQueue();

  ServerQueue(const ServerQueue&) = delete;
  ServerQueue& operator=(const ServerQueue&) = delete;

  // Adds the queue to `builder`. Call once, before BuildAndStart.
  void AddTo(grpc::ServerBuilder* builder);
  // Starts the polling thread. Every tag on the queue is a CompletionTag
  // (common/completion_tag.h).
  void Start();

  // Counts a new live call and runs `request` (which asks gRPC for a call on
  // queue()), unless Stop() began: then returns false without running it.
  bool BeginCall(absl::FunctionRef<void(grpc::ServerCompletionQueue*)> request);
  // A live call has no operation in flight and will start none.
  void EndCall();

  // Waits until every live call ended, then shuts the queue down and joins
  // the thread. Idempotent. REQUIRES: Start() never ran, or
  // grpc::Server::Shutdown() returned (it fails every requested call and
  // cancels every running one, so each ends).
  void Stop();

 private:
  std::unique_ptr<grpc::ServerCompletionQueue> queue_;
  std::thread thread_;

  absl::Mutex mu_;
  int64_t live_calls_ ABSL_GUARDED_BY(mu_) = 0;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;  // false once Stop() began
};

}  // namespace ps

#endif  // PS_SERVER_SERVER_QUEUE_H_
