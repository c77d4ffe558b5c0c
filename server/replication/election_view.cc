#include "server/replication/election_view.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ps::replication {
namespace {

constexpr absl::Duration kMinBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(1);

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
        snapshot_.synced ? "" : absl::StrCat(", not synced: ", snapshot_.error.ToString())));
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
  auto stream = client_->watch_stub().Watch(&context);
  etcdserverpb::WatchRequest request;
  etcdserverpb::WatchCreateRequest* create = request.mutable_create_request();
  create->set_key(prefix_);
  create->set_range_end(PrefixRangeEnd(prefix_));
  create->set_start_revision(start_revision);
  absl::Status ended;
  etcdserverpb::WatchResponse response;
  if (stream->Write(request)) {
    while (stream->Read(&response)) {
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
  }
  context.TryCancel();
  grpc::Status finish = stream->Finish();
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
