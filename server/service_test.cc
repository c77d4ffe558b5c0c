// Starts a ParameterServerProcess in-process on 127.0.0.1:0 and drives it
// with the raw generated stub.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/bytes.h"
#include "common/config.h"
#include "common/partition.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/health.grpc.pb.h"
#include "proto/ps.grpc.pb.h"
#include "server/server.h"

namespace ps {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Stream = grpc::ClientReaderWriter<proto::DataRequest, proto::DataResponse>;

constexpr uint32_t kDense = 0;   // async, 8 elements, constant 0.5, SGD lr 1
constexpr uint32_t kSync = 1;    // sync, 4 elements, zeros, SGD lr 1
constexpr uint32_t kSparse = 2;  // async, dim 2

ClusterConfig MakeConfig() {
  ClusterConfig c;
  c.servers = {"127.0.0.1:0"};
  c.num_workers = 2;
  c.server.device = DeviceKind::kCpu;
  c.server.threads = 2;
  c.server.max_message_bytes = 1 << 20;
  c.server.heartbeat_timeout_ms = 60000;
  c.server.worker_join_timeout_ms = 60000;
  TableConfig dense;
  dense.name = "w";
  dense.table_id = kDense;
  dense.kind = TableKind::kDense;
  dense.size = 8;
  dense.initializer.type = InitializerType::kConstant;
  dense.initializer.value = 0.5f;
  dense.optimizer.learning_rate = 1.0f;
  TableConfig sync = dense;
  sync.name = "s";
  sync.table_id = kSync;
  sync.size = 4;
  sync.consistency = Consistency::kSync;
  sync.initializer.type = InitializerType::kZeros;
  TableConfig sparse;
  sparse.name = "e";
  sparse.table_id = kSparse;
  sparse.kind = TableKind::kSparse;
  sparse.dim = 2;
  c.tables = {dense, sync, sparse};
  return c;
}

proto::DataRequest Dense(uint64_t id, proto::Op op, uint32_t table,
                         uint64_t offset, uint64_t length,
                         std::vector<float> grad = {}, int worker = -1,
                         int64_t clock = 0) {
  proto::DataRequest r;
  r.set_request_id(id);
  r.set_op(op);
  r.set_table_id(table);
  r.set_worker_id(worker);
  r.set_clock(clock);
  r.set_offset(offset);
  r.set_length(length);
  r.set_first_chunk(true);
  if (!grad.empty()) r.set_values(EncodeRaw<float>(grad));
  return r;
}

std::vector<float> Floats(const std::string& bytes) {
  auto span = ViewRaw<float>(bytes);
  return std::vector<float>(span.begin(), span.end());
}

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(MakeConfig()); }
  void TearDown() override { server_->Stop(); }

  void StartServer(const ClusterConfig& config) {
    config_ = config;
    ServerRunOptions options;
    options.listen_address = "127.0.0.1:0";
    options.shutdown_grace = absl::Seconds(2);
    auto server = ParameterServerProcess::Create(config, 0, options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    auto port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status();
    ASSERT_GT(*port, 0);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(16 << 20);
    args.SetMaxSendMessageSize(16 << 20);
    channel_ = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", *port),
                                         grpc::InsecureChannelCredentials(),
                                         args);
    stub_ = proto::ParameterServer::NewStub(channel_);
  }

  // One request, one response, on an open stream.
  proto::DataResponse Call(Stream* stream, const proto::DataRequest& request) {
    EXPECT_TRUE(stream->Write(request));
    proto::DataResponse response;
    EXPECT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.request_id(), request.request_id());
    return response;
  }

  grpc::Status Clock(int worker, int64_t clock) {
    grpc::ClientContext context;
    proto::ClockRequest request;
    request.set_worker_id(worker);
    request.set_clock(clock);
    proto::ClockResponse response;
    grpc::Status s = stub_->Clock(&context, request, &response);
    if (s.ok()) {
      EXPECT_EQ(response.clock(), clock);
    }
    return s;
  }

  ClusterConfig config_;
  std::unique_ptr<ParameterServerProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<proto::ParameterServer::Stub> stub_;
};

TEST_F(ServiceTest, ShardInfoDescribesTheShard) {
  grpc::ClientContext context;
  proto::ShardInfo info;
  ASSERT_TRUE(stub_->GetShardInfo(&context, {}, &info).ok());
  EXPECT_EQ(info.shard_index(), 0u);
  EXPECT_EQ(info.num_shards(), 1u);
  EXPECT_EQ(info.num_workers(), 2u);
  EXPECT_EQ(info.partition_fingerprint(),
            PartitionFingerprint(1, config_.tables));
  ASSERT_EQ(info.tables_size(), 3);
  EXPECT_EQ(info.tables(1).name(), "s");
  EXPECT_EQ(info.tables(1).consistency(), proto::SYNC);
  EXPECT_EQ(info.backend(), "cpu");
}

TEST_F(ServiceTest, PullAndPushOnAStream) {
  grpc::ClientContext context;
  std::unique_ptr<Stream> stream = stub_->DataStream(&context);
  proto::DataResponse r = Call(stream.get(), Dense(1, proto::PULL, kDense, 0, 8));
  EXPECT_EQ(r.status_code(), 0) << r.status_message();
  EXPECT_THAT(Floats(r.values()), Each(0.5f));
  EXPECT_EQ(r.version(), 0u);

  r = Call(stream.get(), Dense(2, proto::PUSH, kDense, 2, 2, {1, 2}));
  EXPECT_EQ(r.status_code(), 0) << r.status_message();
  EXPECT_TRUE(r.values().empty());
  EXPECT_EQ(r.version(), 1u);

  r = Call(stream.get(), Dense(3, proto::PULL, kDense, 0, 8));
  EXPECT_THAT(Floats(r.values()),
              ElementsAre(0.5, 0.5, -0.5, -1.5, 0.5, 0.5, 0.5, 0.5));
  EXPECT_EQ(r.version(), 1u);

  // Sparse: rows appear on first pull (zeros initializer).
  proto::DataRequest sparse;
  sparse.set_request_id(4);
  sparse.set_op(proto::PUSH_PULL);
  sparse.set_table_id(kSparse);
  sparse.set_worker_id(-1);
  sparse.set_first_chunk(true);
  sparse.set_keys(EncodeRaw<uint64_t>({3, 9}));
  sparse.set_values(EncodeRaw<float>({1, 2, 3, 4}));
  r = Call(stream.get(), sparse);
  EXPECT_EQ(r.status_code(), 0) << r.status_message();
  EXPECT_THAT(Floats(r.values()), ElementsAre(-0.01f, -0.02f, -0.03f, -0.04f));

  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ServiceTest, ErrorsComeBackPerRequestAndTheStreamGoesOn) {
  grpc::ClientContext context;
  std::unique_ptr<Stream> stream = stub_->DataStream(&context);
  proto::DataResponse r = Call(stream.get(), Dense(1, proto::PULL, 99, 0, 1));
  EXPECT_EQ(r.status_code(), grpc::StatusCode::NOT_FOUND);
  r = Call(stream.get(), Dense(2, proto::PULL, kDense, 6, 4));
  EXPECT_EQ(r.status_code(), grpc::StatusCode::OUT_OF_RANGE);
  r = Call(stream.get(), Dense(3, proto::PUSH, kDense, 0, 2, {1}));
  EXPECT_EQ(r.status_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r.status_message(), HasSubstr("expected 8 bytes"));
  r = Call(stream.get(), Dense(4, proto::OP_UNSPECIFIED, kDense, 0, 1));
  EXPECT_EQ(r.status_code(), grpc::StatusCode::INVALID_ARGUMENT);
  r = Call(stream.get(), Dense(5, proto::PUSH, kDense, 0, 1, {NAN}));
  EXPECT_EQ(r.status_code(), grpc::StatusCode::INVALID_ARGUMENT);
  r = Call(stream.get(), Dense(6, proto::PUSH, kSync, 0, 1, {1}, -1));
  EXPECT_EQ(r.status_code(), grpc::StatusCode::FAILED_PRECONDITION);
  r = Call(stream.get(), Dense(7, proto::PULL, kDense, 0, 1, {}, 2));
  EXPECT_EQ(r.status_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // The table is untouched and the stream still serves.
  r = Call(stream.get(), Dense(8, proto::PULL, kDense, 0, 8));
  EXPECT_EQ(r.status_code(), 0);
  EXPECT_THAT(Floats(r.values()), Each(0.5f));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ServiceTest, SyncPullWaitsForTheOtherWorkersClock) {
  grpc::ClientContext c0, c1;
  std::unique_ptr<Stream> w0 = stub_->DataStream(&c0);
  std::unique_ptr<Stream> w1 = stub_->DataStream(&c1);
  proto::DataResponse r =
      Call(w0.get(), Dense(1, proto::PUSH, kSync, 0, 4, {2, 2, 2, 2}, 0, 0));
  ASSERT_EQ(r.status_code(), 0) << r.status_message();
  r = Call(w1.get(), Dense(1, proto::PUSH, kSync, 0, 4, {4, 4, 4, 6}, 1, 0));
  ASSERT_EQ(r.status_code(), 0) << r.status_message();
  ASSERT_TRUE(Clock(0, 1).ok());

  // Worker 0 reads step 1: it must wait for worker 1's clock.
  ASSERT_TRUE(w0->Write(Dense(2, proto::PULL, kSync, 0, 4, {}, 0, 1)));
  std::atomic<bool> done{false};
  proto::DataResponse waited;
  std::thread reader([&] {
    EXPECT_TRUE(w0->Read(&waited));
    done = true;
  });
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_FALSE(done.load());
  // Meanwhile the stream serves other requests... on the other stream.
  r = Call(w1.get(), Dense(2, proto::PULL, kSync, 0, 4, {}, 1, 0));
  EXPECT_THAT(Floats(r.values()), ElementsAre(0, 0, 0, 0));
  EXPECT_FALSE(done.load());

  ASSERT_TRUE(Clock(1, 1).ok());
  reader.join();
  EXPECT_EQ(waited.request_id(), 2u);
  EXPECT_EQ(waited.status_code(), 0) << waited.status_message();
  EXPECT_THAT(Floats(waited.values()), ElementsAre(-3, -3, -3, -4));
  EXPECT_EQ(waited.step(), 1);
  EXPECT_EQ(waited.version(), 1u);

  // A push for the applied step is refused.
  r = Call(w1.get(), Dense(3, proto::PUSH, kSync, 0, 1, {1}, 1, 0));
  EXPECT_EQ(r.status_code(), grpc::StatusCode::FAILED_PRECONDITION);
  w0->WritesDone();
  w1->WritesDone();
  EXPECT_TRUE(w0->Finish().ok());
  EXPECT_TRUE(w1->Finish().ok());
}

TEST_F(ServiceTest, ConcurrentPipelinedPushesAllLand) {
  constexpr int kThreads = 4;
  constexpr int kPushes = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      grpc::ClientContext context;
      std::unique_ptr<Stream> stream = stub_->DataStream(&context);
      for (int i = 0; i < kPushes; ++i) {
        ASSERT_TRUE(stream->Write(
            Dense(t * 1000 + i, proto::PUSH, kDense, 0, 8,
                  std::vector<float>(8, 0.25f))));
      }
      stream->WritesDone();
      std::vector<bool> seen(kPushes, false);
      proto::DataResponse r;
      int count = 0;
      while (stream->Read(&r)) {
        EXPECT_EQ(r.status_code(), 0) << r.status_message();
        seen[r.request_id() - t * 1000] = true;
        ++count;
      }
      EXPECT_EQ(count, kPushes);
      EXPECT_TRUE(stream->Finish().ok());
    });
  }
  for (std::thread& t : threads) t.join();
  grpc::ClientContext context;
  std::unique_ptr<Stream> stream = stub_->DataStream(&context);
  proto::DataResponse r = Call(stream.get(), Dense(1, proto::PULL, kDense, 0, 8));
  // 0.5 - 200 * 0.25, exact in float.
  EXPECT_THAT(Floats(r.values()), Each(-49.5f));
  EXPECT_EQ(r.version(), uint64_t{kThreads * kPushes});
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ServiceTest, OversizedMessageFailsTheStreamNotTheServer) {
  {
    grpc::ClientContext context;
    std::unique_ptr<Stream> stream = stub_->DataStream(&context);
    proto::DataRequest big = Dense(1, proto::PUSH, kDense, 0, 8);
    big.set_values(std::string(2 << 20, '\0'));
    stream->Write(big);
    proto::DataResponse r;
    EXPECT_FALSE(stream->Read(&r));
    EXPECT_EQ(stream->Finish().error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  grpc::ClientContext context;
  std::unique_ptr<Stream> stream = stub_->DataStream(&context);
  proto::DataResponse r = Call(stream.get(), Dense(1, proto::PULL, kDense, 0, 8));
  EXPECT_EQ(r.status_code(), 0);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ServiceTest, CreateTableIsIdempotentAndRejectsConflicts) {
  proto::CreateTableRequest request;
  proto::TableSpec* spec = request.mutable_spec();
  spec->set_name("extra");
  spec->set_table_id(7);
  spec->set_kind(proto::DENSE);
  spec->set_size(3);
  spec->mutable_optimizer()->set_type("sgd");
  spec->mutable_optimizer()->set_learning_rate(2.0f);
  for (int i = 0; i < 2; ++i) {
    grpc::ClientContext context;
    proto::CreateTableResponse response;
    ASSERT_TRUE(stub_->CreateTable(&context, request, &response).ok());
    EXPECT_EQ(response.spec().size(), 3u);
  }
  spec->set_size(4);
  {
    grpc::ClientContext context;
    proto::CreateTableResponse response;
    EXPECT_EQ(stub_->CreateTable(&context, request, &response).error_code(),
              grpc::StatusCode::ALREADY_EXISTS);
  }
  spec->set_name("w");  // the name of table 0
  spec->set_table_id(8);
  {
    grpc::ClientContext context;
    proto::CreateTableResponse response;
    EXPECT_EQ(stub_->CreateTable(&context, request, &response).error_code(),
              grpc::StatusCode::ALREADY_EXISTS);
  }
  spec->set_name("");
  {
    grpc::ClientContext context;
    proto::CreateTableResponse response;
    EXPECT_EQ(stub_->CreateTable(&context, request, &response).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
  grpc::ClientContext context;
  std::unique_ptr<Stream> stream = stub_->DataStream(&context);
  proto::DataResponse r = Call(stream.get(), Dense(1, proto::PUSH_PULL, 7, 0, 3, {1, 1, 1}));
  EXPECT_EQ(r.status_code(), 0) << r.status_message();
  EXPECT_THAT(Floats(r.values()), Each(-2.0f));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  grpc::ClientContext info_context;
  proto::ShardInfo info;
  ASSERT_TRUE(stub_->GetShardInfo(&info_context, {}, &info).ok());
  EXPECT_EQ(info.tables_size(), 4);
}

TEST_F(ServiceTest, BarrierCompletesWhenAllWorkersArrive) {
  std::atomic<bool> done{false};
  std::thread first([&] {
    grpc::ClientContext context;
    proto::BarrierRequest request;
    request.set_worker_id(0);
    request.set_generation(0);
    proto::BarrierResponse response;
    EXPECT_TRUE(stub_->Barrier(&context, request, &response).ok());
    done = true;
  });
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_FALSE(done.load());
  grpc::ClientContext context;
  proto::BarrierRequest request;
  request.set_worker_id(1);
  request.set_generation(0);
  proto::BarrierResponse response;
  EXPECT_TRUE(stub_->Barrier(&context, request, &response).ok());
  first.join();
  EXPECT_TRUE(done.load());
}

TEST_F(ServiceTest, WorkerControlRpcs) {
  {
    grpc::ClientContext context;
    proto::RegisterWorkerRequest request;
    request.set_worker_id(1);
    proto::RegisterWorkerResponse response;
    ASSERT_TRUE(stub_->RegisterWorker(&context, request, &response).ok());
    EXPECT_EQ(response.clock(), 0);
  }
  {
    grpc::ClientContext context;
    proto::HeartbeatRequest request;
    request.set_worker_id(1);
    proto::HeartbeatResponse response;
    ASSERT_TRUE(stub_->Heartbeat(&context, request, &response).ok());
    EXPECT_TRUE(response.registered());
  }
  {
    grpc::ClientContext context;
    proto::HeartbeatRequest request;
    request.set_worker_id(5);
    proto::HeartbeatResponse response;
    EXPECT_EQ(stub_->Heartbeat(&context, request, &response).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
  EXPECT_EQ(Clock(0, 3).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(Clock(0, 1).ok());
  grpc::ClientContext context;
  proto::StatsResponse stats;
  ASSERT_TRUE(stub_->GetStats(&context, {}, &stats).ok());
  ASSERT_EQ(stats.workers_size(), 2);
  EXPECT_EQ(stats.workers(0).clock(), 1);
  EXPECT_TRUE(stats.workers(1).live());
  ASSERT_EQ(stats.tables_size(), 3);
  EXPECT_EQ(stats.tables(0).num_elements(), 8u);
}

TEST_F(ServiceTest, StopFailsParkedPullsAndReturns) {
  grpc::ClientContext context;
  std::unique_ptr<Stream> stream = stub_->DataStream(&context);
  ASSERT_TRUE(stream->Write(Dense(1, proto::PULL, kSync, 0, 4, {}, 0, 5)));
  absl::SleepFor(absl::Milliseconds(100));
  const absl::Time start = absl::Now();
  std::thread stopper([&] { server_->Stop(); });
  proto::DataResponse r;
  if (stream->Read(&r)) {
    EXPECT_EQ(r.status_code(), grpc::StatusCode::UNAVAILABLE);
  }
  stopper.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

// Health: SERVING while serving; an open Watch gets NOT_SERVING when the
// server stops and does not hold the stop up (shutdown_grace is 2 s here).
// An unreplicated server is its shard's only replica: the replica health
// service (what replicated pods' readiness asks) says SERVING as well.
TEST_F(ServiceTest, UnreplicatedServerIsServingAsItsShardsReplica) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckRequest request;
  request.set_service("ps.replication.Replication");
  grpc::health::v1::HealthCheckResponse response;
  ASSERT_TRUE(health->Check(&context, request, &response).ok());
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST_F(ServiceTest, HealthWatchSeesTheStopWithoutDelayingIt) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckRequest request;
  request.set_service("ps.proto.ParameterServer");
  auto reader = health->Watch(&context, request);
  grpc::health::v1::HealthCheckResponse response;
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  const absl::Time start = absl::Now();
  server_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(),
            grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

// The names of this process's threads.
std::vector<std::string> ThreadNames() {
  std::vector<std::string> names;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    names.push_back(name);
  }
  return names;
}

// Every RPC runs on the server's one completion-queue thread: no callback-API
// threads ("nexting_thread" in gRPC 1.51), whose hand-offs cost wake-ups on
// every message (server/server_queue.h).
TEST_F(ServiceTest, ServesEveryRpcWithoutCallbackApiThreads) {
  {
    grpc::ClientContext context;
    proto::ShardInfo info;
    ASSERT_TRUE(stub_->GetShardInfo(&context, {}, &info).ok());
  }
  {
    grpc::ClientContext context;
    std::unique_ptr<Stream> stream = stub_->DataStream(&context);
    EXPECT_EQ(Call(stream.get(), Dense(1, proto::PULL, kDense, 0, 8))
                  .status_code(),
              0);
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
  EXPECT_THAT(ThreadNames(), Each(::testing::Ne("nexting_thread")));
}

TEST(ServiceAuthTest, BearerTokenIsRequiredWhenConfigured) {
  ClusterConfig config = MakeConfig();
  config.auth_token = "s3cret";
  ServerRunOptions options;
  options.listen_address = "127.0.0.1:0";
  auto server = ParameterServerProcess::Create(config, 0, options);
  ASSERT_TRUE(server.ok());
  auto port = (*server)->Start();
  ASSERT_TRUE(port.ok());
  auto stub = proto::ParameterServer::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", *port), grpc::InsecureChannelCredentials()));
  proto::ShardInfo info;
  {
    grpc::ClientContext context;
    EXPECT_EQ(stub->GetShardInfo(&context, {}, &info).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer wrong!");
    EXPECT_EQ(stub->GetShardInfo(&context, {}, &info).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer s3cret");
    EXPECT_TRUE(stub->GetShardInfo(&context, {}, &info).ok());
  }
  {
    grpc::ClientContext context;
    std::unique_ptr<Stream> stream = stub->DataStream(&context);
    proto::DataResponse r;
    EXPECT_FALSE(stream->Read(&r));
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  (*server)->Stop();
}

}  // namespace
}  // namespace ps
