// Exactly-once pushes under a broken network: 4 async clients push +1 (SGD,
// lr 1) to every key of a dense and a sparse table through TCP proxies that
// drop every connection every ~35 ms. Clients reconnect with backoff and
// resend unanswered requests with their original ids; the servers' dedup
// windows keep a retried push from being applied twice. The clients run until
// the connections were cut kCutEvents times; every value must end at exactly
// -(total rounds pushed): nothing lost, nothing applied twice.
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"
#include "tests/fault_tcp_proxy.h"

namespace ps::testing {
namespace {

constexpr int kClients = 4;
constexpr int kCutEvents = 40;  // then the clients stop
constexpr int kMinRounds = 100;
constexpr int kDenseSize = 3000;
constexpr int kSparseKeys = 200;
constexpr int kDim = 4;

int PortOf(const std::string& address) {
  int port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port));
  return port;
}

TEST(FaultConnectionDropTest, DroppedConnectionsLoseAndDuplicateNothing) {
  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = 1;
  spec.body_yaml = R"(
tables:
  - name: dense
    kind: dense
    size: 3000
    optimizer: {type: sgd, learning_rate: 1.0}
  - name: emb
    kind: sparse
    dim: 4
    optimizer: {type: sgd, learning_rate: 1.0}
client:
  chunk_bytes: 4096
  rpc_timeout_ms: 20000
  reconnect_initial_backoff_ms: 5
  reconnect_max_backoff_ms: 80
  max_reconnect_attempts: 100000
)";
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(spec);
  ASSERT_TRUE(cluster.ok()) << cluster.status();

  std::vector<std::unique_ptr<TcpProxy>> proxies;
  ClientOptions proxied = (*cluster)->MakeClientOptions(-1);
  for (int i = 0; i < spec.num_servers; ++i) {
    proxies.push_back(std::make_unique<TcpProxy>());
    absl::StatusOr<int> port =
        proxies.back()->Start(PortOf((*cluster)->addresses()[i]));
    ASSERT_TRUE(port.ok()) << port.status();
    proxied.servers[i] = absl::StrCat("127.0.0.1:", *port);
  }

  std::vector<uint64_t> keys(kSparseKeys);
  for (int i = 0; i < kSparseKeys; ++i) keys[i] = 7919ull * i + 11;

  auto cut_events = [&] {
    int64_t events = 0;
    for (const auto& proxy : proxies) events += proxy->cut_events();
    return events;
  };
  std::atomic<bool> done{false};
  std::thread cutter([&] {
    std::mt19937 rng(1);
    while (!done) {
      absl::SleepFor(absl::Milliseconds(15 + rng() % 30));
      proxies[rng() % proxies.size()]->CutAll();
    }
  });
  const absl::Time deadline = absl::Now() + absl::Seconds(20);

  std::vector<absl::Status> results(kClients);
  std::vector<int> rounds(kClients, 0);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(proxied);
      if (!client.ok()) {
        results[c] = client.status();
        return;
      }
      const std::vector<float> dense_grad(kDenseSize, 1.0f);
      const std::vector<float> sparse_grad(kSparseKeys * kDim, 1.0f);
      std::vector<float> pulled(kDenseSize);
      std::vector<Future> in_flight;
      for (int r = 0; r < kMinRounds ||
                      (cut_events() < kCutEvents && absl::Now() < deadline);
           ++r) {
        // Every other dense push is zero-copy: its resends after a cut
        // read dense_grad again (alive until the WaitAll below).
        in_flight.push_back(r % 2 == 0
                                ? (*client)->PushDense(0, 0, dense_grad)
                                : (*client)->PushDenseZeroCopy(0, 0, dense_grad));
        in_flight.push_back((*client)->PushSparse(1, keys, sparse_grad));
        rounds[c] = r + 1;
        if (r % 10 == 0) {
          in_flight.push_back(
              (*client)->PullDense(0, 0, absl::MakeSpan(pulled)));
        }
        if (in_flight.size() >= 8) {
          absl::Status s = WaitAll(in_flight);
          if (!s.ok()) {
            results[c] = s;
            return;
          }
          in_flight.clear();
        }
      }
      results[c] = WaitAll(in_flight);
    });
  }
  for (std::thread& t : threads) t.join();
  done = true;
  cutter.join();
  for (int c = 0; c < kClients; ++c) {
    ASSERT_TRUE(results[c].ok()) << "client " << c << ": " << results[c];
  }
  int64_t cut = 0, events = 0, accepted = 0;
  for (const auto& proxy : proxies) {
    cut += proxy->connections_cut();
    events += proxy->cut_events();
    accepted += proxy->connections_accepted();
  }
  // The network really broke, many times, under load.
  EXPECT_GE(events, kCutEvents);
  int total_rounds = 0;
  for (int r : rounds) total_rounds += r;
  std::printf(
      "cut events %lld, connections cut %lld, accepted %lld, rounds %d\n",
      static_cast<long long>(events), static_cast<long long>(cut),
      static_cast<long long>(accepted), total_rounds);

  absl::StatusOr<std::unique_ptr<Client>> reader = (*cluster)->Connect(-1);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<float> dense(kDenseSize, 123.0f);
  ASSERT_TRUE((*reader)->PullDense(0, 0, absl::MakeSpan(dense)).Wait().ok());
  std::vector<float> sparse(kSparseKeys * kDim, 123.0f);
  ASSERT_TRUE(
      (*reader)->PullSparse(1, keys, absl::MakeSpan(sparse)).Wait().ok());
  const float expected = -1.0f * total_rounds;
  for (int i = 0; i < kDenseSize; ++i) {
    ASSERT_EQ(dense[i], expected) << "dense element " << i;
  }
  for (int i = 0; i < kSparseKeys * kDim; ++i) {
    ASSERT_EQ(sparse[i], expected) << "sparse value " << i;
  }
  // Every logical push counted once in the versions too: chunks of one push
  // bump a shard's version once.
  absl::StatusOr<std::vector<ShardStats>> stats = (*reader)->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  for (const ShardStats& shard : *stats) {
    EXPECT_EQ(shard.tables[0].version,
              static_cast<uint64_t>(total_rounds))
        << "shard " << shard.shard_index;
  }
}

}  // namespace
}  // namespace ps::testing
