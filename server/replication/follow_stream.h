// The backup's end of one Follow stream (replication.proto), on the server's
// completion queue (server/server_queue.h).
//
// Two phases. First the caller's thread (the backup's follow thread) drives
// the stream one blocking operation at a time: the hello, then the
// snapshot's pieces, whose restore is too long for the queue's thread. Then
// Serve hands the stream to the queue's thread: each message read is handled
// there and its reply written, so an entry costs the backup no thread
// hand-off (the thread that polls gRPC reads, applies and acknowledges it).
// A follow thread blocked in gRPC's sync API took turns at polling with the
// queue's thread instead (epoll1), and every other entry arrived on the
// thread that does not handle it.
//
// Use: Open; Write / Read (blocking); optionally Serve; then Finish, which
// returns once the call is over. All on one thread; the stream is then
// destroyed. The context cancels it from any thread (TryCancel).
#ifndef PS_SERVER_REPLICATION_FOLLOW_STREAM_H_
#define PS_SERVER_REPLICATION_FOLLOW_STREAM_H_

#include <deque>
#include <functional>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/completion_tag.h"
#include "grpcpp/alarm.h"
#include "grpcpp/grpcpp.h"
#include "server/replication/replication.grpc.pb.h"
#include "server/server_queue.h"

namespace ps::replication {

class FollowStream {
 public:
  // What a handled message asks for.
  struct Reply {
    // Written back, in the order of the messages (an ack, or a refusal).
    std::optional<FollowRequest> message;
    // Not OK: the stream ends with this status once `message` is written.
    absl::Status end;
  };
  // Handles one message on the queue's thread; may change it (it is reused
  // for the next read once this returns).
  using Handler = std::function<Reply(FollowMessage* message)>;

  // Starts the call on `queue` and waits until it started; nullptr when the
  // queue is stopping. `stub`, `context` and `queue` outlive the stream.
  static std::unique_ptr<FollowStream> Open(Replication::Stub* stub,
                                            grpc::ClientContext* context,
                                            ServerQueue* queue);
  // REQUIRES: Finish returned.
  ~FollowStream() = default;

  FollowStream(const FollowStream&) = delete;
  FollowStream& operator=(const FollowStream&) = delete;

  // Blocking; false once the stream is broken or over. Before Serve only.
  bool Write(const FollowRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
  bool Read(FollowMessage* message) ABSL_LOCKS_EXCLUDED(mu_);

  // From now on every message read goes to `handler` on the queue's thread
  // until a read fails, a write fails or a reply ends the stream. Returns at
  // once. A reply that ends the stream with a message (a refusal of the
  // term) is written, then the primary gets up to kLinger to read it and end
  // the call itself before the stream is cancelled: a cancel right after the
  // write could discard the message before the primary read it.
  void Serve(Handler handler) ABSL_LOCKS_EXCLUDED(mu_);

  // With `why` not OK: cancels the stream now. Otherwise waits for it to end
  // by itself (after Serve; before it, a failed Read ended it). Returns when
  // the call is over: `why` if not OK, else the reply's status that ended
  // it, else the call's status (the primary's).
  absl::Status Finish(absl::Status why = absl::OkStatus())
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  static constexpr absl::Duration kLinger = absl::Milliseconds(500);

  enum class Kind { kStart, kRead, kWrite, kAlarm, kFinish };
  struct Tag final : CompletionTag {
    Tag(FollowStream* stream, Kind kind) : stream(stream), kind(kind) {}
    void OnComplete(bool ok) override { stream->OnEvent(kind, ok); }
    FollowStream* const stream;
    const Kind kind;
  };

  FollowStream(grpc::ClientContext* context, ServerQueue* queue)
      : context_(context), queue_(queue) {}

  // Serving, the last reply written: reads (and drops) until the primary
  // ends the call, or cancels it after kLinger.
  void LingerLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void OnEvent(Kind kind, bool ok) ABSL_LOCKS_EXCLUDED(mu_);
  // Serving: a read succeeded; handles its message (outside mu_).
  void OnServedRead() ABSL_LOCKS_EXCLUDED(mu_);
  void StartReadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartWriteLocked(const FollowRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Serving: writes the next reply, or ends the stream after the last one
  // when a reply asked for it.
  void PumpWritesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The stream is over (`cancel`: cancelled from here); records `why`
  // unless an error is recorded already.
  void EndLocked(absl::Status why, bool cancel)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts gRPC's Finish once the stream ended and nothing is in flight.
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  grpc::ClientContext* const context_;
  ServerQueue* const queue_;
  grpc::CompletionQueue* cq_ = nullptr;  // the server queue's
  std::unique_ptr<grpc::ClientAsyncReaderWriter<FollowRequest, FollowMessage>>
      call_;
  grpc::Alarm linger_alarm_;
  Tag start_tag_{this, Kind::kStart};
  Tag read_tag_{this, Kind::kRead};
  Tag write_tag_{this, Kind::kWrite};
  Tag alarm_tag_{this, Kind::kAlarm};
  Tag finish_tag_{this, Kind::kFinish};
  // The call is over (Finish's tag came, the queue's call count released).
  absl::Notification finished_;

  absl::Mutex mu_;
  // Serving: the message read (only the queue's thread touches it then).
  FollowMessage in_;
  FollowMessage* read_into_ ABSL_GUARDED_BY(mu_) = nullptr;
  FollowRequest out_ ABSL_GUARDED_BY(mu_);  // the write in flight
  Handler handler_ ABSL_GUARDED_BY(mu_);
  bool serving_ ABSL_GUARDED_BY(mu_) = false;
  bool start_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool read_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool read_ok_ ABSL_GUARDED_BY(mu_) = false;   // the last read's
  bool write_ok_ ABSL_GUARDED_BY(mu_) = false;  // the last write's
  std::deque<FollowRequest> outbox_ ABSL_GUARDED_BY(mu_);
  // A reply asked to end the stream once the outbox is written.
  bool end_after_outbox_ ABSL_GUARDED_BY(mu_) = false;
  bool lingering_ ABSL_GUARDED_BY(mu_) = false;
  bool alarm_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_started_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);  // the first error
  grpc::Status call_status_ ABSL_GUARDED_BY(mu_);  // Finish's
};

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_FOLLOW_STREAM_H_
