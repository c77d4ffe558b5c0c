// Tags for gRPC completion queues that our own threads poll (the async API
// ends of every RPC: client/completion_poller.h, server/server_queue.h).
//
// Why our own threads and not the callback API: the thread that waits in the
// queue is the one that reads the socket and then runs the handler, so a
// small message costs one wake-up; the callback API hands each event from
// the polling thread to another gRPC thread first (measured in
// tests/bench/TRANSPORT_RESULTS.md, round 5).
#ifndef PS_COMMON_COMPLETION_TAG_H_
#define PS_COMMON_COMPLETION_TAG_H_

#include <chrono>

#include "grpcpp/grpcpp.h"

namespace ps {

// What every tag on such a queue is: OnComplete runs on the polling thread
// with the operation's `ok`. It may delete the object that holds the tag.
class CompletionTag {
 public:
  virtual void OnComplete(bool ok) = 0;

 protected:
  ~CompletionTag() = default;
};

// Runs OnComplete for every event of `queue` (every tag on it must be a
// CompletionTag*) until the queue is shut down and drained.
void PollCompletionQueue(grpc::CompletionQueue* queue);

// The deadline for CompletionQueue::AsyncNext that looks for an event
// without waiting: for threads that must not take part in polling the
// process's connections (with gRPC's epoll1 poller a thread waiting on any
// queue takes turns at polling all of them, and hands each event it picks
// up to the thread that owns it). gRPC rounds a deadline up to the next
// millisecond, so AsyncNext(now) waits up to 1 ms in epoll_wait; a deadline
// in the past polls once with a zero timeout.
inline std::chrono::system_clock::time_point PollWithoutWaiting() {
  return std::chrono::system_clock::time_point();
}

}  // namespace ps

#endif  // PS_COMMON_COMPLETION_TAG_H_
