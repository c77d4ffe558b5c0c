#include "common/completion_queue_thread.h"

namespace ps {

void PollCompletionQueue(grpc::CompletionQueue* queue) {
  void* tag;
  bool ok;
  while (queue->Next(&tag, &ok)) {
    static_cast<CompletionTag*>(tag)->OnComplete(ok);
  }
}

CompletionQueueThread::CompletionQueueThread()
    : thread_([this] { PollCompletionQueue(&queue_); }) {}

CompletionQueueThread::~CompletionQueueThread() {
  queue_.Shutdown();
  thread_.join();
}

}  // namespace ps
