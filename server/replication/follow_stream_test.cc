#include "server/replication/follow_stream.h"

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace ps::replication {
namespace {

// A primary whose Follow method runs the test's script (gRPC's sync API:
// its own threads, unlike the stream under test).
class ScriptedPrimary final : public Replication::Service {
 public:
  using Script = std::function<grpc::Status(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<FollowMessage, FollowRequest>*)>;
  explicit ScriptedPrimary(Script script) : script_(std::move(script)) {}

  grpc::Status Follow(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<FollowMessage, FollowRequest>* stream) override {
    return script_(context, stream);
  }

 private:
  const Script script_;
};

FollowMessage Entries(int64_t term, uint64_t seq) {
  FollowMessage message;
  message.set_term(term);
  message.add_entries()->set_seq(seq);
  return message;
}

// A handler's refusal of the term: written, then the stream ends.
FollowStream::Reply Refusal(const std::string& why) {
  FollowStream::Reply reply;
  FollowRequest refuse;
  refuse.set_status_code(static_cast<int>(absl::StatusCode::kAborted));
  refuse.set_status_message(why);
  reply.message = refuse;
  reply.end = absl::AbortedError(why);
  return reply;
}

FollowRequest Ack(uint64_t seq) {
  FollowRequest ack;
  ack.set_applied_seq(seq);
  return ack;
}

// One process: the scripted primary and a server queue (the backup's) on
// one gRPC server, and a client channel to it.
class FollowStreamTest : public ::testing::Test {
 protected:
  void Start(ScriptedPrimary::Script script) {
    primary_ = std::make_unique<ScriptedPrimary>(std::move(script));
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(primary_.get());
    queue_.AddTo(&builder);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    queue_.Start();
    stub_ = Replication::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(port),
        grpc::InsecureChannelCredentials()));
  }

  // The stream, its (empty) hello written; nullptr on a failure.
  std::unique_ptr<FollowStream> OpenWithHello(grpc::ClientContext* context) {
    std::unique_ptr<FollowStream> stream =
        FollowStream::Open(stub_.get(), context, &queue_);
    if (stream == nullptr || !stream->Write(FollowRequest())) return nullptr;
    return stream;
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    queue_.Stop();
  }

  std::unique_ptr<ScriptedPrimary> primary_;
  ServerQueue queue_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Replication::Stub> stub_;
};

TEST_F(FollowStreamTest, BlockingPhaseThenEntriesAckedInOrderOnTheQueue) {
  std::vector<uint64_t> acks_seen;  // by the primary
  std::string hello_id;
  Start([&](grpc::ServerContext*,
            grpc::ServerReaderWriter<FollowMessage, FollowRequest>* stream) {
    FollowRequest in;
    if (!stream->Read(&in)) return grpc::Status(grpc::StatusCode::INTERNAL, "");
    hello_id = in.replica_id();
    FollowMessage piece;
    piece.set_term(7);
    piece.set_snapshot("state");
    piece.set_snapshot_last(true);
    stream->Write(piece);
    for (uint64_t seq = 1; seq <= 3; ++seq) stream->Write(Entries(7, seq));
    for (int i = 0; i < 3 && stream->Read(&in); ++i) {
      acks_seen.push_back(in.applied_seq());
    }
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "term over");
  });
  grpc::ClientContext context;
  std::unique_ptr<FollowStream> stream =
      FollowStream::Open(stub_.get(), &context, &queue_);
  ASSERT_NE(stream, nullptr);
  FollowRequest hello;
  hello.set_replica_id("backup-1");
  ASSERT_TRUE(stream->Write(hello));
  FollowMessage snapshot;
  ASSERT_TRUE(stream->Read(&snapshot));
  EXPECT_EQ(snapshot.snapshot(), "state");

  const std::thread::id test_thread = std::this_thread::get_id();
  absl::Mutex mu;
  std::vector<uint64_t> handled;
  bool on_test_thread = false;
  stream->Serve([&](FollowMessage* message) {
    absl::MutexLock lock(&mu);
    handled.push_back(message->entries(0).seq());
    on_test_thread |= std::this_thread::get_id() == test_thread;
    FollowStream::Reply reply;
    reply.message = Ack(message->entries(0).seq());
    return reply;
  });
  const absl::Status end = stream->Finish();
  EXPECT_EQ(end.code(), absl::StatusCode::kFailedPrecondition) << end;
  EXPECT_EQ(end.message(), "term over");
  EXPECT_EQ(hello_id, "backup-1");
  EXPECT_EQ(handled, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_FALSE(on_test_thread);
  EXPECT_EQ(acks_seen, (std::vector<uint64_t>{1, 2, 3}));
}

TEST_F(FollowStreamTest, AReplyThatEndsTheStreamIsWrittenFirst) {
  FollowRequest refusal;  // as the primary read it
  Start([&](grpc::ServerContext*,
            grpc::ServerReaderWriter<FollowMessage, FollowRequest>* stream) {
    FollowRequest in;
    if (!stream->Read(&in)) return grpc::Status::OK;  // the hello
    stream->Write(Entries(3, 1));
    if (stream->Read(&in)) refusal = in;
    while (stream->Read(&in)) {  // until the backup cancels
    }
    return grpc::Status::OK;
  });
  grpc::ClientContext context;
  std::unique_ptr<FollowStream> stream = OpenWithHello(&context);
  ASSERT_NE(stream, nullptr);
  stream->Serve([](FollowMessage*) { return Refusal("stale term 3"); });
  const absl::Status end = stream->Finish();
  EXPECT_EQ(end, absl::AbortedError("stale term 3"));
  EXPECT_EQ(refusal.status_code(), static_cast<int>(absl::StatusCode::kAborted));
  EXPECT_EQ(refusal.status_message(), "stale term 3");
}

TEST_F(FollowStreamTest, ThePrimaryEndingTheCallAfterARefusalEndsTheLinger) {
  Start([](grpc::ServerContext*,
           grpc::ServerReaderWriter<FollowMessage, FollowRequest>* stream) {
    FollowRequest in;
    if (!stream->Read(&in)) return grpc::Status::OK;  // the hello
    stream->Write(Entries(3, 1));
    stream->Write(Entries(3, 2));  // in flight when the refusal comes
    if (stream->Read(&in) && in.status_code() != 0) {
      return grpc::Status(grpc::StatusCode::ABORTED, "fenced");
    }
    return grpc::Status(grpc::StatusCode::INTERNAL, "no refusal");
  });
  grpc::ClientContext context;
  std::unique_ptr<FollowStream> stream = OpenWithHello(&context);
  ASSERT_NE(stream, nullptr);
  int handled = 0;
  stream->Serve([&](FollowMessage*) {
    ++handled;
    return Refusal("stale term 3");
  });
  // The reply's status, not the call's; the second entry is dropped.
  EXPECT_EQ(stream->Finish(), absl::AbortedError("stale term 3"));
  EXPECT_EQ(handled, 1);
}

TEST_F(FollowStreamTest, ThePrimarysRefusalBeforeAnyMessageIsTheResult) {
  Start([](grpc::ServerContext*,
           grpc::ServerReaderWriter<FollowMessage, FollowRequest>* stream) {
    FollowRequest hello;
    stream->Read(&hello);
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "127.0.0.1:1 is starting, not primary");
  });
  grpc::ClientContext context;
  std::unique_ptr<FollowStream> stream = OpenWithHello(&context);
  ASSERT_NE(stream, nullptr);
  FollowMessage message;
  EXPECT_FALSE(stream->Read(&message));
  EXPECT_FALSE(stream->Read(&message));  // over stays over
  EXPECT_EQ(stream->Finish(), absl::UnavailableError(
                                  "127.0.0.1:1 is starting, not primary"));
}

TEST_F(FollowStreamTest, FinishWithAnErrorCancelsTheStream) {
  absl::Notification primary_saw_end;
  Start([&](grpc::ServerContext*,
            grpc::ServerReaderWriter<FollowMessage, FollowRequest>* stream) {
    FollowRequest in;
    while (stream->Read(&in)) {
    }
    primary_saw_end.Notify();
    return grpc::Status::OK;
  });
  grpc::ClientContext context;
  std::unique_ptr<FollowStream> stream = OpenWithHello(&context);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(stream->Finish(absl::DataLossError("restore failed")),
            absl::DataLossError("restore failed"));
  EXPECT_TRUE(primary_saw_end.WaitForNotificationWithTimeout(absl::Seconds(10)));
}

TEST_F(FollowStreamTest, CancellingTheContextEndsAServedStream) {
  Start([](grpc::ServerContext* context,
           grpc::ServerReaderWriter<FollowMessage, FollowRequest>* stream) {
    FollowRequest in;
    stream->Read(&in);
    while (!context->IsCancelled()) absl::SleepFor(absl::Milliseconds(5));
    return grpc::Status::OK;
  });
  grpc::ClientContext context;
  std::unique_ptr<FollowStream> stream = OpenWithHello(&context);
  ASSERT_NE(stream, nullptr);
  int handled = 0;
  stream->Serve([&](FollowMessage*) {
    ++handled;
    return FollowStream::Reply();
  });
  // As ReplicaNode::Stop / Fence do, from another thread.
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(50));
    context.TryCancel();
  });
  EXPECT_EQ(stream->Finish().code(), absl::StatusCode::kCancelled);
  canceller.join();
  EXPECT_EQ(handled, 0);
}

TEST_F(FollowStreamTest, OpenOnAStoppedQueueGivesNothing) {
  Start([](grpc::ServerContext*,
           grpc::ServerReaderWriter<FollowMessage, FollowRequest>*) {
    return grpc::Status::OK;
  });
  server_->Shutdown();
  queue_.Stop();
  grpc::ClientContext context;
  EXPECT_EQ(FollowStream::Open(stub_.get(), &context, &queue_), nullptr);
}

}  // namespace
}  // namespace ps::replication
