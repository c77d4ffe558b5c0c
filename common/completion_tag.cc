#include "common/completion_tag.h"

namespace ps {

void PollCompletionQueue(grpc::CompletionQueue* queue) {
  void* tag;
  bool ok;
  while (queue->Next(&tag, &ok)) {
    static_cast<CompletionTag*>(tag)->OnComplete(ok);
  }
}

}  // namespace ps
