#include "server/server_queue.h"

#include "common/completion_tag.h"

namespace ps {

ServerQueue::~ServerQueue() { Stop(); }

void ServerQueue::AddTo(grpc::ServerBuilder* builder) {
  queue_ = builder->AddCompletionQueue();
}

void ServerQueue::Start() {
  thread_ = std::thread([queue = queue_.get()] { PollCompletionQueue(queue); });
}

bool ServerQueue::BeginCall(
    absl::FunctionRef<void(grpc::ServerCompletionQueue*)> request) {
  // Under mu_, so Stop() cannot shut the queue down meanwhile.
  absl::MutexLock lock(&mu_);
  if (!accepting_) return false;
  ++live_calls_;
  request(queue_.get());
  return true;
}

void ServerQueue::EndCall() {
  absl::MutexLock lock(&mu_);
  --live_calls_;
}

void ServerQueue::Stop() {
  {
    absl::MutexLock lock(&mu_);
    accepting_ = false;
    mu_.Await(absl::Condition(
        +[](int64_t* live) { return *live == 0; }, &live_calls_));
  }
  if (queue_ == nullptr) return;
  queue_->Shutdown();
  if (thread_.joinable()) {
    thread_.join();
  } else {
    void* tag;  // never started: drain here (nothing was requested)
    bool ok;
    while (queue_->Next(&tag, &ok)) {
    }
  }
  queue_.reset();
}

}  // namespace ps
