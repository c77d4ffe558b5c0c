// Consistent cluster checkpoints (server/checkpoint_set.h), with two real
// ps_server processes sharing one checkpoint directory:
// - one shard's newest part truncated: both shards restore the previous
//   common id (exact values), and the newer parts are set aside;
// - coordinated checkpoints taken while two workers run sync steps cut
//   every shard at the same step (server/step_holds.h), and a request that
//   holds both rounds of a cut is refused (INVALID_ARGUMENT);
// - one shard's only part deleted: every shard refuses to start, naming the
//   shard and the id; --allow_inconsistent_restore serves (mixed, exactly);
// - SIGTERM of the cluster writes one id on both shards, restored whole;
// - periodic checkpoints share an id (a multiple of the interval, in ms).
//
// The table is dense, 8 values over 2 shards, SGD with learning rate 1, so a
// push of -1 adds exactly 1 to every value.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ps.grpc.pb.h"
#include "server/checkpoint_file.h"
#include "tests/checkpoint_cluster_util.h"
#include "tests/cluster_harness.h"
#include "tests/test_process.h"

namespace ps::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kSize = 8;

ClusterSpec Spec(const std::string& dir, int interval_s) {
  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = 1;
  spec.body_yaml = CheckpointedTableYaml(
      kSize, "async", dir,
      interval_s > 0 ? absl::StrCat("  checkpoint_interval_s: ", interval_s, "\n")
                     : "");
  return spec;
}

std::string PartPath(const std::string& dir, int shard, uint64_t id) {
  return CheckpointPartPath(dir, shard, 2, id);
}

TEST(ClusterCheckpointTest, TruncatedNewestPartMakesAllShardsFallBack) {
  const std::string dir = FreshTestDir("truncated");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(Spec(dir, 0));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  LocalCluster& c = **cluster;
  uint64_t older = 0, newer = 0;
  ASSERT_NO_FATAL_FAILURE(CheckpointTwiceThenKill(c, kSize, &older, &newer));

  const std::string damaged = PartPath(dir, 1, newer);
  ASSERT_TRUE(std::filesystem::exists(damaged)) << damaged;
  std::filesystem::resize_file(damaged,
                               std::filesystem::file_size(damaged) / 2);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.RestartServer(i).ok()) << c.ServerLog(i);
  }
  // Both shards are back at `older`: 1 everywhere, never 2 next to 1.
  EXPECT_THAT(PullAll(c, kSize), ElementsAre(1, 1, 1, 1, 1, 1, 1, 1));
  for (int i = 0; i < 2; ++i) {
    const std::string log = c.ServerLog(i);
    EXPECT_THAT(log, HasSubstr(absl::StrCat("restored cluster checkpoint ",
                                            older, " (complete on all 2")))
        << log;
    EXPECT_THAT(log, HasSubstr(absl::StrCat("cluster checkpoint ", newer,
                                            " is not complete: ")));
  }
  EXPECT_THAT(c.ServerLog(0),
              HasSubstr("shard 1's part is unusable: checkpoint " + damaged +
                        ": truncated"));
  // Shard 0's newer part pairs with nothing: set aside; shard 1's damaged
  // one likewise.
  EXPECT_TRUE(std::filesystem::exists(PartPath(dir, 0, newer) + ".unmatched"));
  EXPECT_TRUE(std::filesystem::exists(damaged + ".corrupt"));
}

// A part of the right size with one bit flipped in its data (a bad disk
// block, not a short write): its checksum fails, and the cluster falls back
// as for a truncated part.
TEST(ClusterCheckpointTest, BitFlippedNewestPartMakesAllShardsFallBack) {
  const std::string dir = FreshTestDir("bitflip");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(Spec(dir, 0));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  LocalCluster& c = **cluster;
  uint64_t older = 0, newer = 0;
  ASSERT_NO_FATAL_FAILURE(CheckpointTwiceThenKill(c, kSize, &older, &newer));

  const std::string damaged = PartPath(dir, 0, newer);
  const uintmax_t size = std::filesystem::file_size(damaged);
  {
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good()) << damaged;
    f.seekg(static_cast<std::streamoff>(size / 2));
    char byte = 0;
    f.read(&byte, 1);
    byte ^= 0x10;
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.write(&byte, 1);
  }
  ASSERT_EQ(std::filesystem::file_size(damaged), size);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.RestartServer(i).ok()) << c.ServerLog(i);
  }
  EXPECT_THAT(PullAll(c, kSize), ElementsAre(1, 1, 1, 1, 1, 1, 1, 1));
  for (int i = 0; i < 2; ++i) {
    EXPECT_THAT(c.ServerLog(i),
                HasSubstr(absl::StrCat("restored cluster checkpoint ", older,
                                       " (complete on all 2")));
  }
  // Shard 0 (restarted first) finds its own part damaged and sets it aside.
  EXPECT_THAT(c.ServerLog(0),
              HasSubstr("checkpoint " + damaged + ": checksum mismatch"));
  EXPECT_TRUE(std::filesystem::exists(damaged + ".corrupt"));
}

TEST(ClusterCheckpointTest, MissingPartRefusesToServeUnlessOverridden) {
  const std::string dir = FreshTestDir("missing");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(Spec(dir, 0));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  LocalCluster& c = **cluster;
  AddToAll(c, kSize, 1);
  const uint64_t id = CoordinatedCheckpoint(c);
  KillAll(c, SIGKILL);
  ASSERT_TRUE(std::filesystem::remove(PartPath(dir, 1, id)));

  for (int i = 0; i < 2; ++i) {
    absl::Status started = c.RestartServer(i);
    EXPECT_FALSE(started.ok()) << "shard " << i << " served";
    const std::string log = c.ServerLog(i);
    EXPECT_THAT(log, HasSubstr(absl::StrCat(
                         "the newest, ", id, ": shard 1 has no part of it (no ",
                         dir, "/shard-1-of-2/ckpt-")))
        << log;
    EXPECT_THAT(log, HasSubstr("--allow_inconsistent_restore"));
  }

  c.set_extra_server_flags({"--allow_inconsistent_restore"});
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.RestartServer(i).ok()) << c.ServerLog(i);
  }
  // Shard 0 restored its part, shard 1 has none: the mix the flag allows.
  EXPECT_THAT(PullAll(c, kSize), ElementsAre(1, 1, 1, 1, 0, 0, 0, 0));
}

// While two workers run sync steps as fast as they can (each pushes
// gradient 1 to every value: a step takes exactly 1 off each), every
// coordinated checkpoint's parts hold the same number of steps on both
// shards, and each part's values are exactly -steps: no part has a step
// more than the other, nor half of one.
TEST(ClusterCheckpointTest, CheckpointsDuringSyncTrainingCutEveryShardAtOneStep) {
  const std::string dir = FreshTestDir("sync_cut");
  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = 2;
  spec.body_yaml = CheckpointedTableYaml(kSize, "sync", dir);
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(spec);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  LocalCluster& c = **cluster;

  constexpr int kSteps = 600;
  std::atomic<int> running{2};
  std::vector<absl::Status> results(2);
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&, w] {
      absl::StatusOr<std::unique_ptr<Client>> client = c.Connect(w);
      results[w] = client.status();
      std::vector<float> params(kSize);
      const std::vector<float> ones(kSize, 1.0f);
      for (int step = 0; step < kSteps && results[w].ok(); ++step) {
        results[w] = (*client)->PullDense(0, 0, absl::MakeSpan(params)).Wait();
        if (results[w].ok()) results[w] = (*client)->PushDense(0, 0, ones).Wait();
        if (results[w].ok()) results[w] = (*client)->Clock().status();
      }
      --running;
    });
  }
  std::set<int64_t> cut_steps;
  while (running.load() > 0) {
    const uint64_t id = CoordinatedCheckpoint(c);
    if (id == 0) break;  // the failure is reported
    int64_t steps[2];
    for (int shard = 0; shard < 2; ++shard) {
      absl::StatusOr<ShardState> part =
          ReadCheckpointFile(PartPath(dir, shard, id));
      ASSERT_TRUE(part.ok()) << part.status();
      ASSERT_EQ(part->tables.size(), 1u);
      const TableState& table = part->tables[0];
      steps[shard] = table.steps;
      EXPECT_THAT(table.values, ::testing::Each(-static_cast<float>(
                                    table.steps)))
          << "shard " << shard << ", checkpoint " << id;
    }
    EXPECT_EQ(steps[0], steps[1]) << "checkpoint " << id;
    if (steps[0] > 0 && steps[0] < kSteps) cut_steps.insert(steps[0]);
  }
  for (std::thread& t : workers) t.join();
  ASSERT_TRUE(results[0].ok()) << results[0];
  ASSERT_TRUE(results[1].ok()) << results[1];
  // The cuts fell during training, at several steps.
  std::printf("checkpoints cut at %zu distinct steps during training\n",
              cut_steps.size());
  EXPECT_GE(cut_steps.size(), 3u);
  EXPECT_THAT(PullAll(c, kSize), ::testing::Each(-kSteps));
}

// The two rounds of a cut in one request are refused, precisely, and the
// server goes on checkpointing.
TEST(ClusterCheckpointTest, BothRoundsOfACutInOneRequestAreRefused) {
  const std::string dir = FreshTestDir("cut_request");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(Spec(dir, 0));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  LocalCluster& c = **cluster;
  auto stub = proto::ParameterServer::NewStub(grpc::CreateChannel(
      c.addresses()[0], grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  proto::CheckpointRequest request;
  request.set_checkpoint_id(7);
  request.set_prepare_cut(true);
  (*request.mutable_at_steps())[0] = 3;
  proto::CheckpointResponse response;
  const grpc::Status status = stub->Checkpoint(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("prepare_cut and at_steps are the two rounds of one "
                        "cut"));
  EXPECT_NE(CoordinatedCheckpoint(c), 0u);
}

TEST(ClusterCheckpointTest, SigtermCheckpointIsOneIdOnEveryShard) {
  const std::string dir = FreshTestDir("sigterm");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(Spec(dir, 0));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  LocalCluster& c = **cluster;
  AddToAll(c, kSize, 1);
  const uint64_t id = CoordinatedCheckpoint(c);
  AddToAll(c, kSize, 2);
  KillAll(c, SIGTERM);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(std::filesystem::exists(PartPath(dir, i, id + 1))) << i;
  }
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.RestartServer(i).ok()) << c.ServerLog(i);
    EXPECT_THAT(c.ServerLog(i),
                HasSubstr(absl::StrCat("restored cluster checkpoint ", id + 1)));
  }
  EXPECT_THAT(PullAll(c, kSize), ElementsAre(3, 3, 3, 3, 3, 3, 3, 3));
}

TEST(ClusterCheckpointTest, PeriodicCheckpointsShareAnIdAtTheIntervalBoundary) {
  const std::string dir = FreshTestDir("periodic");
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(Spec(dir, 1));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  LocalCluster& c = **cluster;
  AddToAll(c, kSize, 1);
  // Wait for a boundary after the push that both shards wrote.
  const uint64_t after = static_cast<uint64_t>(absl::ToUnixMillis(absl::Now()));
  uint64_t common = 0;
  for (int tries = 0; tries < 100 && common == 0; ++tries) {
    absl::SleepFor(absl::Milliseconds(100));
    const uint64_t boundary = (after / 1000 + 1) * 1000;
    if (std::filesystem::exists(PartPath(dir, 0, boundary)) &&
        std::filesystem::exists(PartPath(dir, 1, boundary))) {
      common = boundary;
    }
  }
  ASSERT_NE(common, 0u) << c.ServerLog(0) << c.ServerLog(1);
  KillAll(c, SIGKILL);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.RestartServer(i).ok()) << c.ServerLog(i);
  }
  EXPECT_THAT(PullAll(c, kSize), ElementsAre(1, 1, 1, 1, 1, 1, 1, 1));
  EXPECT_THAT(c.ServerLog(0), HasSubstr("restored cluster checkpoint "));
}

}  // namespace
}  // namespace ps::testing
