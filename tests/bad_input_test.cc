// Malformed requests get a precise status, the table is unchanged and the
// server keeps serving. Drives the raw DataStream (no client-side checks).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/partition.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ps.grpc.pb.h"
#include "tests/cluster_harness.h"

namespace ps::testing {
namespace {

constexpr uint32_t kDense = 0;
constexpr uint32_t kSparse = 1;

class RawStream {
 public:
  explicit RawStream(const std::string& address) {
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(64 << 20);
    args.SetMaxReceiveMessageSize(64 << 20);
    channel_ = grpc::CreateCustomChannel(
        address, grpc::InsecureChannelCredentials(), args);
    stub_ = proto::ParameterServer::NewStub(channel_);
    stream_ = stub_->DataStream(&context_);
  }

  // Sends one request and reads its response; false when the stream broke.
  bool Call(proto::DataRequest request, proto::DataResponse* response) {
    request.set_request_id(++next_id_);
    if (!stream_->Write(request)) return false;
    if (!stream_->Read(response)) return false;
    EXPECT_EQ(response->request_id(), next_id_);
    return true;
  }

  grpc::Status Finish() {
    stream_->WritesDone();
    return stream_->Finish();
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<proto::ParameterServer::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<proto::DataRequest,
                                           proto::DataResponse>>
      stream_;
  uint64_t next_id_ = 0;
};

proto::DataRequest Dense(proto::Op op, uint64_t offset, uint64_t length,
                         const std::vector<float>& values) {
  proto::DataRequest r;
  r.set_op(op);
  r.set_table_id(kDense);
  r.set_worker_id(-1);
  r.set_offset(offset);
  r.set_length(length);
  r.set_first_chunk(true);
  r.set_values(EncodeRaw<float>(values));
  return r;
}

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterSpec spec;
    spec.num_servers = 2;
    spec.body_yaml = R"(
server:
  max_message_bytes: 1048576
tables:
  - name: dense
    kind: dense
    size: 100
    optimizer: {type: sgd, learning_rate: 1.0}
  - name: emb
    kind: sparse
    dim: 4
)";
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
        LocalCluster::Start(spec);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster);
  }

  // Shard 0's dense elements [0, 50), read through a fresh stream.
  std::vector<float> ReadShard0() {
    RawStream stream(cluster_->addresses()[0]);
    proto::DataResponse response;
    EXPECT_TRUE(stream.Call(Dense(proto::PULL, 0, 50, {}), &response));
    EXPECT_EQ(response.status_code(), 0) << response.status_message();
    absl::Span<const float> v = ViewRaw<float>(response.values());
    return std::vector<float>(v.begin(), v.end());
  }

  std::unique_ptr<LocalCluster> cluster_;
};

TEST_F(BadInputTest, EachMalformedRequestGetsItsCodeAndServerKeepsServing) {
  const std::vector<float> before = ReadShard0();
  ASSERT_EQ(before.size(), 50u);
  RawStream stream(cluster_->addresses()[0]);
  proto::DataResponse response;

  // Unknown table.
  proto::DataRequest unknown = Dense(proto::PULL, 0, 10, {});
  unknown.set_table_id(99);
  ASSERT_TRUE(stream.Call(unknown, &response));
  EXPECT_EQ(response.status_code(), grpc::StatusCode::NOT_FOUND)
      << response.status_message();

  // Wrong value length: 10 elements announced, 9 sent.
  ASSERT_TRUE(stream.Call(
      Dense(proto::PUSH, 0, 10, std::vector<float>(9, 1.0f)), &response));
  EXPECT_EQ(response.status_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << response.status_message();

  // Dense elements owned by the other shard.
  ASSERT_TRUE(stream.Call(
      Dense(proto::PUSH, 60, 5, std::vector<float>(5, 1.0f)), &response));
  EXPECT_EQ(response.status_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << response.status_message();

  // Beyond the end of the table.
  ASSERT_TRUE(stream.Call(Dense(proto::PULL, 95, 10, {}), &response));
  EXPECT_EQ(response.status_code(), grpc::StatusCode::OUT_OF_RANGE)
      << response.status_message();

  // Empty op.
  ASSERT_TRUE(
      stream.Call(Dense(proto::OP_UNSPECIFIED, 0, 10, {}), &response));
  EXPECT_EQ(response.status_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << response.status_message();

  // NaN gradient: rejected by default, nothing applied.
  std::vector<float> nan_grad(10, 1.0f);
  nan_grad[3] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(stream.Call(Dense(proto::PUSH, 0, 10, nan_grad), &response));
  EXPECT_EQ(response.status_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << response.status_message();
  std::vector<float> inf_grad(10, 1.0f);
  inf_grad[9] = std::numeric_limits<float>::infinity();
  ASSERT_TRUE(stream.Call(Dense(proto::PUSH, 0, 10, inf_grad), &response));
  EXPECT_EQ(response.status_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << response.status_message();

  // Sparse: a key owned by shard 1 sent to shard 0.
  uint64_t foreign = 0;
  while (SparseShardOf(foreign, 2) != 1) ++foreign;
  proto::DataRequest sparse;
  sparse.set_op(proto::PULL);
  sparse.set_table_id(kSparse);
  sparse.set_worker_id(-1);
  sparse.set_keys(EncodeRaw<uint64_t>(std::vector<uint64_t>{foreign}));
  ASSERT_TRUE(stream.Call(sparse, &response));
  EXPECT_EQ(response.status_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << response.status_message();

  // Sparse: key bytes not a multiple of 8.
  sparse.set_keys(std::string(12, '\x01'));
  ASSERT_TRUE(stream.Call(sparse, &response));
  EXPECT_EQ(response.status_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << response.status_message();

  // Garbage values bytes (not a multiple of 4).
  proto::DataRequest garbage = Dense(proto::PUSH, 0, 2, {});
  garbage.set_values("abcdefg");
  ASSERT_TRUE(stream.Call(garbage, &response));
  EXPECT_EQ(response.status_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << response.status_message();

  // The same stream still serves a valid push and pull, and none of the bad
  // requests changed the table.
  ASSERT_TRUE(stream.Call(
      Dense(proto::PUSH, 0, 50, std::vector<float>(50, 1.0f)), &response));
  EXPECT_EQ(response.status_code(), 0) << response.status_message();
  ASSERT_TRUE(stream.Call(Dense(proto::PULL, 0, 50, {}), &response));
  ASSERT_EQ(response.status_code(), 0) << response.status_message();
  absl::Span<const float> after = ViewRaw<float>(response.values());
  ASSERT_EQ(after.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(after[i], before[i] - 1.0f) << i;
  EXPECT_TRUE(stream.Finish().ok());
}

TEST_F(BadInputTest, OversizedMessageIsRejectedAndServerKeepsServing) {
  const std::vector<float> before = ReadShard0();
  {
    RawStream stream(cluster_->addresses()[0]);
    proto::DataResponse response;
    // 2 MiB of values against the 1 MiB limit.
    proto::DataRequest big =
        Dense(proto::PUSH, 0, 50, std::vector<float>(512 * 1024, 1.0f));
    EXPECT_FALSE(stream.Call(big, &response));
    EXPECT_EQ(stream.Finish().error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  EXPECT_EQ(ReadShard0(), before);
}

TEST_F(BadInputTest, ClientSdkReportsServerCodes) {
  absl::StatusOr<std::unique_ptr<Client>> client = cluster_->Connect(-1);
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<float> out(10);
  EXPECT_EQ((*client)->PullDense(7, 0, absl::MakeSpan(out)).Wait().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ((*client)->PullDense(kDense, 95, absl::MakeSpan(out)).Wait().code(),
            absl::StatusCode::kOutOfRange);
  std::vector<float> nan_grad(10, std::nanf(""));
  EXPECT_EQ((*client)->PushDense(kDense, 0, nan_grad).Wait().code(),
            absl::StatusCode::kInvalidArgument);
  // Worker-only calls from a non-worker client.
  EXPECT_EQ((*client)->Clock().status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(BadInputTest, HandshakeRejectsMismatchedPartitionView) {
  ClientOptions options = cluster_->MakeClientOptions(-1);
  options.tables[0].size = 101;  // a client built from a different config
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kFailedPrecondition)
      << client.status();
  options = cluster_->MakeClientOptions(-1);
  std::swap(options.servers[0], options.servers[1]);  // shards out of order
  client = Client::Connect(options);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kFailedPrecondition)
      << client.status();
}

}  // namespace
}  // namespace ps::testing
