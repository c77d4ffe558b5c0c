// Pushes that span shards, with real servers (2 shards; shard 1 reached
// through a TcpProxy): a push completes on every shard exactly once when
// shard 1's connection goes silent and comes back (the connection resends it
// with the same request ids), and fails naming where it was applied when
// shard 1 stays unreachable or refuses its part (client/shard_joiner.h).
// Table "w": dense, async, 100 elements (shard 0 owns [0, 50), shard 1
// [50, 100)), SGD at learning rate 1 from zeros: a push of ones subtracts
// exactly 1 where it was applied.
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"
#include "tests/fault_tcp_proxy.h"

namespace ps::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int kSize = 100;
constexpr int kHalf = 50;

int PortOf(const std::string& address) {
  int port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port));
  return port;
}

class PartialPushTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterSpec spec;
    spec.num_servers = 2;
    spec.num_workers = 1;
    spec.body_yaml = R"(
tables:
  - name: w
    kind: dense
    size: 100
    optimizer: {type: sgd, learning_rate: 1.0}
client:
  rpc_timeout_ms: 20000
  reconnect_initial_backoff_ms: 20
  reconnect_max_backoff_ms: 40
  max_reconnect_attempts: 3
  keepalive_ms: 1000
  keepalive_timeout_ms: 500
)";
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
        LocalCluster::Start(spec);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
    absl::StatusOr<int> port = proxy_.Start(PortOf(cluster_->addresses()[1]));
    ASSERT_TRUE(port.ok()) << port.status();
    ClientOptions options = cluster_->MakeClientOptions(-1);
    proxied_ = absl::StrCat("127.0.0.1:", *port);
    options.servers[1] = proxied_;
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  // The table as the servers hold it (read past the proxy).
  std::vector<float> Values() {
    absl::StatusOr<std::unique_ptr<Client>> reader = cluster_->Connect(-1);
    EXPECT_TRUE(reader.ok()) << reader.status();
    std::vector<float> w(kSize, 123.0f);
    if (reader.ok()) {
      EXPECT_TRUE((*reader)->PullDense(0, 0, absl::MakeSpan(w)).Wait().ok());
    }
    return w;
  }

  static void ExpectRange(const std::vector<float>& w, int begin, int end,
                          float value) {
    for (int i = begin; i < end; ++i) ASSERT_EQ(w[i], value) << "element " << i;
  }

  std::unique_ptr<LocalCluster> cluster_;
  TcpProxy proxy_;  // after cluster_: stopped first
  std::string proxied_;
  std::unique_ptr<Client> client_;
};

TEST_F(PartialPushTest, PushCompletesOnEveryShardOnceAfterASilentPartition) {
  const std::vector<float> ones(kSize, 1.0f);
  ASSERT_TRUE(client_->PushDense(0, 0, ones).Wait().ok());
  // Shard 1's connection goes silent; the push's part for shard 1 is
  // resent on a new connection (keepalive notices the old one is dead).
  proxy_.Freeze();
  absl::SleepFor(absl::Milliseconds(50));
  const absl::Status s = client_->PushDense(0, 0, ones).Wait();
  ASSERT_TRUE(s.ok()) << s;
  const std::vector<float> w = Values();
  ExpectRange(w, 0, kSize, -2.0f);  // each push exactly once per shard
}

TEST_F(PartialPushTest, UnreachableShardIsNamedAndTheOtherKeepsThePush) {
  proxy_.Stop();  // shard 1 is unreachable from now on
  const std::vector<float> ones(kSize, 1.0f);
  const absl::Status s = client_->PushDense(0, 0, ones).Wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat(
                  "push to table 'w' was applied on shard(s) 0 (",
                  cluster_->addresses()[0], "); no answer from shard(s) 1 (",
                  proxied_,
                  ") after the reconnect attempts (applied or not: unknown)")))
      << s;
  std::optional<PushOutcome> outcome = PushOutcomeOf(s);
  ASSERT_TRUE(outcome.has_value()) << s;
  EXPECT_THAT(outcome->applied, ElementsAre(0));
  EXPECT_THAT(outcome->not_applied, IsEmpty());
  EXPECT_THAT(outcome->unknown, ElementsAre(1));
  const std::vector<float> w = Values();
  ExpectRange(w, 0, kHalf, -1.0f);
  ExpectRange(w, kHalf, kSize, 0.0f);
}

TEST_F(PartialPushTest, RefusedPartIsNamedAndTheOtherKeepsThePush) {
  std::vector<float> grads(kSize, 1.0f);
  grads[kHalf + 7] = std::numeric_limits<float>::quiet_NaN();  // shard 1's
  const absl::Status s = client_->PushDense(0, 0, grads).Wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat(
                  "push to table 'w' was applied on shard(s) 0 (",
                  cluster_->addresses()[0],
                  "); refused (not applied) by shard(s) 1 (", proxied_,
                  "): ")))
      << s;
  std::optional<PushOutcome> outcome = PushOutcomeOf(s);
  ASSERT_TRUE(outcome.has_value()) << s;
  EXPECT_THAT(outcome->applied, ElementsAre(0));
  EXPECT_THAT(outcome->not_applied, ElementsAre(1));
  EXPECT_THAT(outcome->unknown, IsEmpty());
  const std::vector<float> w = Values();
  ExpectRange(w, 0, kHalf, -1.0f);
  ExpectRange(w, kHalf, kSize, 0.0f);
}

}  // namespace
}  // namespace ps::testing
