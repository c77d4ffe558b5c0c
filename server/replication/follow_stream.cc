#include "server/replication/follow_stream.h"

#include <utility>

#include "absl/time/clock.h"

namespace ps::replication {

std::unique_ptr<FollowStream> FollowStream::Open(Replication::Stub* stub,
                                                 grpc::ClientContext* context,
                                                 ServerQueue* queue) {
  std::unique_ptr<FollowStream> stream(new FollowStream(context, queue));
  FollowStream* const s = stream.get();
  const bool began = queue->BeginCall([&](grpc::ServerCompletionQueue* cq) {
    absl::MutexLock lock(&s->mu_);
    s->cq_ = cq;
    s->call_ = stub->PrepareAsyncFollow(context, cq);
    s->start_in_flight_ = true;
    s->call_->StartCall(&s->start_tag_);
  });
  if (!began) return nullptr;
  // StartCall's operation set is the writes': no Write before it is done.
  absl::MutexLock lock(&s->mu_);
  s->mu_.Await(absl::Condition(
      +[](bool* in_flight) { return !*in_flight; }, &s->start_in_flight_));
  return stream;
}

bool FollowStream::Write(const FollowRequest& request) {
  absl::MutexLock lock(&mu_);
  if (ended_) return false;
  StartWriteLocked(request);
  mu_.Await(absl::Condition(
      +[](bool* in_flight) { return !*in_flight; }, &write_in_flight_));
  return write_ok_;
}

bool FollowStream::Read(FollowMessage* message) {
  absl::MutexLock lock(&mu_);
  if (ended_) return false;
  read_into_ = message;
  StartReadLocked();
  mu_.Await(absl::Condition(
      +[](bool* in_flight) { return !*in_flight; }, &read_in_flight_));
  // A failed read is the stream's end: its status is Finish's.
  if (!read_ok_) ended_ = true;
  return read_ok_;
}

void FollowStream::Serve(Handler handler) {
  absl::MutexLock lock(&mu_);
  serving_ = true;
  handler_ = std::move(handler);
  read_into_ = &in_;
  if (!ended_) StartReadLocked();
}

absl::Status FollowStream::Finish(absl::Status why) {
  {
    absl::MutexLock lock(&mu_);
    if (!why.ok()) {
      EndLocked(std::move(why), /*cancel=*/true);
    } else if (!serving_) {
      // The caller is done with a stream it drove itself (normally after a
      // failed read, which ended it already).
      EndLocked(absl::OkStatus(), /*cancel=*/true);
    }
    MaybeFinishLocked();
  }
  finished_.WaitForNotification();
  absl::MutexLock lock(&mu_);
  if (!end_status_.ok()) return end_status_;
  return absl::Status(static_cast<absl::StatusCode>(call_status_.error_code()),
                      call_status_.error_message());
}

void FollowStream::OnEvent(Kind kind, bool ok) {
  if (kind == Kind::kFinish) {
    // Nothing of this object is touched after the notification: the
    // follow thread destroys it once Finish returns.
    queue_->EndCall();
    finished_.Notify();
    return;
  }
  bool handle_message = false;
  {
    absl::MutexLock lock(&mu_);
    switch (kind) {
      case Kind::kStart:
        start_in_flight_ = false;  // a failed start fails the next operation
        break;
      case Kind::kRead:
        read_in_flight_ = false;
        read_ok_ = ok;
        if (serving_) {
          if (!ok) {
            EndLocked(absl::OkStatus(), /*cancel=*/false);  // the primary's end
          } else if (lingering_) {
            if (!ended_) StartReadLocked();  // sent before it read the refusal
          } else {
            handle_message = !ended_;
          }
        }
        break;
      case Kind::kWrite:
        write_in_flight_ = false;
        write_ok_ = ok;
        if (serving_) {
          if (!ok) {
            // The stream is gone (e.g. the primary cancelled it after its
            // ack timeout); cancelling ends the read still in flight.
            EndLocked(absl::OkStatus(), /*cancel=*/true);
          } else {
            PumpWritesLocked();
          }
        }
        break;
      case Kind::kAlarm:
        alarm_in_flight_ = false;
        // Fired (not cancelled): the primary did not end the call in time.
        if (ok) EndLocked(absl::OkStatus(), /*cancel=*/true);
        break;
      case Kind::kFinish:
        break;
    }
    MaybeFinishLocked();
  }
  if (handle_message) OnServedRead();
}

void FollowStream::OnServedRead() {
  Handler* handler;
  {
    absl::MutexLock lock(&mu_);
    handler = &handler_;  // set once, before the first served read
  }
  // Outside mu_: the handler applies entries and may wait for the shard.
  // Only this thread touches in_ while serving.
  Reply reply = (*handler)(&in_);
  absl::MutexLock lock(&mu_);
  if (reply.message.has_value()) outbox_.push_back(*std::move(reply.message));
  if (!reply.end.ok()) {
    if (end_status_.ok()) end_status_ = std::move(reply.end);
    end_after_outbox_ = true;
  } else if (!ended_) {
    StartReadLocked();
  }
  PumpWritesLocked();
  MaybeFinishLocked();
}

void FollowStream::StartReadLocked() {
  read_in_flight_ = true;
  call_->Read(read_into_, &read_tag_);
}

void FollowStream::StartWriteLocked(const FollowRequest& request) {
  write_in_flight_ = true;
  out_ = request;
  call_->Write(out_, &write_tag_);
}

void FollowStream::PumpWritesLocked() {
  if (ended_ || write_in_flight_) return;
  if (!outbox_.empty()) {
    StartWriteLocked(outbox_.front());
    outbox_.pop_front();
  } else if (end_after_outbox_ && !lingering_) {
    LingerLocked();
  }
}

void FollowStream::LingerLocked() {
  lingering_ = true;
  alarm_in_flight_ = true;
  linger_alarm_.Set(cq_, absl::ToChronoTime(absl::Now() + kLinger),
                    &alarm_tag_);
  if (!read_in_flight_) StartReadLocked();
}

void FollowStream::EndLocked(absl::Status why, bool cancel) {
  if (!why.ok() && end_status_.ok()) end_status_ = std::move(why);
  if (ended_) return;
  ended_ = true;
  if (cancel) context_->TryCancel();
  if (alarm_in_flight_) linger_alarm_.Cancel();  // its tag still comes
}

void FollowStream::MaybeFinishLocked() {
  if (!ended_ || finish_started_ || start_in_flight_ || read_in_flight_ ||
      write_in_flight_ || alarm_in_flight_) {
    return;
  }
  finish_started_ = true;
  call_->Finish(&call_status_, &finish_tag_);
}

}  // namespace ps::replication
