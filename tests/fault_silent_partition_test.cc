// A silent network partition: the connection to a server stops delivering
// bytes but never closes (TcpProxy::Freeze), so TCP reports nothing for
// minutes. With client.keepalive_ms the client notices within keepalive_ms +
// keepalive_timeout_ms, reconnects and resends, and the requests complete
// with exact values; without keepalive (the control case) they are still
// pending several keepalive periods later.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"
#include "tests/fault_tcp_proxy.h"

namespace ps::testing {
namespace {

constexpr int kSize = 1000;

int PortOf(const std::string& address) {
  int port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port));
  return port;
}

class FaultSilentPartitionTest : public ::testing::Test {
 protected:
  // A one-server cluster and client options that reach it through proxy_,
  // with the given keepalive (ms; 0 = off).
  ClientOptions StartCluster(int keepalive_ms) {
    ClusterSpec spec;
    spec.num_servers = 1;
    spec.num_workers = 1;
    spec.body_yaml = absl::StrCat(R"(
tables:
  - name: dense
    kind: dense
    size: 1000
    optimizer: {type: sgd, learning_rate: 1.0}
client:
  rpc_timeout_ms: 20000
  reconnect_initial_backoff_ms: 5
  reconnect_max_backoff_ms: 80
  max_reconnect_attempts: 100000
  keepalive_timeout_ms: 500
  keepalive_ms: )",
                                  keepalive_ms, "\n");
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
        LocalCluster::Start(spec);
    EXPECT_TRUE(cluster.ok()) << cluster.status();
    if (!cluster.ok()) return ClientOptions();
    cluster_ = *std::move(cluster);
    ClientOptions options = cluster_->MakeClientOptions(-1);
    absl::StatusOr<int> port = proxy_.Start(PortOf(cluster_->addresses()[0]));
    EXPECT_TRUE(port.ok()) << port.status();
    options.servers[0] = absl::StrCat("127.0.0.1:", *port);
    return options;
  }

  std::unique_ptr<LocalCluster> cluster_;
  TcpProxy proxy_;  // after cluster_: stopped first
};

TEST_F(FaultSilentPartitionTest, KeepaliveNoticesAFrozenConnectionAndResends) {
  const ClientOptions options = StartCluster(/*keepalive_ms=*/1000);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  const std::vector<float> ones(kSize, 1.0f);
  ASSERT_TRUE((*client)->PushDense(0, 0, ones).Wait().ok());

  proxy_.Freeze();
  absl::SleepFor(absl::Milliseconds(50));  // the proxy's loop applies it
  const absl::Time start = absl::Now();
  Future push = (*client)->PushDense(0, 0, ones);
  std::vector<float> pulled(kSize);
  Future pull = (*client)->PullDense(0, 0, absl::MakeSpan(pulled));
  ASSERT_TRUE(push.Wait().ok());
  ASSERT_TRUE(pull.Wait().ok());
  const absl::Duration took = absl::Now() - start;

  // Both pushes applied exactly once (SGD, lr 1, from zeros).
  for (int i = 0; i < kSize; ++i)
    ASSERT_EQ(pulled[i], -2.0f) << "element " << i;
  // Noticed by the keepalive (1 s + 0.5 s), far before TCP would give up.
  EXPECT_GE(took, absl::Milliseconds(500));
  EXPECT_LT(took, absl::Seconds(10));
  EXPECT_GE(proxy_.connections_accepted(), 2);
}

TEST_F(FaultSilentPartitionTest, WithoutKeepaliveAFrozenConnectionHangs) {
  const ClientOptions options = StartCluster(/*keepalive_ms=*/0);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<float> pulled(kSize);
  ASSERT_TRUE((*client)->PullDense(0, 0, absl::MakeSpan(pulled)).Wait().ok());

  proxy_.Freeze();
  absl::SleepFor(absl::Milliseconds(50));
  Future pull = (*client)->PullDense(0, 0, absl::MakeSpan(pulled));
  absl::SleepFor(absl::Seconds(3));  // two keepalive periods of the test above
  EXPECT_FALSE(pull.Ready());
  EXPECT_EQ(proxy_.connections_accepted(), 1);
  client->reset();  // fails the pending pull (CANCELLED) before `pulled` dies
  EXPECT_TRUE(pull.Ready());
}

}  // namespace
}  // namespace ps::testing
