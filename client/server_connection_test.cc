#include "client/server_connection.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/testing/fake_parameter_server.h"
#include "client/future.h"
#include "common/bytes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

using ::ps::testing::FakeParameterServer;
using ::testing::HasSubstr;

constexpr uint32_t kTable = 0;
constexpr uint64_t kSize = 1000;

TableConfig DenseTable() {
  TableConfig t;
  t.name = "w";
  t.table_id = kTable;
  t.size = kSize;
  return t;
}

FakeParameterServer::Options FakeOptions(int port = 0) {
  FakeParameterServer::Options o;
  o.tables = {DenseTable()};
  o.port = port;
  return o;
}

std::unique_ptr<ServerConnection> Connect(const std::string& address,
                                          int64_t attempts = 50,
                                          const std::string& token = "") {
  ServerConnection::Options o;
  o.address = address;
  o.client.reconnect_initial_backoff_ms = 10;
  o.client.reconnect_max_backoff_ms = 100;
  o.client.max_reconnect_attempts = attempts;
  o.auth_token = token;
  absl::StatusOr<std::unique_ptr<ServerConnection>> c =
      ServerConnection::Create(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return std::move(*c);
}

proto::DataRequest Pull(uint64_t offset, uint64_t length) {
  proto::DataRequest r;
  r.set_op(proto::PULL);
  r.set_table_id(kTable);
  r.set_worker_id(-1);
  r.set_offset(offset);
  r.set_length(length);
  r.set_client_id(77);
  r.set_first_chunk(true);
  return r;
}

proto::DataRequest Push(uint64_t offset, const std::vector<float>& grads) {
  proto::DataRequest r = Pull(offset, grads.size());
  r.set_op(proto::PUSH);
  r.set_values(EncodeRaw<float>(grads));
  return r;
}

// Sends `request`; the future completes with the status, `values` (if given)
// receives the pulled floats.
Future SendAsync(ServerConnection* c, proto::DataRequest request,
                 std::vector<float>* values = nullptr) {
  Promise p;
  c->Send(std::move(request), [state = p.state, values](
                                  const absl::Status& s,
                                  proto::DataResponse* response) {
    if (s.ok() && values != nullptr) {
      absl::Span<const float> v = ViewRaw<float>(response->values());
      values->assign(v.begin(), v.end());
    }
    state->Complete(s);
  });
  return p.future();
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

TEST(ServerConnectionTest, PipelinesManyRequestsOnOneStream) {
  auto fake = FakeParameterServer::Start(FakeOptions());
  ASSERT_NE(fake, nullptr);
  auto conn = Connect(fake->address());
  constexpr int kRequests = 300;
  std::vector<std::vector<float>> values(kRequests);
  std::vector<Future> futures;
  for (int i = 0; i < kRequests; ++i) {
    futures.push_back(
        SendAsync(conn.get(), Pull(i, 1 + i % 50), &values[i]));
  }
  ASSERT_TRUE(WaitAll(futures).ok());
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_EQ(values[i].size(), 1u + i % 50) << i;
    for (size_t j = 0; j < values[i].size(); ++j) {
      ASSERT_EQ(values[i][j], 0.5f * (i + j)) << i << " " << j;
    }
  }
  EXPECT_EQ(fake->streams(), 1);
  EXPECT_EQ(conn->StreamsOpenedForTesting(), 1);
  EXPECT_EQ(conn->NumPendingForTesting(), 0u);
  // Request ids are unique.
  std::set<uint64_t> ids;
  for (const auto& r : fake->requests()) ids.insert(r.request_id());
  EXPECT_EQ(ids.size(), static_cast<size_t>(kRequests));
}

TEST(ServerConnectionTest, ServerErrorsArriveAsStatusesAndStreamSurvives) {
  auto fake = FakeParameterServer::Start(FakeOptions());
  ASSERT_NE(fake, nullptr);
  auto conn = Connect(fake->address());
  proto::DataRequest unknown = Pull(0, 1);
  unknown.set_table_id(9);
  EXPECT_EQ(SendAsync(conn.get(), unknown).Wait().code(),
            absl::StatusCode::kNotFound);
  std::vector<float> v;
  EXPECT_TRUE(SendAsync(conn.get(), Pull(10, 2), &v).Wait().ok());
  EXPECT_EQ(v, (std::vector<float>{5.0f, 5.5f}));
  EXPECT_EQ(fake->streams(), 1);
}

// Values that do not fill the caller's buffer exactly (a server of another
// table size or value type) are not delivered: INTERNAL naming the server
// and both sizes, the buffer untouched, the stream still serving.
TEST(ServerConnectionTest, PullOfAnotherSizeThanItsBufferIsInternal) {
  auto fake = FakeParameterServer::Start(FakeOptions());
  ASSERT_NE(fake, nullptr);
  auto conn = Connect(fake->address());
  std::vector<char> buffer(6, 'x');  // 3 bfloat16 values; the server sends 2 floats
  Promise p;
  conn->Send(Pull(10, 2), absl::MakeSpan(buffer),
             [state = p.state](const absl::Status& s, proto::DataResponse*) {
               state->Complete(s);
             });
  const absl::Status status = p.future().Wait();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(status.message(),
            absl::StrCat("server ", fake->address(),
                         " returned 8 bytes of values for a pull of 6 bytes"));
  EXPECT_EQ(buffer, std::vector<char>(6, 'x'));
  std::vector<float> v;
  EXPECT_TRUE(SendAsync(conn.get(), Pull(10, 2), &v).Wait().ok());
  EXPECT_EQ(v, (std::vector<float>{5.0f, 5.5f}));
}

TEST(ServerConnectionTest, BearerTokenOnEveryCall) {
  FakeParameterServer::Options o = FakeOptions();
  o.auth_token = "s3cret";
  auto fake = FakeParameterServer::Start(o);
  ASSERT_NE(fake, nullptr);
  auto good = Connect(fake->address(), 50, "s3cret");
  EXPECT_TRUE(SendAsync(good.get(), Pull(0, 4)).Wait().ok());
  auto context = good->NewContext(absl::Seconds(5));
  proto::ShardInfo info;
  EXPECT_TRUE(good->stub()
                  ->GetShardInfo(context.get(), proto::ShardInfoRequest(), &info)
                  .ok());
  // A rejected stream is not retried: the request fails with the server's
  // code at once.
  auto bad = Connect(fake->address(), 50, "wrong");
  absl::Status s = SendAsync(bad.get(), Pull(0, 4)).Wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_EQ(bad->StreamsOpenedForTesting(), 1);
}

TEST(ServerConnectionTest, ReconnectsToRestartedServerAndResendsUnanswered) {
  FakeParameterServer::Options hung = FakeOptions();
  hung.hold_responses = true;
  auto first = FakeParameterServer::Start(hung);
  ASSERT_NE(first, nullptr);
  const int port = first->port();
  auto conn = Connect(first->address());
  std::vector<Future> pushes;
  for (int i = 0; i < 3; ++i) {
    pushes.push_back(SendAsync(conn.get(), Push(i * 10, {1.0f, 2.0f})));
  }
  std::vector<float> pulled;
  Future pull = SendAsync(conn.get(), Pull(100, 3), &pulled);
  ASSERT_TRUE(WaitFor([&] { return first->requests().size() == 4; }));
  const std::vector<proto::DataRequest> sent = first->requests();
  EXPECT_FALSE(pull.Ready());
  first->Shutdown();  // the server dies with 4 unanswered requests
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(pull.Ready());  // nothing fails while reconnecting

  auto second = FakeParameterServer::Start(FakeOptions(port));
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(pull.Wait().ok()) << pull.Wait();
  EXPECT_EQ(pulled, (std::vector<float>{50.0f, 50.5f, 51.0f}));
  ASSERT_TRUE(WaitAll(pushes).ok());
  EXPECT_EQ(second->applied_pushes(), 3);
  EXPECT_EQ(second->dense(kTable)[10], 5.0f - 1.0f);
  EXPECT_EQ(second->dense(kTable)[11], 5.5f - 2.0f);
  // Resent unchanged: same ids and client id, in the original order.
  const std::vector<proto::DataRequest> resent = second->requests();
  ASSERT_EQ(resent.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(resent[i].request_id(), sent[i].request_id());
    EXPECT_EQ(resent[i].client_id(), 77u);
    EXPECT_EQ(resent[i].values(), sent[i].values());
  }
  EXPECT_GE(conn->StreamsOpenedForTesting(), 2);
  EXPECT_EQ(conn->NumPendingForTesting(), 0u);
}

TEST(ServerConnectionTest, FailsPendingWithUnavailableAfterMaxAttempts) {
  FakeParameterServer::Options hung = FakeOptions();
  hung.hold_responses = true;
  auto fake = FakeParameterServer::Start(hung);
  ASSERT_NE(fake, nullptr);
  const std::string address = fake->address();
  const int port = fake->port();
  auto conn = Connect(address, /*attempts=*/3);
  Future f = SendAsync(conn.get(), Pull(0, 1));
  ASSERT_TRUE(WaitFor([&] { return fake->requests().size() == 1; }));
  fake->Shutdown();
  absl::Status s = f.Wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr(address));
  EXPECT_THAT(s.message(), HasSubstr("3 reconnect attempts"));
  EXPECT_EQ(conn->NumPendingForTesting(), 0u);

  // A later request starts a fresh series of attempts.
  auto back = FakeParameterServer::Start(FakeOptions(port));
  ASSERT_NE(back, nullptr);
  std::vector<float> v;
  EXPECT_TRUE(SendAsync(conn.get(), Pull(2, 1), &v).Wait().ok());
  EXPECT_EQ(v, std::vector<float>{1.0f});
}

TEST(ServerConnectionTest, DestructorFailsPendingWithCancelled) {
  FakeParameterServer::Options hung = FakeOptions();
  hung.hold_responses = true;
  auto fake = FakeParameterServer::Start(hung);
  ASSERT_NE(fake, nullptr);
  auto conn = Connect(fake->address());
  Future a = SendAsync(conn.get(), Pull(0, 1));
  Future b = SendAsync(conn.get(), Pull(1, 1));
  ASSERT_TRUE(WaitFor([&] { return fake->requests().size() == 2; }));
  conn.reset();
  EXPECT_EQ(a.Wait().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(b.Wait().code(), absl::StatusCode::kCancelled);
}

TEST(ServerConnectionTest, DestructorWhileServerUnreachable) {
  // No server at all: the connection is between attempts when destroyed.
  auto fake = FakeParameterServer::Start(FakeOptions());
  ASSERT_NE(fake, nullptr);
  const std::string address = fake->address();
  fake->Shutdown();
  auto conn = Connect(address, /*attempts=*/1000);
  Future f = SendAsync(conn.get(), Pull(0, 1));
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_FALSE(f.Ready());
  conn.reset();
  EXPECT_EQ(f.Wait().code(), absl::StatusCode::kCancelled);
}

TEST(ServerConnectionTest, MissingTlsFilesAreReported) {
  ServerConnection::Options o;
  o.address = "127.0.0.1:1";
  o.tls.enabled = true;
  o.tls.ca_file = "/nonexistent/ca.pem";
  EXPECT_EQ(ServerConnection::Create(o).status().code(),
            absl::StatusCode::kNotFound);
  o.tls.ca_file = "";
  o.tls.cert_file = "/nonexistent/cert.pem";
  EXPECT_EQ(ServerConnection::Create(o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ps
