// Client SDK against two in-process fake shards (no real server).
#include "client/client.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/testing/fake_parameter_server.h"
#include "common/bytes.h"
#include "common/partition.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ps.grpc.pb.h"

namespace ps {
namespace {

using ::ps::testing::FakeParameterServer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint32_t kDense = 0;
constexpr uint32_t kSparse = 1;
constexpr uint32_t kSync = 2;
constexpr uint64_t kSize = 1001;  // uneven over 2 shards: 501 + 500
constexpr uint32_t kDim = 3;

std::vector<TableConfig> Tables() {
  TableConfig dense;
  dense.name = "dense";
  dense.table_id = kDense;
  dense.size = kSize;
  TableConfig sparse;
  sparse.name = "emb";
  sparse.table_id = kSparse;
  sparse.kind = TableKind::kSparse;
  sparse.dim = kDim;
  TableConfig sync;
  sync.name = "sync";
  sync.table_id = kSync;
  sync.size = 10;
  sync.consistency = Consistency::kSync;
  return {dense, sparse, sync};
}

bool WaitFor(const std::function<bool()>& condition,
             absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (condition()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return condition();
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (uint32_t i = 0; i < 2; ++i) {
      FakeParameterServer::Options o;
      o.shard_index = i;
      o.num_shards = 2;
      o.num_workers = 2;
      o.tables = Tables();
      o.register_clock = 5;
      fakes_.push_back(FakeParameterServer::Start(o));
      ASSERT_NE(fakes_.back(), nullptr);
    }
  }

  ClientOptions Options(int worker_id = -1) {
    ClientOptions o;
    for (auto& f : fakes_) o.servers.push_back(f->address());
    o.tables = Tables();
    o.worker_id = worker_id;
    o.client.chunk_bytes = 64;  // 16 floats per dense chunk
    o.client.rpc_timeout_ms = 2000;
    o.client.heartbeat_interval_ms = 20;
    o.client.reconnect_initial_backoff_ms = 10;
    o.client.reconnect_max_backoff_ms = 50;
    return o;
  }

  std::unique_ptr<Client> ConnectOk(int worker_id = -1) {
    absl::StatusOr<std::unique_ptr<Client>> c =
        Client::Connect(Options(worker_id));
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Replaces the servers with one that never answers and connects to it.
  std::unique_ptr<Client> ConnectToHungServer() {
    fakes_.clear();
    FakeParameterServer::Options o;
    o.tables = Tables();
    o.hold_responses = true;
    fakes_.push_back(FakeParameterServer::Start(o));
    EXPECT_NE(fakes_.back(), nullptr);
    return fakes_.back() == nullptr ? nullptr : ConnectOk();
  }

  size_t TotalRequests() {
    return fakes_[0]->requests().size() + fakes_[1]->requests().size();
  }

  std::vector<std::unique_ptr<FakeParameterServer>> fakes_;
};

TEST_F(ClientTest, HandshakeAdoptsTables) {
  ClientOptions o = Options();
  o.tables.clear();
  absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<TableInfo> tables = (*c)->ListTables();
  ASSERT_EQ(tables.size(), 3u);
  EXPECT_EQ(tables[1].name, "emb");
  EXPECT_EQ(tables[1].kind, TableKind::kSparse);
  EXPECT_EQ(tables[1].dim, kDim);
  absl::StatusOr<TableInfo> dense = (*c)->GetTable("dense");
  ASSERT_TRUE(dense.ok());
  EXPECT_EQ(dense->size, kSize);
  EXPECT_EQ((*c)->GetTable("nope").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ((*c)->num_servers(), 2);
  EXPECT_EQ((*c)->worker_id(), -1);
}

TEST_F(ClientTest, HandshakeRejectsServersOutOfOrder) {
  ClientOptions o = Options();
  std::swap(o.servers[0], o.servers[1]);
  absl::Status s = Client::Connect(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(),
              HasSubstr("reports shard 1 but is listed at position 0"));
}

TEST_F(ClientTest, HandshakeRejectsWrongShardCount) {
  ClientOptions o = Options();
  o.servers.pop_back();
  absl::Status s = Client::Connect(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("reports 2 shards but the client lists 1"));
}

TEST_F(ClientTest, HandshakeRejectsDifferentTables) {
  ClientOptions o = Options();
  o.tables[0].size = 1002;
  absl::Status s = Client::Connect(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(),
              HasSubstr("table 0 'dense': size 1002 (this client) vs 1001"));
  o = Options();
  o.tables[1].consistency = Consistency::kSync;
  s = Client::Connect(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("consistency sync (this client) vs async"));
}

TEST_F(ClientTest, ConnectToNoServerIsUnavailableWithinTimeout) {
  const std::string address = fakes_[1]->address();
  fakes_[1]->Shutdown();
  ClientOptions o = Options();
  o.client.rpc_timeout_ms = 300;
  const absl::Time start = absl::Now();
  absl::Status s = Client::Connect(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr(address));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(ClientTest, DensePullIsChunkedPerShardAndReassembledExactly) {
  auto client = ConnectOk();
  ASSERT_NE(client, nullptr);
  std::vector<float> out(990, -1.0f);
  ASSERT_TRUE(client->PullDense(kDense, 7, absl::MakeSpan(out)).Wait().ok());
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(out[i], 0.5f * (7 + i)) << i;
  }
  // Shard 0 owns [0, 501): 494 elements from 7 -> 31 chunks of <= 16.
  for (int s = 0; s < 2; ++s) {
    const std::vector<proto::DataRequest> requests = fakes_[s]->requests();
    int first = 0;
    uint64_t total = 0;
    for (const proto::DataRequest& r : requests) {
      EXPECT_EQ(r.op(), proto::PULL);
      EXPECT_LE(r.length(), 16u);
      EXPECT_EQ(r.worker_id(), -1);
      EXPECT_NE(r.client_id(), 0u);
      EXPECT_EQ(r.client_id(), fakes_[0]->requests()[0].client_id());
      first += r.first_chunk();
      total += r.length();
    }
    EXPECT_EQ(first, 1) << "shard " << s;
    EXPECT_EQ(total, s == 0 ? 494u : 496u);
    EXPECT_EQ(requests.size(), 31u);
  }
}

TEST_F(ClientTest, DensePushAndPushPull) {
  auto client = ConnectOk();
  ASSERT_NE(client, nullptr);
  std::vector<float> grads(40);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.125f * i;
  ASSERT_TRUE(client->PushDense(kDense, 480, grads).Wait().ok());
  std::vector<float> out(40);
  ASSERT_TRUE(
      client->PushPullDense(kDense, 480, grads, absl::MakeSpan(out)).Wait().ok());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i], 0.5f * (480 + i) - 2 * 0.125f * i) << i;
  }
  // Each logical push has one first chunk per shard it touches.
  int firsts = 0;
  for (auto& f : fakes_) {
    for (const auto& r : f->requests()) firsts += r.first_chunk();
  }
  EXPECT_EQ(firsts, 4);
}

TEST_F(ClientTest, ZeroCopyPushSendsTheCallersBytes) {
  auto client = ConnectOk();
  ASSERT_NE(client, nullptr);
  std::vector<float> grads(40);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.125f * i;
  ASSERT_TRUE(client->PushDenseZeroCopy(kDense, 480, grads).Wait().ok());
  std::vector<float> out(40);
  ASSERT_TRUE(client->PushPullDenseZeroCopy(kDense, 480, grads, absl::MakeSpan(out))
                  .Wait()
                  .ok());
  // Same values as the copying calls (DensePushAndPushPull).
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i], 0.5f * (480 + i) - 2 * 0.125f * i) << i;
  }
  // The servers received exactly the caller's bytes, chunk by chunk.
  for (auto& f : fakes_) {
    for (const auto& r : f->requests()) {
      ASSERT_EQ(r.values().size(), r.length() * sizeof(float));
      EXPECT_EQ(std::memcmp(r.values().data(), grads.data() + (r.offset() - 480),
                            r.values().size()),
                0);
    }
  }
}

TEST_F(ClientTest, ZeroCopyPushHeldByAHungServerFailsOnlyAtShutdown) {
  std::unique_ptr<Client> client = ConnectToHungServer();
  ASSERT_NE(client, nullptr);
  std::vector<float> grads(10, 1.0f);
  Future f = client->PushDenseZeroCopy(kDense, 0, grads);
  ASSERT_TRUE(WaitFor([&] { return fakes_[0]->requests().size() == 1; }));
  EXPECT_FALSE(f.Ready());  // the caller's memory is still in use
  client.reset();
  EXPECT_EQ(f.Wait().code(), absl::StatusCode::kCancelled);
}

TEST_F(ClientTest, SparsePullWithDuplicatesAcrossShards) {
  auto client = ConnectOk();
  ASSERT_NE(client, nullptr);
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < 60; ++k) keys.push_back((k * 37) % 41 + 1000);
  keys.push_back(keys[3]);
  keys.push_back(keys[0]);
  std::vector<float> out(keys.size() * kDim, -1.0f);
  ASSERT_TRUE(client->PullSparse(kSparse, keys, absl::MakeSpan(out)).Wait().ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    for (uint32_t d = 0; d < kDim; ++d) {
      ASSERT_EQ(out[i * kDim + d], (keys[i] % 1000) + 0.25f * d) << i;
    }
  }
  // Each shard got only its own keys (the fake rejects others), and each
  // request fits a chunk: 64 / (8 + 12) = 3 keys.
  for (auto& f : fakes_) {
    for (const auto& r : f->requests()) {
      EXPECT_LE(RawCount<uint64_t>(r.keys()), 3);
    }
  }
}

TEST_F(ClientTest, SparsePushSumsDuplicateGradients) {
  auto client = ConnectOk();
  ASSERT_NE(client, nullptr);
  const std::vector<uint64_t> keys = {5, 9, 5, 123456789, 5};
  std::vector<float> grads;
  for (size_t i = 0; i < keys.size(); ++i) {
    for (uint32_t d = 0; d < kDim; ++d) grads.push_back(i + 0.5f * d);
  }
  ASSERT_TRUE(client->PushSparse(kSparse, keys, grads).Wait().ok());
  auto row = [&](uint64_t key) {
    return fakes_[SparseShardOf(key, 2)]->sparse_row(kSparse, key);
  };
  // key 5 at positions 0, 2, 4: gradient (0+2+4) + 1.5 d.
  EXPECT_THAT(row(5), ElementsAre(5 - 6.0f, 5.25f - 7.5f, 5.5f - 9.0f));
  EXPECT_THAT(row(9), ElementsAre(9 - 1.0f, 9.25f - 1.5f, 9.5f - 2.0f));
  std::vector<float> out(keys.size() * kDim);
  std::vector<float> zero(keys.size() * kDim, 0.0f);
  ASSERT_TRUE(client->PushPullSparse(kSparse, keys, zero, absl::MakeSpan(out))
                  .Wait()
                  .ok());
  EXPECT_EQ(out[0], -1.0f);
  EXPECT_EQ(out[2 * kDim + 1], 5.25f - 7.5f);
  EXPECT_EQ(out[4 * kDim + 2], 5.5f - 9.0f);
}

TEST_F(ClientTest, ArgumentValidationSendsNothing) {
  auto client = ConnectOk();
  ASSERT_NE(client, nullptr);
  std::vector<float> ten(10), three(3), four(4);
  std::vector<uint64_t> one_key = {1};
  EXPECT_EQ(client->PullDense(7, 0, absl::MakeSpan(ten)).Wait().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(client->PullDense(kDense, 995, absl::MakeSpan(ten)).Wait().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(client->PushDense(kDense, kSize + 1, {}).Wait().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(client->PushPullDense(kDense, 0, ten, absl::MakeSpan(three))
                .Wait()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client->PullDense(kSparse, 0, absl::MakeSpan(ten)).Wait().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      client->PullSparse(kSparse, one_key, absl::MakeSpan(four)).Wait().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client->PushSparse(kSparse, one_key, four).Wait().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      client->PullSparse(kDense, one_key, absl::MakeSpan(three)).Wait().code(),
      absl::StatusCode::kInvalidArgument);
  // A non-worker may not push to a sync table, nor clock or barrier.
  EXPECT_EQ(client->PushDense(kSync, 0, three).Wait().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(client->Clock().status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(client->Barrier().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(TotalRequests(), 0u);
  // Empty requests complete at once.
  EXPECT_TRUE(client->PullDense(kDense, kSize, {}).Wait().ok());
  EXPECT_TRUE(client->PullSparse(kSparse, {}, {}).Wait().ok());
  EXPECT_EQ(TotalRequests(), 0u);
}

TEST_F(ClientTest, WorkerRegistersClocksAndBarriers) {
  auto client = ConnectOk(1);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->clock(), 5);  // joined a running job at step 5
  EXPECT_EQ(fakes_[0]->register_calls(), 1);
  std::vector<Future> pushes;
  std::vector<float> grads(300, 1.0f);
  for (int i = 0; i < 20; ++i) {
    pushes.push_back(client->PushDense(kDense, 400, grads));
  }
  absl::StatusOr<int64_t> clock = client->Clock();
  ASSERT_TRUE(clock.ok()) << clock.status();
  EXPECT_EQ(*clock, 6);
  EXPECT_EQ(client->clock(), 6);
  // Clock() waited for every push to be acknowledged.
  for (const Future& f : pushes) EXPECT_TRUE(f.Ready());
  for (auto& f : fakes_) {
    EXPECT_EQ(f->clocks().at(1), 6);
    for (const auto& r : f->requests()) {
      EXPECT_EQ(r.worker_id(), 1);
      EXPECT_EQ(r.clock(), 5);
    }
  }
  ASSERT_TRUE(client->Barrier().ok());
  ASSERT_TRUE(client->Barrier().ok());
  EXPECT_THAT(fakes_[1]->barrier_generations(), ElementsAre(0, 1));
  // A worker may push to sync tables.
  EXPECT_TRUE(client->PushDense(kSync, 0, std::vector<float>(10, 1.0f))
                  .Wait()
                  .ok());
}

// The heartbeat notices an eviction but leaves the clock alone; Rejoin()
// registers again everywhere.
TEST_F(ClientTest, EvictedWorkerRegistersAgainOnlyWhenItRejoins) {
  auto client = ConnectOk(0);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(WaitFor([&] { return fakes_[1]->heartbeats() >= 2; }));
  fakes_[1]->Evict(0);
  const int64_t beats = fakes_[1]->heartbeats();
  ASSERT_TRUE(WaitFor([&] { return fakes_[1]->heartbeats() >= beats + 3; }));
  EXPECT_EQ(fakes_[1]->register_calls(), 1);
  absl::StatusOr<int64_t> clock = client->Rejoin();
  ASSERT_TRUE(clock.ok()) << clock.status();
  EXPECT_EQ(*clock, 5);
  EXPECT_EQ(fakes_[0]->register_calls(), 2);
  EXPECT_EQ(fakes_[1]->register_calls(), 2);
}

// A replicated shard's primary died and the client still resolves its
// address for a while (etcd has not named the successor yet): a Clock()
// attempt to the dead address fails fast and the retry, resolving again,
// reaches the new primary. Before, the attempt waited for the dead address
// (wait_for_ready) until the RPC timeout and Clock() failed: a sync job
// whose worker was in Clock() at a primary's SIGKILL lost that worker (seen
// as a hung SyncTrainingSurvivesPrimaryKillsWithExactSteps).
TEST_F(ClientTest, ClockFollowsThePrimaryPastADeadAddress) {
  std::string dead;
  {
    FakeParameterServer::Options o;
    o.tables = Tables();
    std::unique_ptr<FakeParameterServer> gone = FakeParameterServer::Start(o);
    ASSERT_NE(gone, nullptr);
    dead = gone->address();
  }  // its port is closed now
  absl::Mutex mu;
  std::vector<std::string> primaries = {fakes_[0]->address(),
                                        fakes_[1]->address()};
  ClientOptions options = Options(1);
  options.primary_address = [&](int shard) {
    absl::MutexLock lock(&mu);
    return primaries[shard];
  };
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  {
    absl::MutexLock lock(&mu);
    primaries[0] = dead;
  }
  std::thread elect([&] {
    absl::SleepFor(absl::Milliseconds(300));
    absl::MutexLock lock(&mu);
    primaries[0] = fakes_[0]->address();
  });
  const absl::Time begin = absl::Now();
  absl::StatusOr<int64_t> clock = (*client)->Clock();
  const absl::Duration took = absl::Now() - begin;
  elect.join();
  ASSERT_TRUE(clock.ok()) << clock.status();
  EXPECT_EQ(*clock, 6);
  EXPECT_EQ(fakes_[0]->clocks().at(1), 6);
  EXPECT_GE(took, absl::Milliseconds(300));
  EXPECT_LT(took, absl::Milliseconds(1500));  // rpc_timeout_ms is 2000
}

// With replicated shards the configured address may be a replica that is no
// longer the primary: statistics and errors name the server the client
// follows (the one that answered, or failed).
TEST_F(ClientTest, StatsAndErrorsNameThePrimaryFollowed) {
  FakeParameterServer::Options o;
  o.shard_index = 0;
  o.num_shards = 2;
  o.tables = Tables();
  std::unique_ptr<FakeParameterServer> primary = FakeParameterServer::Start(o);
  ASSERT_NE(primary, nullptr);
  const std::string followed = primary->address();
  ClientOptions options = Options(1);
  options.primary_address = [&](int shard) {
    return shard == 0 ? followed : fakes_[1]->address();
  };
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<std::vector<ShardStats>> stats = (*client)->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ((*stats)[0].address, followed);
  EXPECT_EQ((*stats)[1].address, fakes_[1]->address());

  primary->Shutdown();  // the followed primary is gone; etcd still names it
  const absl::Status status = (*client)->Clock().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("Clock on server " + followed + " (shard 0)"));
  EXPECT_THAT(std::string(status.message()),
              Not(HasSubstr(fakes_[0]->address())));
}

// One cluster checkpoint id for every shard: when a shard refuses it (a
// periodic checkpoint with that id landed there first), every shard is asked
// again with one newer id, so a set complete on every shard exists.
TEST_F(ClientTest, CheckpointRefusedByOneShardIsRetriedEverywhereWithANewerId) {
  auto client = ConnectOk();
  ASSERT_NE(client, nullptr);
  fakes_[0]->PeriodicCheckpointBeforeNextRequest();
  absl::StatusOr<std::vector<std::string>> paths = client->Checkpoint();
  ASSERT_TRUE(paths.ok()) << paths.status();
  const std::vector<uint64_t> ids = fakes_[0]->checkpoint_requests();
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_GT(ids[1], ids[0]);
  EXPECT_EQ(fakes_[1]->checkpoint_requests(), ids);
  EXPECT_THAT(*paths,
              ElementsAre(absl::StrCat("fake/shard-0/ckpt-", ids[1], ".bin"),
                          absl::StrCat("fake/shard-1/ckpt-", ids[1], ".bin")));
}

// A shard whose newest checkpoint is ahead of the caller's clock refuses
// every id: three attempts, then the shard's FAILED_PRECONDITION.
TEST_F(ClientTest, CheckpointGivesUpAfterThreeRefusedIds) {
  auto client = ConnectOk();
  ASSERT_NE(client, nullptr);
  const uint64_t ahead = static_cast<uint64_t>(
      absl::ToUnixMillis(absl::Now() + absl::Hours(1)));
  fakes_[1]->SetNewestCheckpoint(ahead);
  absl::StatusOr<std::vector<std::string>> paths = client->Checkpoint();
  ASSERT_EQ(paths.status().code(), absl::StatusCode::kFailedPrecondition)
      << paths.status();
  EXPECT_THAT(paths.status().message(),
              HasSubstr(absl::StrCat("is not newer than shard 1's newest "
                                     "checkpoint ", ahead)));
  EXPECT_EQ(fakes_[1]->checkpoint_requests().size(), 3u);
  EXPECT_EQ(fakes_[0]->checkpoint_requests().size(), 3u);
}

// The fake answers a resent push as the server does: duplicate, not applied.
TEST_F(ClientTest, ResentPushIsAnsweredAsADuplicate) {
  auto client = ConnectOk();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->PushDense(kDense, 0, std::vector<float>(4, 1.0f))
                  .Wait()
                  .ok());
  proto::DataRequest resend = fakes_[0]->requests().back();
  std::unique_ptr<proto::ParameterServer::Stub> stub =
      proto::ParameterServer::NewStub(grpc::CreateChannel(
          fakes_[0]->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto stream = stub->DataStream(&context);
  ASSERT_TRUE(stream->Write(resend));
  proto::DataResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.status_code(), 0);
  EXPECT_TRUE(response.duplicate());
  EXPECT_EQ(fakes_[0]->applied_pushes(), 1);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ClientTest, StatsAndCreateTable) {
  auto client = ConnectOk();
  ASSERT_NE(client, nullptr);
  std::vector<float> out(4);
  ASSERT_TRUE(client->PullSparse(kSparse, std::vector<uint64_t>{42},
                                 absl::MakeSpan(out.data(), kDim))
                  .Wait()
                  .ok());
  absl::StatusOr<std::vector<ShardStats>> stats = client->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->size(), 2u);
  EXPECT_EQ((*stats)[1].shard_index, 1u);
  EXPECT_EQ((*stats)[1].address, fakes_[1]->address());
  ASSERT_EQ((*stats)[0].tables.size(), 3u);
  EXPECT_EQ((*stats)[0].tables[1].num_rows +
                (*stats)[1].tables[1].num_rows,
            1u);

  TableConfig spec;
  spec.name = "bias";
  spec.size = 3;
  absl::StatusOr<TableInfo> created = client->CreateTable(spec);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->table_id, 3u);
  EXPECT_EQ(client->CreateTable(spec).status().code(),
            absl::StatusCode::kAlreadyExists);
  std::vector<float> bias(3);
  ASSERT_TRUE(client->PullDense(3, 0, absl::MakeSpan(bias)).Wait().ok());
  EXPECT_THAT(bias, ElementsAre(0.0f, 0.5f, 1.0f));
  // Another client built from the original config still connects, and
  // learns the new table on first use.
  auto other = ConnectOk();
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(other->GetTable("bias").ok());
}

TEST_F(ClientTest, DestroyingClientCancelsHungRequests) {
  std::unique_ptr<Client> client = ConnectToHungServer();
  ASSERT_NE(client, nullptr);
  std::vector<float> out(10);
  Future f = client->PullDense(kDense, 0, absl::MakeSpan(out));
  ASSERT_TRUE(WaitFor([&] { return fakes_[0]->requests().size() == 1; }));
  client.reset();
  EXPECT_EQ(f.Wait().code(), absl::StatusCode::kCancelled);
}

TEST(ClientOptionsTest, FromConfig) {
  ClusterConfig config;
  config.servers = {"a:1", "b:2"};
  config.tables = Tables();
  config.client.chunk_bytes = 1234;
  config.tls.enabled = true;
  config.tls.ca_file = "ca.pem";
  config.auth_token = "tok";
  ClientOptions o = ClientOptions::FromConfig(config, 3);
  EXPECT_EQ(o.servers, config.servers);
  EXPECT_EQ(o.tables.size(), 3u);
  EXPECT_EQ(o.worker_id, 3);
  EXPECT_EQ(o.client.chunk_bytes, 1234);
  EXPECT_TRUE(o.tls.enabled);
  EXPECT_EQ(o.tls.ca_file, "ca.pem");
  EXPECT_EQ(o.auth_token, "tok");
}

}  // namespace
}  // namespace ps
