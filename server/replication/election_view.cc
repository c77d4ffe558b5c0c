#include "server/replication/election_view.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/completion_tag.h"

namespace ps::replication {
namespace {

constexpr absl::Duration kMinBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(1);
// How often the watch thread looks for the watch's next event. It never
// waits inside gRPC: with gRPC's epoll1 poller a thread blocked on any
// completion queue takes turns at polling every connection of the process,
// so a watch thread blocked in Read would pick up half of a server's (or a
// client's) data-path events and hand each over to the thread that owns
// it, a wake-up per message (server/server_queue.h). The cost is up to this
// much delay on an election change.
constexpr absl::Duration kWatchPoll = absl::Milliseconds(5);

Candidate FromKeyValue(const mvccpb::KeyValue& kv) {
  return Candidate{kv.key(), kv.value(), kv.create_revision(), kv.lease()};
}

}  // namespace

std::string DescribeLeader(const std::optional<Candidate>& leader) {
  if (!leader.has_value()) return "none";
  return absl::StrCat(leader->key, " (term ", leader->create_revision, ", value '",
                      leader->value, "')");
}

ElectionView::ElectionView(const EtcdClient* client, std::string prefix,
                           std::function<void()> on_change)
    : client_(client), prefix_(std::move(prefix)), on_change_(std::move(on_change)) {
  thread_ = std::thread([this] { Run(); });
}

ElectionView::~ElectionView() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (watch_context_ != nullptr) watch_context_->TryCancel();
  }
  thread_.join();
}

ElectionSnapshot ElectionView::snapshot() const {
  absl::MutexLock lock(&mu_);
  return snapshot_;
}

absl::StatusOr<ElectionSnapshot> ElectionView::WaitFor(
    const std::function<bool(const ElectionSnapshot&)>& done,
    absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done(snapshot_); };
  if (!mu_.AwaitWithTimeout(absl::Condition(&ready), timeout)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "election ", prefix_, ": condition not reached after ",
        absl::FormatDuration(timeout), "; leader ", DescribeLeader(snapshot_.leader),
        " at revision ", snapshot_.revision,
        snapshot_.synced ? ""
        : snapshot_.error.ok()
            ? ", not synced: etcd has not answered yet"
            : absl::StrCat(", not synced: ", snapshot_.error.ToString())));
  }
  return snapshot_;
}

void ElectionView::Publish() {
  snapshot_.leader.reset();
  if (!snapshot_.candidates.empty()) snapshot_.leader = snapshot_.candidates.begin()->second;
}

void ElectionView::Changed() {
  if (on_change_) on_change_();
}

void ElectionView::ApplyEvent(const mvccpb::Event& event, int64_t revision) {
  const mvccpb::KeyValue& kv = event.kv();
  if (event.type() == mvccpb::Event::PUT) {
    snapshot_.candidates[kv.create_revision()] = FromKeyValue(kv);
  } else {
    // A DELETE carries the key only; find it by name.
    for (auto it = snapshot_.candidates.begin(); it != snapshot_.candidates.end(); ++it) {
      if (it->second.key == kv.key()) {
        snapshot_.candidates.erase(it);
        break;
      }
    }
  }
  snapshot_.revision = std::max(snapshot_.revision, revision);
}

absl::Status ElectionView::Resync() {
  etcdserverpb::RangeRequest request;
  request.set_key(prefix_);
  request.set_range_end(PrefixRangeEnd(prefix_));
  absl::StatusOr<etcdserverpb::RangeResponse> range = client_->Range(request);
  if (!range.ok()) return range.status();
  {
    absl::MutexLock lock(&mu_);
    snapshot_.candidates.clear();
    for (const mvccpb::KeyValue& kv : range->kvs()) {
      snapshot_.candidates[kv.create_revision()] = FromKeyValue(kv);
    }
    snapshot_.revision = range->header().revision();
    snapshot_.synced = true;
    snapshot_.error = absl::OkStatus();
    Publish();
  }
  Changed();
  return absl::OkStatus();
}

bool ElectionView::AwaitWatchEvent(grpc::CompletionQueue* queue) {
  void* tag = nullptr;
  bool ok = false;
  while (true) {
    // Zero-timeout polls only: see kWatchPoll.
    switch (queue->AsyncNext(&tag, &ok, PollWithoutWaiting())) {
      case grpc::CompletionQueue::GOT_EVENT:
        return ok;  // one operation is in flight at a time: this is it
      case grpc::CompletionQueue::SHUTDOWN:
        return false;
      case grpc::CompletionQueue::TIMEOUT:
        break;
    }
    absl::MutexLock lock(&mu_);
    // Once stopping, the call is cancelled: its operation ends at once.
    mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                         stopping_ ? absl::Milliseconds(1) : kWatchPoll);
  }
}

absl::Status ElectionView::Session() {
  if (absl::Status s = Resync(); !s.ok()) return s;
  grpc::ClientContext context;
  context.set_wait_for_ready(true);  // see EtcdClient: waiting calls drive reconnection
  int64_t start_revision;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::CancelledError("stopping");
    watch_context_ = &context;
    start_revision = snapshot_.revision + 1;
  }
  // The tags only name the operation in flight (one at a time).
  enum Op : uintptr_t { kStart = 1, kWrite, kRead, kFinish };
  auto tag = [](Op op) { return reinterpret_cast<void*>(op); };
  grpc::CompletionQueue queue;
  auto stream = client_->watch_stub().PrepareAsyncWatch(&context, &queue);
  stream->StartCall(tag(kStart));
  etcdserverpb::WatchRequest request;
  etcdserverpb::WatchCreateRequest* create = request.mutable_create_request();
  create->set_key(prefix_);
  create->set_range_end(PrefixRangeEnd(prefix_));
  create->set_start_revision(start_revision);
  absl::Status ended;
  etcdserverpb::WatchResponse response;
  bool live = AwaitWatchEvent(&queue);
  if (live) {
    stream->Write(request, tag(kWrite));
    live = AwaitWatchEvent(&queue);
  }
  while (live) {
    stream->Read(&response, tag(kRead));
    if (!AwaitWatchEvent(&queue)) break;
    if (response.canceled() || response.compact_revision() > 0) {
      ended = absl::AbortedError(absl::StrCat(
          "watch of ", prefix_, " canceled by etcd (compact revision ",
          response.compact_revision(), "): ", response.cancel_reason()));
      break;
    }
    if (response.events_size() == 0) continue;
    {
      absl::MutexLock lock(&mu_);
      for (const mvccpb::Event& event : response.events()) {
        ApplyEvent(event, event.kv().mod_revision());
      }
      Publish();
    }
    Changed();
  }
  context.TryCancel();
  grpc::Status finish;
  stream->Finish(&finish, tag(kFinish));
  AwaitWatchEvent(&queue);
  queue.Shutdown();
  void* drained_tag = nullptr;
  bool drained_ok = false;
  while (queue.Next(&drained_tag, &drained_ok)) {
  }
  {
    absl::MutexLock lock(&mu_);
    watch_context_ = nullptr;
  }
  if (!ended.ok()) return ended;
  return absl::UnavailableError(absl::StrCat("etcd ", client_->target(), ": watch of ",
                                             prefix_, " ended: ", finish.error_message()));
}

void ElectionView::Run() {
  absl::Duration backoff = kMinBackoff;
  while (true) {
    const auto started = std::chrono::steady_clock::now();
    absl::Status ended = Session();
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      snapshot_.synced = false;
      snapshot_.error = ended;
    }
    Changed();
    // A session that lived a while was healthy: retry fast after it.
    if (std::chrono::steady_clock::now() - started > std::chrono::seconds(5)) {
      backoff = kMinBackoff;
    }
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), backoff);
    if (stopping_) return;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

}  // namespace ps::replication
