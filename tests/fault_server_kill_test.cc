// A server dies mid-training and comes back from its checkpoint.
//
// Job: least squares y = X w* (no noise, so w* is the unique solution) with
// 48 features over 2 server processes, trained by 3 async worker threads with
// minibatch SGD (pull, gradient, push) for a few hundred steps each. After
// the first third, the test asks shard 1 for a checkpoint (Checkpoint RPC),
// lets training go on, SIGKILLs shard 1 and restarts it on the same port.
// The restarted server must restore the newest checkpoint before it serves
// (its log says so, before "serving"), the clients reconnect with backoff and
// resend what was unanswered, and the job must still converge to w* within
// 1e-3 relative error. Updates shard 1 applied after its last checkpoint are
// lost by design; SGD makes up for them.
//
// The same with a sync table and 2 workers (bulk-synchronous minibatch SGD):
// the restarted shard is at its checkpoint's step while the workers are
// further on; their first requests catch its worker clocks up
// (WorkerRegistry::CatchUp), the steps it lost are skipped, and training
// finishes and converges.
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ps.grpc.pb.h"
#include "tests/cluster_harness.h"

namespace ps::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kFeatures = 48;
constexpr int kSamples = 768;
constexpr int kWorkers = 3;
constexpr int kSteps = 300;
constexpr int kBatch = 32;

struct Problem {
  std::vector<double> x;  // kSamples x kFeatures, row major
  std::vector<double> y;
  std::vector<double> w_star;
};

Problem MakeProblem() {
  Problem p;
  std::mt19937 rng(12345);
  std::normal_distribution<double> normal(0.0, 1.0);
  p.w_star.resize(kFeatures);
  for (int j = 0; j < kFeatures; ++j) p.w_star[j] = std::sin(1.0 + j);
  p.x.resize(kSamples * kFeatures);
  for (double& v : p.x) v = normal(rng);
  p.y.resize(kSamples);
  for (int i = 0; i < kSamples; ++i) {
    double dot = 0;
    for (int j = 0; j < kFeatures; ++j) dot += p.x[i * kFeatures + j] * p.w_star[j];
    p.y[i] = dot;
  }
  return p;
}

// A cluster checkpoint: one id (now, in ms) sent to every shard, as the
// client's Checkpoint() does (server/checkpoint_set.h). Returns the last
// shard's answer.
absl::StatusOr<proto::CheckpointResponse> RequestCheckpointOnce(
    const std::vector<std::string>& addresses) {
  proto::CheckpointRequest request;
  request.set_checkpoint_id(
      static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())));
  proto::CheckpointResponse response;
  for (const std::string& address : addresses) {
    auto channel =
        grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
    auto stub = proto::ParameterServer::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(20));
    grpc::Status s = stub->Checkpoint(&context, request, &response);
    if (!s.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                          s.error_message());
    }
  }
  return response;
}

// Like the client's Checkpoint(): a shard whose periodic checkpoint (every
// second here) came between the id and the request refuses the id as not
// newer (FAILED_PRECONDITION); a newer id is taken then.
absl::StatusOr<proto::CheckpointResponse> RequestCheckpoint(
    const std::vector<std::string>& addresses) {
  absl::StatusOr<proto::CheckpointResponse> response;
  for (int attempt = 0; attempt < 3; ++attempt) {
    response = RequestCheckpointOnce(addresses);
    if (response.status().code() != absl::StatusCode::kFailedPrecondition) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(2));  // a newer id
  }
  return response;
}

// Two servers and `workers` workers training the 48-element table `w` with
// `consistency` and SGD at `learning_rate`; checkpoints under
// $TEST_TMPDIR/`dir_name` (also every second when `periodic`); clients that
// keep reconnecting while a server is down.
ClusterSpec KillTestSpec(int workers, const std::string& consistency,
                         double learning_rate, const std::string& dir_name,
                         bool periodic) {
  const char* tmp = getenv("TEST_TMPDIR");
  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = workers;
  spec.body_yaml = absl::StrCat(R"(
tables:
  - name: w
    kind: dense
    size: 48
    consistency: )", consistency, R"(
    optimizer: {type: sgd, learning_rate: )", learning_rate, R"(}
server:
  checkpoint_dir: ")", tmp != nullptr ? tmp : "/tmp", "/", dir_name, R"("
)", periodic ? "  checkpoint_interval_s: 1\n" : "", R"(client:
  rpc_timeout_ms: 20000
  heartbeat_interval_ms: 200
  reconnect_initial_backoff_ms: 20
  reconnect_max_backoff_ms: 200
  max_reconnect_attempts: 1000
)");
  return spec;
}

// The least-squares gradient at `params` of kBatch samples drawn by `pick`.
void MinibatchGradient(const Problem& problem, absl::Span<const float> params,
                       std::mt19937& rng,
                       std::uniform_int_distribution<int>& pick,
                       std::vector<float>* grad) {
  std::vector<double> g(kFeatures, 0.0);
  for (int b = 0; b < kBatch; ++b) {
    const int i = pick(rng);
    const double* row = &problem.x[i * kFeatures];
    double residual = -problem.y[i];
    for (int j = 0; j < kFeatures; ++j) residual += row[j] * params[j];
    for (int j = 0; j < kFeatures; ++j) g[j] += residual * row[j];
  }
  for (int j = 0; j < kFeatures; ++j) {
    (*grad)[j] = static_cast<float>(g[j] / kBatch);
  }
}

// Waits up to 30 s until `progress` reaches `target`.
bool WaitForProgress(const std::atomic<int>& progress, int target) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (progress.load() < target && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  return progress.load() >= target;
}

double RelativeError(const std::vector<float>& w, const Problem& problem) {
  double err = 0, norm = 0;
  for (int j = 0; j < kFeatures; ++j) {
    err += (w[j] - problem.w_star[j]) * (w[j] - problem.w_star[j]);
    norm += problem.w_star[j] * problem.w_star[j];
  }
  return std::sqrt(err / norm);
}

TEST(FaultServerKillTest, KilledServerRestoresCheckpointAndJobConverges) {
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::Start(
      KillTestSpec(kWorkers, "async", 0.05, "server_kill_ckpt", /*periodic=*/true));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const Problem problem = MakeProblem();

  std::atomic<int> progress{0};  // steps finished by all workers together
  // Workers wait at half-time until the server was killed, so the kill
  // always lands mid-training however slow the machine is.
  std::atomic<bool> killed_flag{false};
  std::vector<absl::Status> results(kWorkers);
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      absl::StatusOr<std::unique_ptr<Client>> client = (*cluster)->Connect(w);
      if (!client.ok()) {
        results[w] = client.status();
        return;
      }
      std::mt19937 rng(100 + w);
      // Each worker samples from its own third of the data.
      const int begin = w * kSamples / kWorkers;
      const int end = (w + 1) * kSamples / kWorkers;
      std::uniform_int_distribution<int> pick(begin, end - 1);
      std::vector<float> params(kFeatures), grad(kFeatures);
      for (int step = 0; step < kSteps; ++step) {
        if (step == kSteps / 2) {
          while (!killed_flag) absl::SleepFor(absl::Milliseconds(1));
        }
        absl::Status s =
            (*client)->PullDense(0, 0, absl::MakeSpan(params)).Wait();
        if (!s.ok()) {
          results[w] = s;
          return;
        }
        MinibatchGradient(problem, params, rng, pick, &grad);
        s = (*client)->PushDense(0, 0, grad).Wait();
        if (!s.ok()) {
          results[w] = s;
          return;
        }
        ++progress;
      }
    });
  }

  ASSERT_TRUE(WaitForProgress(progress, kWorkers * kSteps / 3));
  absl::StatusOr<proto::CheckpointResponse> checkpoint =
      RequestCheckpoint((*cluster)->addresses());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  EXPECT_THAT(checkpoint->path(), HasSubstr("/shard-1-of-2/ckpt-"));
  EXPECT_GT(checkpoint->bytes(), 48u * 4);

  ASSERT_TRUE(WaitForProgress(progress, kWorkers * (kSteps / 2)));
  const int at_kill = progress.load();
  absl::StatusOr<int> killed = (*cluster)->KillServer(1, SIGKILL);
  killed_flag = true;
  ASSERT_TRUE(killed.ok());
  EXPECT_TRUE(WIFSIGNALED(*killed));
  absl::SleepFor(absl::Milliseconds(300));  // the clients notice, back off
  ASSERT_TRUE((*cluster)->RestartServer(1).ok());
  const absl::Time restarted = absl::Now();

  for (std::thread& t : workers) t.join();
  for (int w = 0; w < kWorkers; ++w) {
    ASSERT_TRUE(results[w].ok()) << "worker " << w << ": " << results[w];
  }
  EXPECT_EQ(progress.load(), kWorkers * kSteps);
  EXPECT_LT(at_kill, kWorkers * kSteps);  // killed mid-training

  // The restarted server restored a checkpoint before it served.
  const std::string log = (*cluster)->ServerLog(1);
  const size_t second_start = log.rfind("backend cpu");
  ASSERT_NE(second_start, std::string::npos) << log;
  const size_t restored = log.find("restored checkpoint", second_start);
  const size_t serving = log.find("serving on", second_start);
  ASSERT_NE(restored, std::string::npos) << log;
  ASSERT_NE(serving, std::string::npos) << log;
  EXPECT_LT(restored, serving) << log;

  absl::StatusOr<std::unique_ptr<Client>> reader = (*cluster)->Connect(-1);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<float> w(kFeatures);
  ASSERT_TRUE((*reader)->PullDense(0, 0, absl::MakeSpan(w)).Wait().ok());
  const double relative = RelativeError(w, problem);
  std::printf("relative error %.3g after restart (%.0f ms after restart)\n",
              relative, absl::ToDoubleMilliseconds(absl::Now() - restarted));
  EXPECT_LT(relative, 1e-3);

  // Shard 1's version went on from the checkpoint, not from 0: it counts
  // more pushes than were made after the restart alone.
  absl::StatusOr<std::vector<ShardStats>> stats = (*reader)->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GT((*stats)[1].tables[0].version,
            static_cast<uint64_t>(kWorkers * kSteps - at_kill));
}

TEST(FaultServerKillTest, SyncJobResumesAfterRestoreAndConverges) {
  constexpr int kSyncWorkers = 2;
  constexpr int kSyncSteps = 120;
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::Start(
      KillTestSpec(kSyncWorkers, "sync", 0.3, "server_kill_sync_ckpt",
                   /*periodic=*/false));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const Problem problem = MakeProblem();

  std::atomic<int> progress{0};
  std::atomic<bool> checkpointed{false};
  std::atomic<bool> killed_flag{false};
  std::vector<absl::Status> results(kSyncWorkers);
  std::vector<std::thread> workers;
  for (int w = 0; w < kSyncWorkers; ++w) {
    workers.emplace_back([&, w] {
      absl::StatusOr<std::unique_ptr<Client>> client = (*cluster)->Connect(w);
      if (!client.ok()) {
        results[w] = client.status();
        return;
      }
      std::mt19937 rng(200 + w);
      const int begin = w * kSamples / kSyncWorkers;
      const int end = (w + 1) * kSamples / kSyncWorkers;
      std::uniform_int_distribution<int> pick(begin, end - 1);
      std::vector<float> params(kFeatures), grad(kFeatures);
      while ((*client)->clock() < kSyncSteps) {
        // The checkpoint is taken at a quarter (the workers wait for it
        // there: a sync snapshot waits for a step boundary, which a running
        // job may offer only at the next pause), the kill at half, so the
        // restored shard must catch the workers up.
        if ((*client)->clock() == kSyncSteps / 4) {
          while (!checkpointed) absl::SleepFor(absl::Milliseconds(1));
        }
        if ((*client)->clock() == kSyncSteps / 2) {
          while (!killed_flag) absl::SleepFor(absl::Milliseconds(1));
        }
        absl::Status s =
            (*client)->PullDense(0, 0, absl::MakeSpan(params)).Wait();
        if (!s.ok()) {
          results[w] = s;
          return;
        }
        MinibatchGradient(problem, params, rng, pick, &grad);
        s = (*client)->PushDense(0, 0, grad).Wait();
        if (!s.ok()) {
          results[w] = s;
          return;
        }
        // A Clock call on the wire when the server dies is retried by the
        // client itself (ClientImpl::Clock), so no error reaches the trainer.
        absl::StatusOr<int64_t> clock = (*client)->Clock();
        if (!clock.ok()) {
          results[w] = clock.status();
          return;
        }
        ++progress;
      }
    });
  }
  ASSERT_TRUE(WaitForProgress(progress, kSyncWorkers * kSyncSteps / 4));
  absl::StatusOr<proto::CheckpointResponse> checkpoint =
      RequestCheckpoint((*cluster)->addresses());
  checkpointed = true;
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  ASSERT_TRUE(WaitForProgress(progress, kSyncWorkers * (kSyncSteps / 2)));
  absl::StatusOr<int> killed = (*cluster)->KillServer(1, SIGKILL);
  killed_flag = true;
  ASSERT_TRUE(killed.ok());
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_TRUE((*cluster)->RestartServer(1).ok());

  for (std::thread& t : workers) t.join();
  for (int w = 0; w < kSyncWorkers; ++w) {
    ASSERT_TRUE(results[w].ok()) << "worker " << w << ": " << results[w]
                                 << "\n" << (*cluster)->ServerLog(1);
  }
  const std::string log = (*cluster)->ServerLog(1);
  EXPECT_NE(log.find("restored checkpoint"), std::string::npos) << log;
  EXPECT_NE(log.find("caught up"), std::string::npos) << log;

  absl::StatusOr<std::unique_ptr<Client>> reader = (*cluster)->Connect(-1);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<float> w(kFeatures);
  ASSERT_TRUE((*reader)->PullDense(0, 0, absl::MakeSpan(w)).Wait().ok());
  const double relative = RelativeError(w, problem);
  std::printf("sync: relative error %.3g\n", relative);
  EXPECT_LT(relative, 1e-3);
  absl::StatusOr<std::vector<ShardStats>> stats = (*reader)->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  for (const ShardStats& shard : *stats) {
    EXPECT_EQ(shard.tables[0].step, kSyncSteps) << "shard " << shard.shard_index;
  }
}

}  // namespace
}  // namespace ps::testing
