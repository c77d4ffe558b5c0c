// A primary partitioned from etcd, with the network-namespace harness
// (tests/netns): etcd in host "etcd", contender processes in hosts "a" and
// "b", each reaching etcd over the test switch. Cutting a from etcd must
// make a stop claiming primacy (its lease's local validity runs out) BEFORE
// b is elected (etcd expires a's lease only after that validity, and the
// election needs the expiry), and after the heal a learns its lease is gone
// and campaigns anew behind b: never two primaries, terms increase.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "server/replication/local_etcd.h"
#include "tests/netns/netns.h"
#include "tests/replication/child_process.h"
#include "tests/replication/contender_harness.h"

namespace ps::testing {
namespace {

constexpr int64_t kTtlSeconds = 1;

std::string History(const std::vector<ChildProcess*>& children) {
  std::string s;
  for (ChildProcess* c : children) {
    absl::StrAppend(&s, "--- ", c->name(), "\n", absl::StrJoin(c->lines(), "\n"), "\n");
  }
  return s;
}

TEST(PartitionTest, PrimaryCutFromEtcdStopsBeforeTheNextIsElected) {
  absl::StatusOr<std::unique_ptr<TestNetwork>> net = TestNetwork::Create({"etcd", "a", "b"});
  PS_SKIP_IF_NETNS_UNAVAILABLE(net.status());
  ASSERT_TRUE(net.ok()) << net.status();

  replication::LocalEtcdOptions etcd_options;
  etcd_options.listen_ip = (*net)->ip("etcd");
  etcd_options.client_port = 2379;  // the namespace is ours alone
  etcd_options.peer_port = 2380;
  etcd_options.command_prefix = (*net)->ExecPrefix("etcd");
  absl::StatusOr<std::unique_ptr<replication::LocalEtcd>> etcd =
      replication::LocalEtcd::Start(etcd_options);
  ASSERT_TRUE(etcd.ok()) << etcd.status();

  auto start = [&](const std::string& host) {
    ContenderSpec spec;
    spec.name = host;
    spec.endpoints = (*etcd)->endpoint();
    spec.ttl_seconds = kTtlSeconds;
    spec.command_prefix = (*net)->ExecPrefix(host);
    return StartContender(spec);
  };
  absl::StatusOr<std::unique_ptr<ChildProcess>> a = start("a");
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<std::pair<size_t, RoleLine>> first =
      WaitForRole({a->get()}, "primary", absl::Seconds(15));
  ASSERT_TRUE(first.ok()) << first.status() << History({a->get()});
  absl::StatusOr<std::unique_ptr<ChildProcess>> b = start("b");
  ASSERT_TRUE(b.ok()) << b.status();
  const std::vector<ChildProcess*> both = {a->get(), b->get()};
  absl::StatusOr<std::pair<size_t, RoleLine>> waiting =
      WaitForRole({b->get()}, "candidate", absl::Seconds(15));
  ASSERT_TRUE(waiting.ok()) << waiting.status() << History(both);

  const int64_t cut_at = NowMonoMicros();
  ASSERT_TRUE((*net)->Cut("a", "etcd").ok());
  // Both transitions, in whatever order the lines arrive.
  std::optional<RoleLine> a_lost, b_won;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while ((!a_lost.has_value() || !b_won.has_value()) && absl::Now() < deadline) {
    std::vector<std::pair<size_t, RoleLine>> seen;
    absl::StatusOr<std::pair<size_t, RoleLine>> line =
        WaitForRole(both, "primary", deadline - absl::Now(), &seen);
    for (const auto& [index, parsed] : seen) {
      if (index == 0 && parsed.role == "primary") {
        ADD_FAILURE() << "a claimed primacy again while cut: " << parsed.line;
      }
      if (index == 0 && parsed.end_us > 0 && !a_lost.has_value()) a_lost = parsed;
      if (index == 1 && parsed.role == "primary") b_won = parsed;
    }
    if (!line.ok()) break;
  }
  ASSERT_TRUE(a_lost.has_value()) << "a never gave up primacy\n" << History(both);
  ASSERT_TRUE(b_won.has_value()) << "b never became primary\n" << History(both);
  EXPECT_EQ(a_lost->role, "unknown") << a_lost->line;
  EXPECT_LE(a_lost->end_us - cut_at, kTtlSeconds * 1000000) << a_lost->line;
  // The fencing property: a's primacy ended before b's began.
  EXPECT_LT(a_lost->end_us, b_won->since_us) << a_lost->line << "\n" << b_won->line;
  EXPECT_GT(b_won->term, first->second.term);
  std::printf("cut at 0: a stopped claiming at +%.1f ms, b primary at +%.1f ms (gap %.1f ms)\n",
              (a_lost->end_us - cut_at) / 1000.0, (b_won->since_us - cut_at) / 1000.0,
              (b_won->since_us - a_lost->end_us) / 1000.0);

  // Heal: a reaches etcd again, finds its lease gone, campaigns behind b.
  ASSERT_TRUE((*net)->HealAll().ok());
  std::vector<std::pair<size_t, RoleLine>> seen;
  absl::StatusOr<std::pair<size_t, RoleLine>> behind;
  const absl::Time heal_deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < heal_deadline) {
    behind = WaitForRole({a->get()}, "candidate", heal_deadline - absl::Now(), &seen);
    const std::string b_leads = absl::StrCat("(term ", b_won->term, ",");
    if (!behind.ok() || absl::StrContains(behind->second.line, b_leads)) break;
  }
  ASSERT_TRUE(behind.ok()) << behind.status() << History(both);
  for (const auto& [index, parsed] : seen) {
    EXPECT_NE(parsed.role, "primary") << "a became primary after the heal: " << parsed.line;
  }
  // b stayed primary throughout: no line from b since.
  absl::StatusOr<std::pair<size_t, std::string>> more =
      ChildProcess::NextLine({b->get()}, absl::Milliseconds(500));
  EXPECT_FALSE(more.ok()) << "b changed role: " << more->second;
}

}  // namespace
}  // namespace ps::testing
