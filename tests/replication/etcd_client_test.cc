// Our etcd v3 client (the etcdpb subset over gRPC) against a real etcd
// (Debian's etcd-server, started by LocalEtcd on 127.0.0.1): exact values,
// revisions and statuses for KV, Txn, leases and the election view's watch.
#include "server/replication/etcd_client.h"

#include <signal.h>

#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/replication/election_view.h"
#include "server/replication/lease.h"
#include "server/replication/local_etcd.h"

namespace ps::replication {
namespace {

class EtcdClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<LocalEtcd>> etcd = LocalEtcd::Start({});
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    etcd_ = etcd->release();
  }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(etcd_, nullptr);
    EtcdClientOptions options;
    options.endpoints = {etcd_->endpoint()};
    options.keepalive_time = absl::Seconds(1);
    absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Create(options);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  absl::StatusOr<int64_t> PutValue(const std::string& key, const std::string& value,
                                   int64_t lease = 0) {
    etcdserverpb::PutRequest put;
    put.set_key(key);
    put.set_value(value);
    put.set_lease(lease);
    absl::StatusOr<etcdserverpb::PutResponse> response = client_->Put(put);
    if (!response.ok()) return response.status();
    return response->header().revision();
  }
  absl::StatusOr<etcdserverpb::RangeResponse> Get(const std::string& key,
                                                  const std::string& range_end = "") {
    etcdserverpb::RangeRequest range;
    range.set_key(key);
    range.set_range_end(range_end);
    return client_->Range(range);
  }

  static LocalEtcd* etcd_;
  std::unique_ptr<EtcdClient> client_;
};

LocalEtcd* EtcdClientTest::etcd_ = nullptr;

TEST(EtcdClientOptionsTest, RejectsMissingOrMalformedEndpoints) {
  EXPECT_EQ(EtcdClient::Create({}).status().code(), absl::StatusCode::kInvalidArgument);
  EtcdClientOptions options;
  options.endpoints = {"127.0.0.1"};
  const absl::Status status = EtcdClient::Create(options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "etcd endpoint '127.0.0.1' is not host:port (e.g. 127.0.0.1:2379)");
}

TEST(EtcdClientOptionsTest, UnreachableEtcdIsUnavailableNamingTheTarget) {
  absl::StatusOr<int> port = PickFreePort("127.0.0.1");
  ASSERT_TRUE(port.ok());
  EtcdClientOptions options;
  options.endpoints = {absl::StrCat("127.0.0.1:", *port)};
  options.call_timeout = absl::Milliseconds(300);
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Create(options);
  ASSERT_TRUE(client.ok());
  const absl::Status status = (*client)->Range(etcdserverpb::RangeRequest()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StartsWith(status.message(),
                               absl::StrCat("etcd 127.0.0.1:", *port, ": Range: ")))
      << status;
}

TEST_F(EtcdClientTest, PingAnswers) { EXPECT_TRUE(client_->Ping(absl::Seconds(2)).ok()); }

TEST_F(EtcdClientTest, PutRangeDeleteWithRevisions) {
  absl::StatusOr<int64_t> r1 = PutValue("/kv/a", "1");
  absl::StatusOr<int64_t> r2 = PutValue("/kv/b", "2");
  absl::StatusOr<int64_t> r3 = PutValue("/kv/a", "3");
  ASSERT_TRUE(r1.ok() && r2.ok() && r3.ok());
  EXPECT_EQ(*r2, *r1 + 1);
  EXPECT_EQ(*r3, *r2 + 1);
  absl::StatusOr<etcdserverpb::RangeResponse> all = Get("/kv/", PrefixRangeEnd("/kv/"));
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->kvs_size(), 2);
  EXPECT_EQ(all->kvs(0).key(), "/kv/a");
  EXPECT_EQ(all->kvs(0).value(), "3");
  EXPECT_EQ(all->kvs(0).create_revision(), *r1);
  EXPECT_EQ(all->kvs(0).mod_revision(), *r3);
  EXPECT_EQ(all->kvs(0).version(), 2);
  EXPECT_EQ(all->kvs(1).value(), "2");
  etcdserverpb::DeleteRangeRequest del;
  del.set_key("/kv/");
  del.set_range_end(PrefixRangeEnd("/kv/"));
  absl::StatusOr<etcdserverpb::DeleteRangeResponse> deleted = client_->DeleteRange(del);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(deleted->deleted(), 2);
  EXPECT_EQ(Get("/kv/a")->kvs_size(), 0);
}

TEST_F(EtcdClientTest, TxnCompareAndSwap) {
  ASSERT_TRUE(PutValue("/txn/x", "old").ok());
  auto swap = [&](const std::string& expected, const std::string& next) {
    etcdserverpb::TxnRequest txn;
    etcdserverpb::Compare* cmp = txn.add_compare();
    cmp->set_key("/txn/x");
    cmp->set_target(etcdserverpb::Compare::VALUE);
    cmp->set_result(etcdserverpb::Compare::EQUAL);
    cmp->set_value(expected);
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key("/txn/x");
    put->set_value(next);
    txn.add_failure()->mutable_request_range()->set_key("/txn/x");
    return client_->Txn(txn);
  };
  absl::StatusOr<etcdserverpb::TxnResponse> first = swap("old", "new");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->succeeded());
  absl::StatusOr<etcdserverpb::TxnResponse> second = swap("old", "newer");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->succeeded());
  ASSERT_EQ(second->responses(0).response_range().kvs_size(), 1);
  EXPECT_EQ(second->responses(0).response_range().kvs(0).value(), "new");
}

TEST_F(EtcdClientTest, LeaseKeepsKeysUntilRevoked) {
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> grant = client_->LeaseGrant(5);
  ASSERT_TRUE(grant.ok()) << grant.status();
  EXPECT_EQ(grant->ttl(), 5);
  ASSERT_TRUE(PutValue("/lease/k", "v", grant->id()).ok());
  absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> renewed =
      client_->LeaseKeepAliveOnce(grant->id(), absl::Seconds(2));
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_EQ(renewed->id(), grant->id());
  EXPECT_EQ(renewed->ttl(), 5);
  absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse> ttl =
      client_->LeaseTimeToLive(grant->id());
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  EXPECT_EQ(ttl->grantedttl(), 5);
  EXPECT_GE(ttl->ttl(), 3);
  ASSERT_EQ(Get("/lease/k")->kvs(0).lease(), grant->id());
  ASSERT_TRUE(client_->LeaseRevoke(grant->id()).ok());
  EXPECT_EQ(Get("/lease/k")->kvs_size(), 0);
  // A revoked lease: keep-alive answers TTL 0, revoke is NOT_FOUND.
  renewed = client_->LeaseKeepAliveOnce(grant->id(), absl::Seconds(2));
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_EQ(renewed->ttl(), 0);
  EXPECT_EQ(client_->LeaseRevoke(grant->id()).code(), absl::StatusCode::kNotFound);
}

TEST_F(EtcdClientTest, LeaseObjectRenewsPastItsTtlAndRevokesOnDestruction) {
  LeaseOptions options;
  options.ttl_seconds = 1;
  absl::StatusOr<std::unique_ptr<Lease>> lease = Lease::Grant(client_.get(), options);
  ASSERT_TRUE(lease.ok()) << lease.status();
  const int64_t id = (*lease)->id();
  EXPECT_EQ((*lease)->ttl_seconds(), 1);
  ASSERT_TRUE(PutValue("/leaseobj/k", "v", id).ok());
  const MonoTime first_valid_until = (*lease)->valid_until();
  absl::SleepFor(absl::Milliseconds(2500));  // 2.5 TTLs: lives only if renewed
  EXPECT_EQ((*lease)->state(), Lease::State::kValid) << (*lease)->last_error();
  EXPECT_GT((*lease)->valid_until(), first_valid_until);
  EXPECT_EQ(Get("/leaseobj/k")->kvs_size(), 1);
  lease->reset();
  EXPECT_EQ(Get("/leaseobj/k")->kvs_size(), 0);
  EXPECT_EQ(client_->LeaseKeepAliveOnce(id, absl::Seconds(2))->ttl(), 0);
}

TEST_F(EtcdClientTest, LeaseRevokedBehindItsBackIsLost) {
  LeaseOptions options;
  options.ttl_seconds = 5;
  absl::StatusOr<std::unique_ptr<Lease>> lease = Lease::Grant(client_.get(), options);
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE(client_->LeaseRevoke((*lease)->id()).ok());
  // The next renewal (every ttl / 3) learns it.
  const absl::Time deadline = absl::Now() + absl::Seconds(4);
  while ((*lease)->state() != Lease::State::kLost && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ((*lease)->state(), Lease::State::kLost);
  EXPECT_EQ((*lease)->last_error().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*lease)->last_error().message(),
            absl::StrCat("lease ", (*lease)->id(), " not found in etcd (expired or revoked)"));
}

TEST_F(EtcdClientTest, ElectionViewFollowsPutsAndDeletesInRevisionOrder) {
  ElectionView view(client_.get(), "/view/e/");
  ASSERT_TRUE(view.WaitFor([](const ElectionSnapshot& s) { return s.synced; },
                           absl::Seconds(5))
                  .ok());
  EXPECT_FALSE(view.snapshot().leader.has_value());
  absl::StatusOr<int64_t> rb = PutValue("/view/e/b", "B");
  absl::StatusOr<int64_t> ra = PutValue("/view/e/a", "A");
  ASSERT_TRUE(rb.ok() && ra.ok());
  absl::StatusOr<ElectionSnapshot> s = view.WaitFor(
      [](const ElectionSnapshot& s) { return s.candidates.size() == 2; }, absl::Seconds(5));
  ASSERT_TRUE(s.ok()) << s.status();
  // The lowest create revision leads, whatever the key's name.
  ASSERT_TRUE(s->leader.has_value());
  EXPECT_EQ(s->leader->key, "/view/e/b");
  EXPECT_EQ(s->leader->value, "B");
  EXPECT_EQ(s->leader->create_revision, *rb);
  EXPECT_EQ(s->revision, *ra);
  ASSERT_TRUE(PutValue("/view/f", "outside the prefix").ok());
  etcdserverpb::DeleteRangeRequest del;
  del.set_key("/view/e/b");
  ASSERT_TRUE(client_->DeleteRange(del).ok());
  s = view.WaitFor(
      [](const ElectionSnapshot& s) { return s.leader.has_value() && s.leader->value == "A"; },
      absl::Seconds(5));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->leader->create_revision, *ra);
  EXPECT_EQ(s->candidates.size(), 1u);
}

}  // namespace
}  // namespace ps::replication
