// HealthService on a real in-process gRPC server, called with the generated
// stub of proto/health.proto.
#include "server/health_service.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/server_queue.h"

namespace ps {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

class HealthServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&health_);
    queue_.AddTo(&builder);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    health_.Serve(&queue_);
    queue_.Start();
    stub_ = Health::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    server_->Shutdown();
    queue_.Stop();
  }

  // The answer's status, or -1 - the gRPC status code when the call failed.
  int Check(const std::string& service) {
    grpc::ClientContext context;
    HealthCheckRequest request;
    request.set_service(service);
    HealthCheckResponse response;
    const grpc::Status status = stub_->Check(&context, request, &response);
    if (!status.ok()) return -1 - status.error_code();
    return response.status();
  }

  HealthService health_;
  ServerQueue queue_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Health::Stub> stub_;
};

TEST_F(HealthServiceTest, AnswersTheStatusSetPerService) {
  health_.SetServingStatus("", true);
  health_.SetServingStatus("ps.proto.ParameterServer", false);
  EXPECT_EQ(Check(""), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check("ps.proto.ParameterServer"),
            HealthCheckResponse::NOT_SERVING);
  health_.SetServingStatus("ps.proto.ParameterServer", true);
  EXPECT_EQ(Check("ps.proto.ParameterServer"), HealthCheckResponse::SERVING);
}

TEST_F(HealthServiceTest, UnknownServiceIsNotFound) {
  health_.SetServingStatus("", true);
  EXPECT_EQ(Check("no.such.Service"), -1 - grpc::StatusCode::NOT_FOUND);
}

TEST_F(HealthServiceTest, ShutdownMakesEveryServiceNotServingForGood) {
  health_.SetServingStatus("", true);
  health_.SetServingStatus("a", true);
  health_.Shutdown();
  EXPECT_EQ(Check(""), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Check("a"), HealthCheckResponse::NOT_SERVING);
  health_.SetServingStatus("a", true);  // ignored from now on
  EXPECT_EQ(Check("a"), HealthCheckResponse::NOT_SERVING);
}

TEST_F(HealthServiceTest, ManyConcurrentChecksAllAnswered) {
  health_.SetServingStatus("", true);
  // Asynchronous calls in flight together: each waiting call object spawns
  // the next one, so none is left unanswered.
  grpc::CompletionQueue cq;
  constexpr int kCalls = 64;
  grpc::ClientContext contexts[kCalls];
  HealthCheckResponse responses[kCalls];
  grpc::Status statuses[kCalls];
  std::unique_ptr<grpc::ClientAsyncResponseReader<HealthCheckResponse>>
      calls[kCalls];
  HealthCheckRequest request;
  for (int i = 0; i < kCalls; ++i) {
    calls[i] = stub_->AsyncCheck(&contexts[i], request, &cq);
    calls[i]->Finish(&responses[i], &statuses[i], &statuses[i]);
  }
  void* tag;
  bool ok;
  for (int i = 0; i < kCalls; ++i) ASSERT_TRUE(cq.Next(&tag, &ok));
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_TRUE(statuses[i].ok()) << statuses[i].error_message();
    EXPECT_EQ(responses[i].status(), HealthCheckResponse::SERVING);
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

// Watch: reads the next status, or -1 when the stream ended.
int NextStatus(grpc::ClientReader<HealthCheckResponse>* reader) {
  HealthCheckResponse response;
  if (!reader->Read(&response)) return -1;
  return response.status();
}

TEST_F(HealthServiceTest, WatchSendsTheStatusThenEveryChange) {
  health_.SetServingStatus("", true);
  grpc::ClientContext context;
  HealthCheckRequest request;
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> reader =
      stub_->Watch(&context, request);
  EXPECT_EQ(NextStatus(reader.get()), HealthCheckResponse::SERVING);
  health_.SetServingStatus("", false);
  EXPECT_EQ(NextStatus(reader.get()), HealthCheckResponse::NOT_SERVING);
  health_.SetServingStatus("", false);      // no change: nothing sent
  health_.SetServingStatus("other", true);  // another service: nothing
  health_.SetServingStatus("", true);
  EXPECT_EQ(NextStatus(reader.get()), HealthCheckResponse::SERVING);
  context.TryCancel();
  EXPECT_EQ(NextStatus(reader.get()), -1);
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(HealthServiceTest, WatchOfAnUnknownServiceFollowsItOnceKnown) {
  grpc::ClientContext context;
  HealthCheckRequest request;
  request.set_service("later");
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> reader =
      stub_->Watch(&context, request);
  EXPECT_EQ(NextStatus(reader.get()), HealthCheckResponse::SERVICE_UNKNOWN);
  health_.SetServingStatus("later", true);
  EXPECT_EQ(NextStatus(reader.get()), HealthCheckResponse::SERVING);
  context.TryCancel();
  reader->Finish().IgnoreError();
}

TEST_F(HealthServiceTest, ShutdownEndsEveryWatchWithNotServing) {
  health_.SetServingStatus("", true);
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<HealthCheckResponse>>> readers;
  for (int i = 0; i < 3; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    readers.push_back(
        stub_->Watch(contexts.back().get(), HealthCheckRequest()));
    EXPECT_EQ(NextStatus(readers.back().get()), HealthCheckResponse::SERVING);
  }
  health_.Shutdown();
  for (auto& reader : readers) {
    EXPECT_EQ(NextStatus(reader.get()), HealthCheckResponse::NOT_SERVING);
    EXPECT_EQ(NextStatus(reader.get()), -1);
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  }
  // A watch that starts after the shutdown gets the same.
  grpc::ClientContext context;
  auto late = stub_->Watch(&context, HealthCheckRequest());
  EXPECT_EQ(NextStatus(late.get()), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(NextStatus(late.get()), -1);
  EXPECT_EQ(late->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace ps
