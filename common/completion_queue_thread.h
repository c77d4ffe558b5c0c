// A gRPC completion queue polled by one thread of ours, for the DataStream
// ends on gRPC's async API (client/server_connection.cc,
// server/data_stream.cc).
//
// Why our own thread: the thread that waits in the queue is the one that
// reads the socket and then runs the handler, so a small message costs one
// wake-up. The callback API hands each event from the polling thread to
// another gRPC thread first (measured in tests/bench/TRANSPORT_RESULTS.md).
#ifndef PS_COMMON_COMPLETION_QUEUE_THREAD_H_
#define PS_COMMON_COMPLETION_QUEUE_THREAD_H_

#include <memory>
#include <thread>

#include "grpcpp/grpcpp.h"

namespace ps {

// What a tag on a queue polled by PollCompletionQueue must be: OnComplete
// runs on the polling thread with the operation's `ok`. It may delete the
// object that holds the tag.
class CompletionTag {
 public:
  virtual void OnComplete(bool ok) = 0;

 protected:
  ~CompletionTag() = default;
};

// Runs OnComplete for every event of `queue` (every tag on it must be a
// CompletionTag*) until the queue is shut down and drained.
void PollCompletionQueue(grpc::CompletionQueue* queue);

// A completion queue and the thread that polls it.
class CompletionQueueThread {
 public:
  CompletionQueueThread();
  // Shuts the queue down and joins the thread. REQUIRES: nothing starts an
  // operation on the queue any more, and this runs on another thread.
  ~CompletionQueueThread();

  CompletionQueueThread(const CompletionQueueThread&) = delete;
  CompletionQueueThread& operator=(const CompletionQueueThread&) = delete;

  grpc::CompletionQueue* queue() { return &queue_; }

 private:
  grpc::CompletionQueue queue_;
  std::thread thread_;
};

}  // namespace ps

#endif  // PS_COMMON_COMPLETION_QUEUE_THREAD_H_
