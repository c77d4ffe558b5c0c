// Elections of "primary of a shard" through Elector against a real etcd, with
// several contenders in this process (each with its own connection): exactly
// one primary, terms that increase on every change, hand-over on resign and
// on deposition (DeposeLeader), the guarded (fenced) Txn, and what an
// observer (ElectionView) sees.
#include "server/replication/elector.h"

#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/replication/election_view.h"
#include "server/replication/etcd_client.h"
#include "server/replication/local_etcd.h"
#include "server/replication/term_fence.h"

namespace ps::replication {
namespace {

using Role = RoleState::Role;

class ElectionTest : public ::testing::Test {
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

  std::unique_ptr<EtcdClient> NewClient() {
    EtcdClientOptions options;
    options.endpoints = {etcd_->endpoint()};
    options.keepalive_time = absl::Seconds(1);
    return *EtcdClient::Create(options);
  }

  // Contender i with its own connection, campaigning for `prefix`.
  void AddContender(const std::string& prefix, int i, int64_t ttl_seconds = 1) {
    clients_.push_back(NewClient());
    ElectorOptions options;
    options.prefix = prefix;
    options.value = absl::StrCat("contender-", i);
    options.ttl_seconds = ttl_seconds;
    electors_.push_back(std::make_unique<Elector>(clients_.back().get(), options));
  }

  // Waits until exactly one live elector is primary and returns its index;
  // checks at every poll that never two are.
  int WaitForSinglePrimary(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      std::vector<int> primaries;
      for (size_t i = 0; i < electors_.size(); ++i) {
        if (electors_[i] != nullptr && electors_[i]->PrimaryTerm().has_value()) {
          primaries.push_back(static_cast<int>(i));
        }
      }
      EXPECT_LE(primaries.size(), 1u) << "two primaries at once";
      if (primaries.size() == 1) return primaries[0];
      absl::SleepFor(absl::Milliseconds(5));
    }
    ADD_FAILURE() << "no primary after " << timeout;
    return -1;
  }

  static LocalEtcd* etcd_;
  std::vector<std::unique_ptr<EtcdClient>> clients_;
  std::vector<std::unique_ptr<Elector>> electors_;
};

LocalEtcd* ElectionTest::etcd_ = nullptr;

TEST_F(ElectionTest, ExactlyOnePrimaryAndTermsIncreaseOnEveryResign) {
  const std::string prefix = "/ps/election/resign/";
  auto observer_client = NewClient();
  ElectionView observer(observer_client.get(), prefix);
  for (int i = 0; i < 3; ++i) AddContender(prefix, i);
  ASSERT_TRUE(observer
                  .WaitFor([](const ElectionSnapshot& s) { return s.candidates.size() == 3; },
                           absl::Seconds(10))
                  .ok());

  std::set<int> served;
  int64_t last_term = 0;
  for (int round = 0; round < 3; ++round) {
    const int primary = WaitForSinglePrimary(absl::Seconds(10));
    ASSERT_GE(primary, 0);
    EXPECT_TRUE(served.insert(primary).second) << "contender " << primary << " twice";
    const RoleState state = electors_[primary]->state();
    const int64_t term = *electors_[primary]->PrimaryTerm();
    EXPECT_EQ(state.role, Role::kPrimary);
    EXPECT_EQ(state.term, term);
    EXPECT_GT(term, last_term);
    last_term = term;
    // The observer agrees: same key, value and term.
    absl::StatusOr<ElectionSnapshot> seen = observer.WaitFor(
        [&](const ElectionSnapshot& s) {
          return s.leader.has_value() && s.leader->create_revision == term;
        },
        absl::Seconds(5));
    ASSERT_TRUE(seen.ok()) << seen.status();
    EXPECT_EQ(seen->leader->key, state.key);
    EXPECT_EQ(seen->leader->value, absl::StrCat("contender-", primary));
    EXPECT_EQ(seen->candidates.size(), static_cast<size_t>(3 - round));
    // The others know who leads.
    for (size_t i = 0; i < electors_.size(); ++i) {
      if (electors_[i] == nullptr || static_cast<int>(i) == primary) continue;
      absl::StatusOr<RoleState> other = electors_[i]->WaitFor(
          [&](const RoleState& s) {
            return s.role == Role::kCandidate && s.leader.has_value() &&
                   s.leader->create_revision == term;
          },
          absl::Seconds(5));
      EXPECT_TRUE(other.ok()) << other.status();
    }
    ASSERT_TRUE(electors_[primary]->Resign().ok());
    EXPECT_EQ(electors_[primary]->state().role, Role::kResigned);
    EXPECT_FALSE(electors_[primary]->PrimaryTerm().has_value());
    electors_[primary].reset();
  }
  absl::StatusOr<ElectionSnapshot> empty = observer.WaitFor(
      [](const ElectionSnapshot& s) { return !s.leader.has_value(); }, absl::Seconds(5));
  EXPECT_TRUE(empty.ok()) << empty.status();
}

TEST_F(ElectionTest, DeposingThePrimaryHandsOverAtOnceAndTheOldOneCampaignsAgain) {
  const std::string prefix = "/ps/election/delete/";
  for (int i = 0; i < 2; ++i) AddContender(prefix, i);
  const int first = WaitForSinglePrimary(absl::Seconds(10));
  ASSERT_GE(first, 0);
  const RoleState old_state = electors_[first]->state();
  ASSERT_TRUE(old_state.leader.has_value());
  // A peer that saw the primary's process die deposes it (guarded delete).
  const absl::Time deposed_at = absl::Now();
  ASSERT_TRUE(DeposeLeader(*clients_[0], *old_state.leader).ok());
  const int second = 1 - first;
  absl::StatusOr<RoleState> next = electors_[second]->WaitFor(
      [](const RoleState& s) { return s.role == Role::kPrimary; }, absl::Seconds(5));
  ASSERT_TRUE(next.ok()) << next.status();
  const absl::Duration handover = absl::Now() - deposed_at;
  std::printf("deposition -> new primary: %.1f ms\n", absl::ToDoubleMilliseconds(handover));
  EXPECT_LT(handover, absl::Seconds(1));  // no lease TTL in the path
  EXPECT_GT(next->term, old_state.term);
  // Deposing the same term again touches nothing (the new leader stays).
  const absl::Status again_deposed = DeposeLeader(*clients_[0], *old_state.leader);
  EXPECT_EQ(again_deposed.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(again_deposed.message(),
            absl::StrCat("term ", old_state.term, " already ended (", old_state.key,
                         " is gone or was re-created)"));
  // The deposed one saw the deletion, took a new lease and key, and waits.
  absl::StatusOr<RoleState> again = electors_[first]->WaitFor(
      [&](const RoleState& s) {
        return s.role == Role::kCandidate && !s.key.empty() && s.key != old_state.key &&
               s.leader.has_value() && s.leader->create_revision == next->term;
      },
      absl::Seconds(5));
  EXPECT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(WaitForSinglePrimary(absl::Seconds(1)), second);
}

TEST_F(ElectionTest, GuardedTxnAppliesOnlyForTheCurrentPrimary) {
  const std::string prefix = "/ps/election/guard/";
  for (int i = 0; i < 2; ++i) AddContender(prefix, i);
  const int first = WaitForSinglePrimary(absl::Seconds(10));
  ASSERT_GE(first, 0);
  const int second = 1 - first;
  auto write = [&](int who, const std::string& value) {
    etcdserverpb::TxnRequest txn;
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key("/ps/election/guard-data");
    put->set_value(value);
    return electors_[who]->GuardedTxn(txn);
  };
  ASSERT_TRUE(write(first, "from first").ok());
  absl::StatusOr<etcdserverpb::TxnResponse> refused = write(second, "from second");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "not primary")) << refused.status();

  // The first is deposed behind its back (its key deleted) but has not heard
  // yet when it writes: etcd's guard refuses, whatever the local view says.
  const RoleState deposed = electors_[first]->state();
  etcdserverpb::TxnRequest depose;
  depose.add_success()->mutable_request_delete_range()->set_key(deposed.key);
  etcdserverpb::PutRequest* put = depose.add_success()->mutable_request_put();
  put->set_key("/ps/election/guard-data");
  put->set_value("after deposition");
  ASSERT_TRUE(clients_[0]->Txn(depose).ok());
  absl::StatusOr<etcdserverpb::TxnResponse> stale = write(first, "stale write");
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kFailedPrecondition);
  etcdserverpb::RangeRequest get;
  get.set_key("/ps/election/guard-data");
  EXPECT_EQ(clients_[0]->Range(get)->kvs(0).value(), "after deposition");

  absl::StatusOr<RoleState> next = electors_[second]->WaitFor(
      [](const RoleState& s) { return s.role == Role::kPrimary; }, absl::Seconds(5));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_TRUE(write(second, "from the new primary").ok());
  // A backup that learns the new term from the view fences the old primary.
  TermFence fence;
  EXPECT_TRUE(fence.AdmitFromPrimary(deposed.term).ok());
  fence.Observe(next->term);
  EXPECT_EQ(fence.AdmitFromPrimary(deposed.term).code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(fence.AdmitFromPrimary(next->term).ok());
}

TEST_F(ElectionTest, ContenderWithoutEtcdIsCandidateWithTheReason) {
  absl::StatusOr<int> port = PickFreePort("127.0.0.1");
  ASSERT_TRUE(port.ok());
  EtcdClientOptions options;
  options.endpoints = {absl::StrCat("127.0.0.1:", *port)};
  options.call_timeout = absl::Milliseconds(200);
  auto client = *EtcdClient::Create(options);
  ElectorOptions elector_options;
  elector_options.prefix = "/ps/election/none/";
  Elector elector(client.get(), elector_options);
  absl::StatusOr<RoleState> state = elector.WaitFor(
      [](const RoleState& s) {
        return absl::StrContains(s.reason, "cannot get a lease: etcd 127.0.0.1:");
      },
      absl::Seconds(5));
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->role, Role::kCandidate);
  EXPECT_FALSE(elector.PrimaryTerm().has_value());
}

}  // namespace
}  // namespace ps::replication
