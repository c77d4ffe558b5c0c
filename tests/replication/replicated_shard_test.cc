// Replicated shards end to end (replication.factor 2; 3 where a test says
// so): real ps_server processes, a real etcd (LocalEtcd), the real client
// SDK following the primary through etcd (PrimaryResolver).
//
// Workload: async counting. Every push is a gradient of 1 on every element of
// a dense table with SGD(lr = 1), so each applied push lowers every element by
// exactly 1 (floats represent these integers exactly): the final values say
// precisely how many pushes were applied, so a lost push or one applied twice
// is an exact mismatch. Every push must also succeed (the client resends
// unacknowledged pushes to the new primary with the same ids).
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "client/server_connection.h"
#include "common/config.h"
#include "common/status_macros.h"
#include "deploy/ctl/ctl.h"
#include "deploy/ctl/replication_status.h"
#include "grpcpp/grpcpp.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/health.grpc.pb.h"
#include "proto/ps.grpc.pb.h"
#include "server/replication/etcd_client.h"
#include "server/replication/etcd_options.h"
#include "server/replication/keys.h"
#include "server/replication/local_etcd.h"
#include "server/replication/primary_resolver.h"
#include "server/replication/replication.grpc.pb.h"
#include "tests/cluster_harness.h"
#include "tests/replication/child_process.h"
#include "tests/replication/replicated_shard.h"

namespace ps::testing {
namespace {

constexpr int kSize = 256;  // dense table elements

// Pushes +1 `count` times with up to 32 in flight; runs `at_half` once half
// were sent. Returns the first failure, and the longest gap between two
// consecutive completions in *longest_pause.
absl::Status CountingPushes(Client* client, int count,
                            const std::function<void()>& at_half,
                            absl::Duration* longest_pause) {
  const std::vector<float> grad(kSize, 1.0f);
  std::vector<Future> in_flight;
  absl::Time last = absl::Now();
  *longest_pause = absl::ZeroDuration();
  auto drain = [&](size_t keep) -> absl::Status {
    while (in_flight.size() > keep) {
      absl::Status s = in_flight.front().Wait();
      if (!s.ok()) return s;
      in_flight.erase(in_flight.begin());
      const absl::Time now = absl::Now();
      *longest_pause = std::max(*longest_pause, now - last);
      last = now;
    }
    return absl::OkStatus();
  };
  for (int i = 0; i < count; ++i) {
    if (i == count / 2 && at_half) at_half();
    in_flight.push_back(client->PushDense(0, 0, grad));
    if (absl::Status s = drain(31); !s.ok()) return s;
  }
  return drain(0);
}

absl::StatusOr<std::vector<float>> Pull(Client* client) {
  std::vector<float> values(kSize, 12345.0f);
  absl::Status s = client->PullDense(0, 0, absl::MakeSpan(values)).Wait();
  if (!s.ok()) return s;
  return values;
}

// Every element equals `expected` (prints the first that does not).
void ExpectAll(const std::vector<float>& values, float expected) {
  for (int i = 0; i < kSize; ++i) {
    ASSERT_EQ(values[i], expected) << "element " << i;
  }
}

// The replica's answer to a health Check of the replica service (the one
// readiness probes ask on Kubernetes): "SERVING", "NOT_SERVING", or the
// call's error.
std::string ReplicaHealth(const std::string& address) {
  std::unique_ptr<grpc::health::v1::Health::Stub> stub =
      grpc::health::v1::Health::NewStub(
          grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service("ps.replication.Replication");
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return status.error_message();
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
      response.status());
}

// Replica a the primary, replica b an in_sync backup, a client that follows
// the primary, and the table as it was before any push.
struct PrimaryAndBackup {
  int a = -1;
  int b = -1;
  std::unique_ptr<Client> client;
  std::vector<float> initial;
};

// Starts `shard` (`name`, `options`) that way; the timeouts allow a large
// shard's snapshot.
absl::StatusOr<PrimaryAndBackup> StartPrimaryAndBackup(
    ReplicatedShard* shard, const std::string& name,
    const ReplicatedShard::Options& options = {}) {
  PrimaryAndBackup out;
  RETURN_IF_ERROR(shard->Start(name, options));
  ASSIGN_OR_RETURN(out.a, shard->AddReplica());
  RETURN_IF_ERROR(shard->WaitFor(shard->address(out.a),
                                 {shard->address(out.a)}, absl::Seconds(20)));
  ASSIGN_OR_RETURN(out.b, shard->AddReplica());
  if (absl::Status synced = shard->WaitFor(
          shard->address(out.a),
          {shard->address(out.a), shard->address(out.b)}, absl::Seconds(30));
      !synced.ok()) {
    return absl::Status(synced.code(), absl::StrCat(synced.message(), "\n",
                                                    shard->Log(out.b)));
  }
  ASSIGN_OR_RETURN(out.client, shard->Connect());
  ASSIGN_OR_RETURN(out.initial, Pull(out.client.get()));
  return out;
}

TEST(ReplicatedShardTest, PrimaryKilledMidRunLosesNothingAndNewBackupCatchesUp) {
  ReplicatedShard shard;
  absl::StatusOr<PrimaryAndBackup> setup =
      StartPrimaryAndBackup(&shard, "kill");
  ASSERT_TRUE(setup.ok()) << setup.status();
  const int a = setup->a;
  const int b = setup->b;
  std::unique_ptr<Client> client = std::move(setup->client);
  const float start = setup->initial[0];
  ExpectAll(setup->initial, start);

  // 1. SIGKILL of the primary in the middle of 2000 pushes.
  absl::Time killed;
  absl::Duration pause;
  absl::Status pushed = CountingPushes(
      client.get(), 2000,
      [&] {
        killed = absl::Now();
        ASSERT_TRUE(shard.replica(a)->Signal(SIGKILL).ok());
      },
      &pause);
  ASSERT_TRUE(pushed.ok()) << pushed << "\nbackup log:\n" << shard.Log(b);
  EXPECT_EQ(shard.resolver().Address(0), shard.address(b));
  // B took over at once: A's port refused B's probe, so B ended A's term in
  // etcd instead of waiting for A's lease to expire.
  EXPECT_NE(shard.Log(b).find("refuses connections: its process is gone; "
                              "ending its term: OK"),
            std::string::npos)
      << shard.Log(b);
  // Control RPCs follow the primary too (A is dead).
  absl::StatusOr<std::vector<ShardStats>> stats = client->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  std::printf("failover: longest pause between push completions %s\n",
              absl::FormatDuration(pause).c_str());
  absl::StatusOr<std::vector<float>> after_kill = Pull(client.get());
  ASSERT_TRUE(after_kill.ok()) << after_kill.status();
  ExpectAll(*after_kill, start - 2000);

  // 2. A new replica joins: state transfer, then the stream; in_sync again.
  absl::StatusOr<int> c = shard.AddReplica();
  ASSERT_TRUE(c.ok()) << c.status();
  absl::Status synced = shard.WaitFor(
      shard.address(b), {shard.address(b), shard.address(*c)},
      absl::Seconds(10));
  ASSERT_TRUE(synced.ok()) << synced << "\n" << shard.Log(*c);
  // 3. It has every push: kill B under load, C takes over with exact sums.
  pushed = CountingPushes(
      client.get(), 1000,
      [&] { ASSERT_TRUE(shard.replica(b)->Signal(SIGKILL).ok()); }, &pause);
  ASSERT_TRUE(pushed.ok()) << pushed << "\nnew replica log:\n" << shard.Log(*c);
  EXPECT_EQ(shard.resolver().Address(0), shard.address(*c));
  absl::StatusOr<std::vector<float>> final_values = Pull(client.get());
  ASSERT_TRUE(final_values.ok()) << final_values.status();
  ExpectAll(*final_values, start - 3000);
}

// Starts a factor-3 shard (`name`): replicas 0 (the primary), 1 and 2, all
// in_sync, and a client; *start is every element's initial value.
absl::StatusOr<std::unique_ptr<Client>> StartFactorThree(
    ReplicatedShard* shard, const std::string& name, float* start) {
  ReplicatedShard::Options options;
  options.factor = 3;
  RETURN_IF_ERROR(shard->Start(name, options));
  std::vector<std::string> in_sync;
  for (int k = 0; k < 3; ++k) {
    ASSIGN_OR_RETURN(const int r, shard->AddReplica());
    in_sync.push_back(shard->address(r));
    if (absl::Status synced =
            shard->WaitFor(shard->address(0), in_sync, absl::Seconds(30));
        !synced.ok()) {
      return absl::Status(synced.code(), absl::StrCat(synced.message(), "\n",
                                                      shard->Log(r)));
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Client> client, shard->Connect());
  ASSIGN_OR_RETURN(std::vector<float> initial, Pull(client.get()));
  *start = initial[0];
  return client;
}

// After replica 0's death: waits up to 10 s for replica 1 or 2 to be the
// primary the client sees; returns its index (-1: neither).
int NewPrimaryOf1And2(const ReplicatedShard& shard) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  do {
    const std::string primary = shard.resolver().Address(0);
    if (primary == shard.address(1)) return 1;
    if (primary == shard.address(2)) return 2;
    absl::SleepFor(absl::Milliseconds(20));
  } while (absl::Now() < deadline);
  return -1;
}

// replication.factor 3, the primary SIGKILLed while idle: both backups hold
// the same history, so the one that is not elected resumes its stream from
// the new primary (no copy, no restart), the shard is back to two in_sync
// replicas at once, and a second SIGKILL, of the new primary under load,
// leaves the last replica with every push: two failures in a row without
// any replacement.
// The primary forwards each push with its finiteness scan (Entry.
// values_finite): a push it refuses for a non-finite gradient goes to the
// backup unmarked, and the backup scans and refuses it too; marked finite
// pushes apply there without a scan. The promoted backup holds exactly the
// finite pushes.
TEST(ReplicatedShardTest, NonFinitePushIsRefusedOnEveryReplica) {
  ReplicatedShard shard;
  absl::StatusOr<PrimaryAndBackup> setup =
      StartPrimaryAndBackup(&shard, "non_finite");
  ASSERT_TRUE(setup.ok()) << setup.status();
  std::unique_ptr<Client> client = std::move(setup->client);
  const float start = setup->initial[0];

  std::vector<float> bad(kSize, 1.0f);
  bad[7] = std::numeric_limits<float>::quiet_NaN();
  const absl::Status refused = client->PushDense(0, 0, bad).Wait();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  absl::Duration pause;
  ASSERT_TRUE(CountingPushes(client.get(), 10, nullptr, &pause).ok());
  // The backup refused the same entry by its own scan.
  EXPECT_NE(shard.Log(setup->b).find("is not finite"), std::string::npos)
      << shard.Log(setup->b);

  ASSERT_TRUE(shard.replica(setup->a)->Signal(SIGKILL).ok());
  const absl::Status pushed = CountingPushes(client.get(), 5, nullptr, &pause);
  ASSERT_TRUE(pushed.ok()) << pushed << "\n" << shard.Log(setup->b);
  EXPECT_EQ(shard.resolver().Address(0), shard.address(setup->b));
  absl::StatusOr<std::vector<float>> values = Pull(client.get());
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectAll(*values, start - 15);
}

TEST(ReplicatedShardTest, FactorThreeBackupResumesFromTheNewPrimary) {
  ReplicatedShard shard;
  float start = 0;
  absl::StatusOr<std::unique_ptr<Client>> client =
      StartFactorThree(&shard, "resume3", &start);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::Duration pause;
  ASSERT_TRUE(CountingPushes(client->get(), 500, nullptr, &pause).ok());
  ASSERT_TRUE(shard.replica(0)->Signal(SIGKILL).ok());
  // The new primary P is elected and the other backup O follows it again.
  const int p = NewPrimaryOf1And2(shard);
  ASSERT_NE(p, -1) << shard.resolver().Address(0);
  const int o = 3 - p;
  const std::string primary = shard.address(p);
  const absl::Status synced = shard.WaitFor(
      primary, {primary, shard.address(o)}, absl::Seconds(10));
  ASSERT_TRUE(synced.ok()) << synced << "\n" << shard.Log(o) << shard.Log(p);
  EXPECT_NE(shard.Log(p).find("resumes after entry"), std::string::npos)
      << shard.Log(p);
  EXPECT_EQ(shard.Log(o).find("fenced"), std::string::npos) << shard.Log(o);
  absl::StatusOr<std::vector<float>> values = Pull(client->get());
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectAll(*values, start - 500);

  absl::Status pushed = CountingPushes(
      client->get(), 1000,
      [&] { ASSERT_TRUE(shard.replica(p)->Signal(SIGKILL).ok()); }, &pause);
  ASSERT_TRUE(pushed.ok()) << pushed << "\n" << shard.Log(o);
  EXPECT_EQ(shard.resolver().Address(0), shard.address(o));
  values = Pull(client->get());
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectAll(*values, start - 1500);
}

// replication.factor 3, a backup (1) paused for 300 ms while the primary
// (0) forwards pushes that only the other backup (2) applies, then the
// primary SIGKILLed and 1 resumed: 1's campaign is the older, so it is
// elected, usually behind 2 (unless it read the rest of the stream from its
// socket before its election ended the stream). Before serving it fetches
// and applies the entries 2 has beyond its own (Tail), so 2 resumes from it
// instead of being fenced, and every push is applied exactly once.
TEST(ReplicatedShardTest, FactorThreeNewPrimaryRollsForwardTheOtherBackup) {
  ReplicatedShard shard;
  float start = 0;
  absl::StatusOr<std::unique_ptr<Client>> client =
      StartFactorThree(&shard, "rollforward3", &start);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::Duration pause;
  absl::Status pushed = CountingPushes(
      client->get(), 1000,
      [&] {
        ASSERT_TRUE(shard.replica(1)->Signal(SIGSTOP).ok());
        absl::SleepFor(absl::Milliseconds(300));
        ASSERT_TRUE(shard.replica(0)->Signal(SIGKILL).ok());
        ASSERT_TRUE(shard.replica(1)->Signal(SIGCONT).ok());
      },
      &pause);
  ASSERT_TRUE(pushed.ok()) << pushed << "\n" << shard.Log(1) << shard.Log(2);
  const int p = NewPrimaryOf1And2(shard);
  ASSERT_NE(p, -1) << shard.resolver().Address(0);
  const int o = 3 - p;
  const std::string primary = shard.address(p);
  const absl::Status synced = shard.WaitFor(
      primary, {primary, shard.address(o)}, absl::Seconds(10));
  ASSERT_TRUE(synced.ok()) << synced << "\n" << shard.Log(o) << shard.Log(p);
  EXPECT_EQ(shard.Log(o).find("fenced"), std::string::npos) << shard.Log(o);
  const size_t rolled = shard.Log(p).find("rolled forward entries");
  std::printf("new primary: replica %d; %s\n", p,
              rolled == std::string::npos
                  ? "rolled nothing forward"
                  : shard.Log(p).substr(rolled, 60).c_str());
  absl::StatusOr<std::vector<float>> values = Pull(client->get());
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectAll(*values, start - 1000);
}

// replication.factor 3, the primary SIGKILLed under load: the other backup
// resumes from the new primary (which first rolled forward the entries only
// that backup got), or, should its resume be refused (its last entry not in
// the new primary's history, e.g. applied after the roll forward asked), is
// fenced (exit code 3, then replaced by a copy). Either way every push is
// applied exactly once, the shard refills to three in_sync replicas, and a
// second SIGKILL under load loses nothing.
TEST(ReplicatedShardTest, FactorThreeSurvivesThePrimarysKillUnderLoad) {
  ReplicatedShard shard;
  float start = 0;
  absl::StatusOr<std::unique_ptr<Client>> client =
      StartFactorThree(&shard, "factor3", &start);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::Duration pause;
  absl::Status pushed = CountingPushes(
      client->get(), 2000,
      [&] { ASSERT_TRUE(shard.replica(0)->Signal(SIGKILL).ok()); }, &pause);
  ASSERT_TRUE(pushed.ok()) << pushed << "\n" << shard.Log(1) << shard.Log(2);
  const int p = NewPrimaryOf1And2(shard);
  ASSERT_NE(p, -1) << shard.resolver().Address(0);
  const int o = 3 - p;
  const std::string primary = shard.address(p);
  // O resumed (in_sync again) or was fenced: wait for one of the two.
  std::vector<std::string> in_sync;
  bool fenced = false;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    in_sync = shard.InSync();
    std::sort(in_sync.begin(), in_sync.end());
    std::vector<std::string> both = {primary, shard.address(o)};
    std::sort(both.begin(), both.end());
    fenced = shard.Log(o).find("fenced") != std::string::npos;
    if (fenced || in_sync == both) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  std::printf("the other backup %s\n", fenced ? "was fenced" : "resumed");
  if (fenced) {
    const absl::Status exited =
        WaitForFencedExit(shard.replica(o), absl::Seconds(10));
    EXPECT_TRUE(exited.ok()) << exited << "\n" << shard.Log(o);
    in_sync = {primary};
  } else {
    in_sync = {primary, shard.address(o)};
  }
  absl::StatusOr<std::vector<float>> values = Pull(client->get());
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectAll(*values, start - 2000);

  // New replicas refill the shard to three in_sync copies; each holds
  // every push: kill the primary again under load.
  while (in_sync.size() < 3) {
    absl::StatusOr<int> r = shard.AddReplica();
    ASSERT_TRUE(r.ok()) << r.status();
    in_sync.push_back(shard.address(*r));
    const absl::Status synced = shard.WaitFor(primary, in_sync, absl::Seconds(30));
    ASSERT_TRUE(synced.ok()) << synced << "\n" << shard.Log(*r);
  }
  pushed = CountingPushes(
      client->get(), 1000,
      [&] { ASSERT_TRUE(shard.replica(p)->Signal(SIGKILL).ok()); }, &pause);
  ASSERT_TRUE(pushed.ok()) << pushed;
  values = Pull(client->get());
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectAll(*values, start - 3000);
}

TEST(ReplicatedShardTest, StalePrimaryPausedPastItsLeaseIsFencedAndExits) {
  ReplicatedShard shard;
  absl::StatusOr<PrimaryAndBackup> setup =
      StartPrimaryAndBackup(&shard, "stale");
  ASSERT_TRUE(setup.ok()) << setup.status();
  const int a = setup->a;
  const int b = setup->b;
  std::unique_ptr<Client> client = std::move(setup->client);
  const float start = setup->initial[0];

  // SIGSTOP the primary for 3 s (lease TTL 1 s), with pushes in flight.
  std::thread pauser;
  absl::Duration pause;
  absl::Status pushed = CountingPushes(
      client.get(), 1000,
      [&] {
        ASSERT_TRUE(shard.replica(a)->Signal(SIGSTOP).ok());
        pauser = std::thread([&] {
          absl::SleepFor(absl::Seconds(3));
          (void)shard.replica(a)->Signal(SIGCONT);
        });
      },
      &pause);
  pauser.join();
  ASSERT_TRUE(pushed.ok()) << pushed << "\nbackup log:\n" << shard.Log(b);
  // B leads with a higher term; A, resumed, must have fenced itself.
  ASSERT_TRUE(shard.WaitFor(shard.address(b), {shard.address(b)},
                            absl::Seconds(10)).ok());
  // A paused process still listens: B waited for A's lease, deposed nothing.
  EXPECT_EQ(shard.Log(b).find("ending its term"), std::string::npos)
      << shard.Log(b);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (shard.Log(a).find("fenced") == std::string::npos &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_NE(shard.Log(a).find("fenced"), std::string::npos) << shard.Log(a);
  // A fenced replica exits (code 3) for its supervisor to restart it as a
  // new backup; until then it refused every request.
  const absl::Status exited =
      WaitForFencedExit(shard.replica(a), absl::Seconds(10));
  EXPECT_TRUE(exited.ok()) << exited << "\n" << shard.Log(a);
  // Nothing diverged and nothing was lost or applied twice.
  absl::StatusOr<std::vector<float>> values = Pull(client.get());
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectAll(*values, start - 1000);
}

// A SIGSTOPped backup must not stall its shard: after
// replication.ack_timeout_ms (2 s) without its ack the primary drops it from
// in_sync and acknowledges pushes without it. Resumed, the backup finds its
// stream ended while the primary lives on, fences itself and exits (code 3)
// for its supervisor; a new backup catches up and holds every push.
TEST(ReplicatedShardTest, PausedBackupIsDroppedAfterTheAckTimeoutAndExits) {
  ReplicatedShard shard;
  absl::StatusOr<PrimaryAndBackup> setup =
      StartPrimaryAndBackup(&shard, "paused_backup");
  ASSERT_TRUE(setup.ok()) << setup.status();
  const int a = setup->a;
  const int b = setup->b;
  std::unique_ptr<Client> client = std::move(setup->client);
  const float start = setup->initial[0];

  ASSERT_TRUE(shard.replica(b)->Signal(SIGSTOP).ok());
  absl::Duration pause;
  absl::Status pushed = CountingPushes(client.get(), 500, nullptr, &pause);
  ASSERT_TRUE(pushed.ok()) << pushed << "\n" << shard.Log(a);
  std::printf("paused backup: longest pause between push completions %s\n",
              absl::FormatDuration(pause).c_str());
  EXPECT_GE(pause, absl::Seconds(2));  // the ack timeout
  EXPECT_LT(pause, absl::Seconds(4)) << shard.Log(a);
  EXPECT_EQ(shard.InSync(), std::vector<std::string>{shard.address(a)});
  EXPECT_NE(shard.Log(a).find("acknowledged nothing for"), std::string::npos)
      << shard.Log(a);

  ASSERT_TRUE(shard.replica(b)->Signal(SIGCONT).ok());
  const absl::Status exited =
      WaitForFencedExit(shard.replica(b), absl::Seconds(15));
  EXPECT_TRUE(exited.ok()) << exited << "\n" << shard.Log(b);
  EXPECT_NE(shard.Log(b).find("the primary dropped this backup from "
                               "in_sync"),
            std::string::npos)
      << shard.Log(b);

  absl::StatusOr<int> c = shard.AddReplica();
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(shard.WaitFor(shard.address(a),
                            {shard.address(a), shard.address(*c)},
                            absl::Seconds(10)).ok())
      << shard.Log(*c);
  pushed = CountingPushes(
      client.get(), 500,
      [&] { ASSERT_TRUE(shard.replica(a)->Signal(SIGKILL).ok()); }, &pause);
  ASSERT_TRUE(pushed.ok()) << pushed << "\n" << shard.Log(*c);
  absl::StatusOr<std::vector<float>> values = Pull(client.get());
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(shard.resolver().Address(0), shard.address(*c));
  ExpectAll(*values, start - 1000);
}

// replication.factor 3: a backup SIGSTOPped past the ack timeout is dropped
// from in_sync as with factor 2, but on SIGCONT it resumes its stream from
// the same primary, whose tail still holds its last entry, instead of
// exiting for a copy; back in in_sync it holds every push: the primary and
// then the other original backup are SIGKILLed under load (the second once
// the first failover's survivors are both in_sync), leaving it last.
TEST(ReplicatedShardTest, FactorThreePausedBackupResumesInsteadOfExiting) {
  ReplicatedShard shard;
  float start = 0;
  absl::StatusOr<std::unique_ptr<Client>> client =
      StartFactorThree(&shard, "paused3", &start);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE(shard.replica(2)->Signal(SIGSTOP).ok());
  absl::Duration pause;
  absl::Status pushed = CountingPushes(client->get(), 500, nullptr, &pause);
  ASSERT_TRUE(pushed.ok()) << pushed << "\n" << shard.Log(0);
  EXPECT_GE(pause, absl::Seconds(2));  // the ack timeout
  std::vector<std::string> in_sync = shard.InSync();
  std::sort(in_sync.begin(), in_sync.end());
  std::vector<std::string> two = {shard.address(0), shard.address(1)};
  std::sort(two.begin(), two.end());
  EXPECT_EQ(in_sync, two);
  ASSERT_TRUE(shard.replica(2)->Signal(SIGCONT).ok());
  const absl::Status synced = shard.WaitFor(
      shard.address(0), {shard.address(0), shard.address(1), shard.address(2)},
      absl::Seconds(10));
  ASSERT_TRUE(synced.ok()) << synced << "\n" << shard.Log(2);
  EXPECT_EQ(shard.Log(2).find("fenced"), std::string::npos) << shard.Log(2);

  pushed = CountingPushes(
      client->get(), 500,
      [&] { ASSERT_TRUE(shard.replica(0)->Signal(SIGKILL).ok()); }, &pause);
  ASSERT_TRUE(pushed.ok()) << pushed << "\n" << shard.Log(2);
  // Back to two in_sync replicas (the one not elected resumed) before the
  // next kill: with one, a kill would leave the shard without a copy.
  const std::string primary = shard.resolver().Address(0);
  const absl::Status two_again = shard.WaitFor(
      primary, {shard.address(1), shard.address(2)}, absl::Seconds(10));
  ASSERT_TRUE(two_again.ok()) << two_again << "\n" << shard.Log(2);
  pushed = CountingPushes(
      client->get(), 500,
      [&] { ASSERT_TRUE(shard.replica(1)->Signal(SIGKILL).ok()); }, &pause);
  ASSERT_TRUE(pushed.ok()) << pushed << "\n" << shard.Log(2);
  EXPECT_EQ(shard.resolver().Address(0), shard.address(2));
  absl::StatusOr<std::vector<float>> values = Pull(client->get());
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectAll(*values, start - 1500);
}

// etcd SIGKILLed for 3 s under the counting workload (lease TTL 1 s): the
// primary cannot renew its lease, but no replica can be elected without
// etcd and every push still needs the backup's ack, so it serves on under
// its term after its lease's local validity ended: pushes and pulls are
// answered all through the outage, every push exactly once. After it (etcd
// restarted with its data) see below.
TEST(ReplicatedShardTest, EtcdKilledForSecondsServiceGoesOn) {
  ReplicatedShard shard;
  absl::StatusOr<PrimaryAndBackup> setup =
      StartPrimaryAndBackup(&shard, "etcd_kill");
  ASSERT_TRUE(setup.ok()) << setup.status();
  const int a = setup->a;
  const int b = setup->b;
  std::unique_ptr<Client> client = std::move(setup->client);
  const float start = setup->initial[0];

  absl::Duration pause;
  ASSERT_TRUE(CountingPushes(client.get(), 500, nullptr, &pause).ok());
  // etcd down for 3 s while pushes go on from another thread until 5 s
  // after the kill (etcd is restarted from this thread: LocalEtcd's child
  // dies with the thread that started it).
  ASSERT_TRUE(shard.etcd()->Signal(SIGKILL).ok());
  const absl::Time killed = absl::Now();
  absl::Status pushed;
  std::atomic<int> more{0};  // pushes acknowledged since the kill
  absl::Duration longest = absl::ZeroDuration();
  std::thread pusher([&] {
    while (pushed.ok() && absl::Now() < killed + absl::Seconds(5)) {
      pushed = CountingPushes(client.get(), 10, nullptr, &pause);
      more += 10;
      longest = std::max(longest, pause);
    }
  });
  // The lease's local validity ends at most 0.9 s after the kill.
  absl::SleepFor(killed + absl::Milliseconds(1500) - absl::Now());
  const int after_validity = more;
  // Pulls are served too (each after a barrier the backup acknowledged):
  // uniform values, at least every push acknowledged before the pull.
  absl::StatusOr<std::vector<float>> during = Pull(client.get());
  ASSERT_TRUE(during.ok()) << during.status() << "\nA:\n" << shard.Log(a);
  ExpectAll(*during, (*during)[0]);
  EXPECT_LE((*during)[0], start - 500 - after_validity);
  absl::SleepFor(killed + absl::Seconds(3) - absl::Now());
  const int before_restart = more;
  const absl::Status restarted = shard.etcd()->Restart();
  pusher.join();
  ASSERT_TRUE(restarted.ok()) << restarted << "\n" << shard.etcd()->LogTail();
  ASSERT_TRUE(pushed.ok()) << pushed << "\nA:\n" << shard.Log(a) << "\nB:\n"
                           << shard.Log(b);
  std::printf("etcd outage: %d pushes after the kill, %d of them from 1.5 s "
              "to 3 s, longest pause between push completions %s\n",
              more.load(), before_restart - after_validity,
              absl::FormatDuration(longest).c_str());
  EXPECT_GT(before_restart - after_validity, 0)
      << "no push was acknowledged once the lease's validity had ended\n"
      << shard.Log(a);
  EXPECT_NE(shard.Log(a).find("keeps serving term"), std::string::npos)
      << shard.Log(a);
  // Once etcd is back, either it renewed A's lease (same primary, same
  // term), or the lease, which etcd extends by one TTL when it restarts,
  // expired before A's first renewal got through: then A learns its key is
  // gone, fences itself, and B takes over (2 of 9 runs at TTL 1 s). Both
  // keep every push; B is never fenced.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  auto settled = [&] {
    return shard.Log(a).find("etcd answers again") != std::string::npos ||
           shard.Log(a).find("fenced") != std::string::npos;
  };
  while (!settled() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_TRUE(settled()) << shard.Log(a);
  const bool renewed =
      shard.Log(a).find("etcd answers again") != std::string::npos;
  std::printf("etcd back: %s\n", renewed ? "A renewed its lease, same term"
                                         : "A's lease expired; B took over");
  if (renewed) {
    EXPECT_EQ(shard.Log(a).find("fenced"), std::string::npos) << shard.Log(a);
    EXPECT_EQ(shard.resolver().Address(0), shard.address(a));
  } else {
    // etcd's answer: "lease lost: ... not found" or "our key ... was
    // deleted", whichever A's elector saw first.
    EXPECT_NE(shard.Log(a).find("no longer primary of term"),
              std::string::npos)
        << shard.Log(a);
    ASSERT_TRUE(shard.WaitFor(shard.address(b), {shard.address(b)},
                              absl::Seconds(10))
                    .ok());
  }
  EXPECT_EQ(shard.Log(b).find("fenced"), std::string::npos) << shard.Log(b);
  absl::StatusOr<std::vector<float>> values = Pull(client.get());
  ASSERT_TRUE(values.ok()) << values.status() << "\nA:\n" << shard.Log(a);
  ExpectAll(*values, start - 500 - more);
}

// A shard larger than gRPC's default 4 MiB message limit: the snapshot
// reaches a new backup in pieces, and pushes of the whole 8 MiB table (each
// entry of the stream larger than 4 MiB) are replicated; the backup that
// takes over after the primary's SIGKILL has every one of them.
// One worker of a sync (or ssp) job: at each step s it pulls, pushes a
// gradient of 1 and clocks. In a sync job every element of that pull must
// be exactly start - s (each completed step applied the mean of the
// workers' gradients of 1, so a step lost, applied twice or averaged over
// the wrong workers shows); ssp pulls are not checked (start = NaN). Runs
// at_step(s) (may be empty) before step s; *longest_step gets the slowest.
absl::Status SyncWorker(Client* client, int steps, float start,
                        const std::function<void(int)>& at_step,
                        absl::Duration* longest_step,
                        std::atomic<int>* at = nullptr) {
  const std::vector<float> grad(kSize, 1.0f);
  std::vector<float> values(kSize);
  *longest_step = absl::ZeroDuration();
  for (int s = 0; s < steps; ++s) {
    if (at != nullptr) *at = s;
    if (at_step) at_step(s);
    const absl::Time begin = absl::Now();
    RETURN_IF_ERROR(client->PullDense(0, 0, absl::MakeSpan(values)).Wait());
    for (int i = 0; i < kSize && !std::isnan(start); ++i) {
      if (values[i] != start - static_cast<float>(s)) {
        return absl::InternalError(absl::StrCat(
            "step ", s, ": element ", i, " is ", values[i], ", expected ",
            start - static_cast<float>(s)));
      }
    }
    RETURN_IF_ERROR(client->PushDense(0, 0, grad).Wait());
    RETURN_IF_ERROR(client->Clock().status());
    *longest_step = std::max(*longest_step, absl::Now() - begin);
  }
  return absl::OkStatus();
}

// Workers 0 and 1 of `shard`, each running SyncWorker in parallel (worker 0
// also runs at_step); the first failure. Prints both longest steps, after
// `what`. A job that has not finished after kJobLimit is hung (a run takes
// seconds): the workers' steps and every replica's log go to stderr and the
// test aborts, instead of ending silently at Bazel's timeout.
constexpr absl::Duration kJobLimit = absl::Seconds(120);
absl::Status TwoWorkers(const ReplicatedShard& shard, int steps, float start,
                        const std::function<void(int)>& at_step,
                        const char* what) {
  absl::StatusOr<std::unique_ptr<Client>> w0 = shard.ConnectWorker(0);
  if (!w0.ok()) return w0.status();
  absl::StatusOr<std::unique_ptr<Client>> w1 = shard.ConnectWorker(1);
  if (!w1.ok()) return w1.status();
  absl::Duration longest0, longest1;
  absl::Status done1;
  std::atomic<int> at0{0}, at1{0};
  absl::Notification finished;
  std::thread watchdog([&] {
    if (finished.WaitForNotificationWithTimeout(kJobLimit)) return;
    std::fprintf(stderr, "%s: hung: worker 0 at step %d, worker 1 at %d\n",
                 what, at0.load(), at1.load());
    for (int i = 0; i < shard.num_replicas(); ++i) {
      std::fprintf(stderr, "replica %d (%s):\n%s\n", i,
                   shard.address(i).c_str(), shard.Log(i).c_str());
    }
    std::abort();
  });
  std::thread worker1([&] {
    done1 = SyncWorker(w1->get(), steps, start, nullptr, &longest1, &at1);
    // A failed worker leaves the job, as a trainer's exiting process does,
    // so worker 0 (alone, its pulls still exact) finishes instead of
    // waiting for it at the next step.
    if (!done1.ok()) w1->reset();
  });
  const absl::Status done0 =
      SyncWorker(w0->get(), steps, start, at_step, &longest0, &at0);
  worker1.join();
  finished.Notify();
  watchdog.join();
  RETURN_IF_ERROR(done0);
  RETURN_IF_ERROR(done1);
  std::printf("%s: longest step %s (worker 0), %s (worker 1)\n", what,
              absl::FormatDuration(longest0).c_str(),
              absl::FormatDuration(longest1).c_str());
  return absl::OkStatus();
}

// A sync table and two workers: the sync failover tests' cluster.
ReplicatedShard::Options TwoSyncWorkers() {
  ReplicatedShard::Options options;
  options.consistency = "sync";
  options.num_workers = 2;
  return options;
}

// The membership state of each worker on shard 0's primary ("live",
// "left", ...), by worker id.
absl::StatusOr<std::vector<std::string>> WorkerStates(Client* client) {
  ASSIGN_OR_RETURN(std::vector<ShardStats> stats, client->GetStats());
  std::vector<std::string> states;
  for (const ShardStats::Worker& w : stats[0].workers) {
    states.push_back(w.state);
  }
  return states;
}

// Two failovers during a training run, as an at_step for SyncWorker: the
// SIGKILL of primary `a` before step kill_a (backup `b` takes over), a new
// replica (`c`) started before step add_c, and the SIGKILL of `b` before
// step kill_b once `c` is in sync (`c` takes over). The first error stops
// the schedule and stays in `faults`.
struct TwoFailovers {
  ReplicatedShard* shard;
  int a, b;
  int kill_a, add_c, kill_b;
  int c = -1;
  absl::Status faults;

  void AtStep(int s) {
    if (!faults.ok()) return;
    if (s == kill_a) faults = shard->replica(a)->Signal(SIGKILL);
    if (s == add_c) {
      absl::StatusOr<int> added = shard->AddReplica();
      faults = added.status();
      if (added.ok()) c = *added;
    }
    if (s == kill_b) {
      faults = shard->WaitFor(shard->address(b),
                              {shard->address(b), shard->address(c)},
                              absl::Seconds(20));
      if (faults.ok()) faults = shard->replica(b)->Signal(SIGKILL);
    }
  }
};

TEST(ReplicatedShardTest, SyncTrainingSurvivesPrimaryKillsWithExactSteps) {
  ReplicatedShard shard;
  absl::StatusOr<PrimaryAndBackup> setup =
      StartPrimaryAndBackup(&shard, "sync", TwoSyncWorkers());
  ASSERT_TRUE(setup.ok()) << setup.status();
  const int a = setup->a;
  const int b = setup->b;
  const float start = setup->initial[0];
  ExpectAll(setup->initial, start);
  // Membership RPCs reach the primary only: a backup refuses them, so no
  // worker's clock is ever kept by a replica that is not primary.
  {
    std::unique_ptr<proto::ParameterServer::Stub> backup =
        proto::ParameterServer::NewStub(grpc::CreateChannel(
            shard.address(b), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    proto::ClockRequest request;
    request.set_worker_id(0);
    request.set_clock(1);
    proto::ClockResponse response;
    const grpc::Status clock = backup->Clock(&context, request, &response);
    EXPECT_EQ(clock.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_NE(clock.error_message().find("is not primary (backup"),
              std::string::npos)
        << clock.error_message();
  }

  // Worker 0 drives the faults: SIGKILL of primary A at step 100 (B takes
  // over with the open step's pushes and every completed step); a new
  // replica C joins at step 150 (a snapshot plus the open step's pushes,
  // then steps and pushes in order); SIGKILL of B at step 220 once C is in
  // sync (C takes over).
  constexpr int kSteps = 300;
  TwoFailovers failovers{&shard, a, b, /*kill_a=*/100, /*add_c=*/150,
                         /*kill_b=*/220};
  const absl::Status trained = TwoWorkers(
      shard, kSteps, start, [&](int s) { failovers.AtStep(s); },
      "sync failover");
  ASSERT_TRUE(failovers.faults.ok()) << failovers.faults;
  const int c = failovers.c;
  ASSERT_TRUE(trained.ok()) << trained << "\nB:\n" << shard.Log(b);
  EXPECT_EQ(shard.resolver().Address(0), shard.address(c));
  absl::StatusOr<std::vector<float>> final_values = Pull(setup->client.get());
  ASSERT_TRUE(final_values.ok()) << final_values.status();
  ExpectAll(*final_values, start - kSteps);
}

// A worker that left the job (a clean exit, as a trainer that finished
// its share does) is not waited for after a failover: Leave is answered
// once the backup acknowledged the membership entry it made, and the new
// primary goes on from that membership. Before, the new primary met every
// worker as new: worker 1 pending again, so worker 0's next step waited
// worker_join_timeout_ms (120 s by default) for a process that had exited.
TEST(ReplicatedShardTest, WorkerThatLeftIsNotWaitedForAfterAFailover) {
  ReplicatedShard shard;
  absl::StatusOr<PrimaryAndBackup> setup =
      StartPrimaryAndBackup(&shard, "left", TwoSyncWorkers());
  ASSERT_TRUE(setup.ok()) << setup.status();
  const int a = setup->a;
  const int b = setup->b;
  const float start = setup->initial[0];
  absl::StatusOr<std::unique_ptr<Client>> w0 = shard.ConnectWorker(0);
  ASSERT_TRUE(w0.ok()) << w0.status();
  absl::StatusOr<std::unique_ptr<Client>> w1 = shard.ConnectWorker(1);
  ASSERT_TRUE(w1.ok()) << w1.status();
  constexpr int kTogether = 10;
  absl::Duration longest0, longest1;
  absl::Status done1;
  std::thread worker1([&] {
    done1 = SyncWorker(w1->get(), kTogether, start, nullptr, &longest1);
  });
  absl::Status done0 =
      SyncWorker(w0->get(), kTogether, start, nullptr, &longest0);
  worker1.join();
  ASSERT_TRUE(done0.ok()) << done0;
  ASSERT_TRUE(done1.ok()) << done1;
  // Leave is answered only once the backup acknowledged the change: not
  // while B is paused (well within the 2 s ack timeout), at once after.
  ASSERT_TRUE(shard.replica(b)->Signal(SIGSTOP).ok());
  absl::Notification left;
  absl::Status leave;
  std::thread leaving([&] {
    leave = (*w1)->Leave();
    left.Notify();
  });
  EXPECT_FALSE(left.WaitForNotificationWithTimeout(absl::Milliseconds(300)))
      << "Leave was answered before the paused backup acknowledged it";
  ASSERT_TRUE(shard.replica(b)->Signal(SIGCONT).ok());
  leaving.join();
  ASSERT_TRUE(leave.ok()) << leave;

  // Worker 0 goes on alone. Primary A is SIGKILLed before its step 5 (B,
  // which followed A, has the membership from A's entries); replica C joins
  // at step 10 (it gets the membership with B's snapshot) and B is
  // SIGKILLed before step 15, once C is in sync.
  constexpr int kAlone = 20;
  TwoFailovers failovers{&shard, a, b, /*kill_a=*/5, /*add_c=*/10,
                         /*kill_b=*/15};
  done0 = SyncWorker(
      w0->get(), kAlone, start - kTogether,
      [&](int s) { failovers.AtStep(s); }, &longest0);
  ASSERT_TRUE(failovers.faults.ok()) << failovers.faults;
  const int c = failovers.c;
  ASSERT_TRUE(done0.ok()) << done0 << "\nC:\n" << shard.Log(c);
  std::printf("two failovers after worker 1 left: longest step %s\n",
              absl::FormatDuration(longest0).c_str());
  EXPECT_EQ(shard.resolver().Address(0), shard.address(c));
  // Far below the 10 s heartbeat timeout, let alone the join timeout.
  EXPECT_LT(longest0, absl::Seconds(5)) << shard.Log(c);
  absl::StatusOr<std::vector<std::string>> states =
      WorkerStates(setup->client.get());
  ASSERT_TRUE(states.ok()) << states.status();
  EXPECT_THAT(*states, ::testing::ElementsAre("live", "left"));
  absl::StatusOr<std::vector<float>> values = Pull(setup->client.get());
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectAll(*values, start - kTogether - kAlone);
}

// A worker whose process died (silent, evicted by the primary) is not
// waited for after a failover either: its eviction reached the backup as a
// membership entry. Worker 1 registers by hand and falls silent; worker 0's
// first step waits until the primary evicts it (heartbeat timeout 1 s),
// and after the primary's SIGKILL its steps go on at once on the new
// primary. Before, that primary waited the join timeout (2 min) for worker
// 1; had the eviction not reached it, it would wait a heartbeat timeout.
TEST(ReplicatedShardTest, EvictedWorkerIsNotWaitedForAfterAFailover) {
  ReplicatedShard shard;
  ReplicatedShard::Options options = TwoSyncWorkers();
  options.heartbeat_timeout_ms = 1000;
  absl::StatusOr<PrimaryAndBackup> setup =
      StartPrimaryAndBackup(&shard, "evicted", options);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const int a = setup->a;
  const int b = setup->b;
  const float start = setup->initial[0];
  {
    std::unique_ptr<proto::ParameterServer::Stub> primary =
        proto::ParameterServer::NewStub(grpc::CreateChannel(
            shard.address(a), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    proto::RegisterWorkerRequest request;
    request.set_worker_id(1);
    request.set_session_id(0x5117);
    proto::RegisterWorkerResponse response;
    const grpc::Status registered =
        primary->RegisterWorker(&context, request, &response);
    ASSERT_TRUE(registered.ok()) << registered.error_message();
  }
  absl::StatusOr<std::unique_ptr<Client>> w0 = shard.ConnectWorker(0);
  ASSERT_TRUE(w0.ok()) << w0.status();
  constexpr int kBefore = 5;
  absl::Duration longest;
  absl::Status done = SyncWorker(w0->get(), kBefore, start, nullptr, &longest);
  ASSERT_TRUE(done.ok()) << done;
  EXPECT_GE(longest, absl::Milliseconds(500)) << "worker 1 was not waited for";
  constexpr int kAfter = 15;
  absl::Status killed;
  done = SyncWorker(
      w0->get(), kAfter, start - kBefore,
      [&](int s) {
        if (s == 3) killed = shard.replica(a)->Signal(SIGKILL);
      },
      &longest);
  ASSERT_TRUE(killed.ok()) << killed;
  ASSERT_TRUE(done.ok()) << done << "\nB:\n" << shard.Log(b);
  std::printf("failover after worker 1 was evicted: longest step %s\n",
              absl::FormatDuration(longest).c_str());
  EXPECT_EQ(shard.resolver().Address(0), shard.address(b));
  EXPECT_LT(longest, absl::Milliseconds(800)) << shard.Log(b);
  absl::StatusOr<std::vector<std::string>> states =
      WorkerStates(setup->client.get());
  ASSERT_TRUE(states.ok()) << states.status();
  EXPECT_THAT(*states, ::testing::ElementsAre("live", "evicted"));
  absl::StatusOr<std::vector<float>> values = Pull(setup->client.get());
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectAll(*values, start - kBefore - kAfter);
}

// One data request on `connection` with request id `request_id` (the
// connection's id source is `ids`), waited for.
proto::DataResponse SendWithId(ServerConnection* connection,
                               std::atomic<uint64_t>* ids,
                               uint64_t request_id,
                               proto::DataRequest request) {
  ids->store(request_id);
  absl::Notification done;
  proto::DataResponse answer;
  connection->Send(std::move(request),
                   [&](const absl::Status& status,
                       proto::DataResponse* response) {
                     if (response != nullptr) {
                       answer = *response;
                     } else {
                       answer.set_status_code(static_cast<int>(status.code()));
                       answer.set_status_message(std::string(status.message()));
                     }
                     done.Notify();
                   });
  done.WaitForNotification();
  return answer;
}

// A sync push resent after its step completed (its answer lost, the step
// completed without it: the worker had been evicted meanwhile) is a dedup
// hit on the primary. It is answered OK (duplicate, the original's step)
// and replicated as a barrier: the backup stays in sync, and after the
// primary's SIGKILL the backup holds the step applied once. Before, the
// primary forwarded the resend as a push "applied just before the step
// completed" and dropped every backup from in_sync for nothing.
TEST(ReplicatedShardTest, SyncPushResentAfterItsStepKeepsTheBackupsInSync) {
  ReplicatedShard shard;
  absl::StatusOr<PrimaryAndBackup> setup =
      StartPrimaryAndBackup(&shard, "resend", TwoSyncWorkers());
  ASSERT_TRUE(setup.ok()) << setup.status();
  const int a = setup->a;
  const int b = setup->b;
  const float start = setup->initial[0];
  // Two workers' sessions, by hand: the test chooses the request ids.
  std::unique_ptr<proto::ParameterServer::Stub> primary =
      proto::ParameterServer::NewStub(grpc::CreateChannel(
          shard.address(a), grpc::InsecureChannelCredentials()));
  constexpr uint64_t kSessions[] = {0xA11CE, 0xB0B};
  for (uint32_t w = 0; w < 2; ++w) {
    grpc::ClientContext context;
    proto::RegisterWorkerRequest request;
    request.set_worker_id(w);
    request.set_session_id(kSessions[w]);
    request.set_job_id("resend");
    proto::RegisterWorkerResponse response;
    const grpc::Status registered =
        primary->RegisterWorker(&context, request, &response);
    ASSERT_TRUE(registered.ok()) << registered.error_message();
    ASSERT_EQ(response.clock(), 0);
  }
  auto ids = std::make_shared<std::atomic<uint64_t>>(1);
  ServerConnection::Options connection_options;
  connection_options.address = shard.address(a);
  connection_options.client = shard.config().client;
  connection_options.request_ids = ids;
  absl::StatusOr<std::unique_ptr<ServerConnection>> connection =
      ServerConnection::Create(connection_options);
  ASSERT_TRUE(connection.ok()) << connection.status();
  auto push = [&](uint32_t worker, uint64_t request_id) {
    proto::DataRequest request;
    request.set_op(proto::PUSH);
    request.set_table_id(0);
    request.set_worker_id(static_cast<int32_t>(worker));
    request.set_client_id(kSessions[worker]);
    request.set_clock(0);
    request.set_offset(0);
    request.set_length(kSize);
    request.set_first_chunk(true);
    request.set_values(std::string(kSize * sizeof(float), '\0'));
    std::vector<float> grad(kSize, worker == 0 ? 1.0f : 3.0f);
    std::memcpy(request.mutable_values()->data(), grad.data(),
                kSize * sizeof(float));
    return SendWithId(connection->get(), ids.get(), request_id, request);
  };
  const proto::DataResponse first = push(0, 1000);
  ASSERT_EQ(first.status_code(), 0) << first.status_message();
  ASSERT_EQ(push(1, 1001).status_code(), 0);
  for (uint32_t w = 0; w < 2; ++w) {
    grpc::ClientContext context;
    proto::ClockRequest request;
    request.set_worker_id(w);
    request.set_clock(1);
    request.set_session_id(kSessions[w]);
    proto::ClockResponse response;
    const grpc::Status clocked = primary->Clock(&context, request, &response);
    ASSERT_TRUE(clocked.ok()) << clocked.error_message();
  }
  // The step is complete: (1 + 3) / 2 applied once.
  absl::StatusOr<std::vector<float>> stepped = Pull(setup->client.get());
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  ExpectAll(*stepped, start - 2);

  const proto::DataResponse resent = push(0, 1000);
  EXPECT_EQ(resent.status_code(), 0) << resent.status_message();
  EXPECT_TRUE(resent.duplicate());
  EXPECT_EQ(resent.step(), first.step());
  EXPECT_EQ(shard.Log(a).find("dropping every backup"), std::string::npos)
      << shard.Log(a);
  const std::vector<std::string> in_sync = shard.InSync();
  EXPECT_EQ(in_sync.size(), 2u) << absl::StrJoin(in_sync, ", ");

  ASSERT_TRUE(shard.replica(a)->Signal(SIGKILL).ok());
  ASSERT_TRUE(shard.WaitFor(shard.address(b), {shard.address(b)},
                            absl::Seconds(20))
                  .ok())
      << shard.Log(b);
  absl::StatusOr<std::vector<float>> after = Pull(setup->client.get());
  ASSERT_TRUE(after.ok()) << after.status();
  ExpectAll(*after, start - 2);
}

// ssp pushes apply on arrival and ssp pulls wait on the worker clocks,
// which a new primary re-learns from the workers: two ssp workers, the
// primary SIGKILLed half-way, every push applied exactly once (lr 1,
// gradient 1: the final value counts them). Before ssp pushes were
// forwarded like sync ones (after the primary applied them, with their
// worker ids), the backup refused every one ("only workers may push"), an
// error it did not report, and the new primary had none of the 200 pushes
// made before the kill.
TEST(ReplicatedShardTest, SspTrainingSurvivesThePrimarysKillExactly) {
  ReplicatedShard shard;
  ReplicatedShard::Options options;
  options.consistency = "ssp";
  options.staleness = 1;
  options.num_workers = 2;
  absl::StatusOr<PrimaryAndBackup> setup =
      StartPrimaryAndBackup(&shard, "ssp", options);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const float start = setup->initial[0];
  constexpr int kSteps = 200;
  absl::Status killed = absl::OkStatus();
  auto at_step = [&](int s) {
    if (s == kSteps / 2) killed = shard.replica(setup->a)->Signal(SIGKILL);
  };
  const absl::Status trained =
      TwoWorkers(shard, kSteps, std::numeric_limits<float>::quiet_NaN(),
                 at_step, "ssp failover");
  ASSERT_TRUE(killed.ok()) << killed;
  ASSERT_TRUE(trained.ok()) << trained << "\nB:\n" << shard.Log(setup->b);
  EXPECT_EQ(shard.resolver().Address(0), shard.address(setup->b));
  absl::StatusOr<std::vector<float>> final_values = Pull(setup->client.get());
  ASSERT_TRUE(final_values.ok()) << final_values.status();
  ExpectAll(*final_values, start - 2 * kSteps);
}

TEST(ReplicatedShardTest, LargeShardSnapshotAndLargePushesReachTheBackup) {
  constexpr uint64_t kLarge = 2 << 20;  // floats: 8 MiB
  ReplicatedShard shard;
  ReplicatedShard::Options options;
  options.table_size = kLarge;
  ASSERT_TRUE(shard.Start("large", options).ok());
  absl::StatusOr<int> a = shard.AddReplica();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(shard.WaitFor(shard.address(*a), {shard.address(*a)},
                            absl::Seconds(10)).ok());
  absl::StatusOr<std::unique_ptr<Client>> client = shard.Connect();
  ASSERT_TRUE(client.ok()) << client.status();
  const std::vector<float> grad(kLarge, 1.0f);
  // Pushes before the backup exists travel in its snapshot.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE((*client)->PushDense(0, 0, grad).Wait().ok());
  }
  absl::StatusOr<int> b = shard.AddReplica();
  ASSERT_TRUE(b.ok()) << b.status();
  absl::Status synced = shard.WaitFor(
      shard.address(*a), {shard.address(*a), shard.address(*b)},
      absl::Seconds(20));
  ASSERT_TRUE(synced.ok()) << synced << "\n" << shard.Log(*b);
  // These travel as stream entries.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE((*client)->PushDense(0, 0, grad).Wait().ok());
  }
  ASSERT_EQ(shard.InSync().size(), 2u) << shard.Log(*b);
  ASSERT_TRUE(shard.replica(*a)->Signal(SIGKILL).ok());
  std::vector<float> values(kLarge, 12345.0f);
  absl::Status pulled =
      (*client)->PullDense(0, 0, absl::MakeSpan(values)).Wait();
  ASSERT_TRUE(pulled.ok()) << pulled << "\n" << shard.Log(*b);
  EXPECT_EQ(shard.resolver().Address(0), shard.address(*b));
  // Initial values are 0 (no initializer): 7 pushes of 1 with SGD(lr = 1).
  for (uint64_t i = 0; i < kLarge; i += 4099) {
    ASSERT_EQ(values[i], -7.0f) << "element " << i;
  }
  ASSERT_EQ(values[kLarge - 1], -7.0f);
}

// SIGKILL of the primary while a new replica receives its snapshot (a
// 128 MiB shard, so the transfer takes long enough to be cut): the in_sync
// backup takes over with every acknowledged push; the half-transferred
// replica, which restored nothing, follows the new primary, catches up and
// joins in_sync; killing the second primary then leaves it holding every
// push exactly once.
TEST(ReplicatedShardTest, PrimaryKilledDuringStateTransferLosesNothing) {
  ReplicatedShard shard;
  ReplicatedShard::Options options;
  options.table_size = 32 << 20;  // floats: 128 MiB
  absl::StatusOr<PrimaryAndBackup> setup =
      StartPrimaryAndBackup(&shard, "transfer", options);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const int a = setup->a;
  const int b = setup->b;
  std::unique_ptr<Client> client = std::move(setup->client);
  const float start = setup->initial[0];
  absl::Duration pause;
  ASSERT_TRUE(CountingPushes(client.get(), 300, nullptr, &pause).ok());

  // C connects; the primary logs the snapshot's size right before sending
  // its pieces: kill it then.
  absl::StatusOr<int> c = shard.AddReplica();
  ASSERT_TRUE(c.ok()) << c.status();
  const std::string sending =
      absl::StrCat("backup ", shard.address(*c), "/");
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (shard.Log(a).find(sending) == std::string::npos &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  ASSERT_NE(shard.Log(a).find(sending), std::string::npos) << shard.Log(a);
  ASSERT_TRUE(shard.replica(a)->Signal(SIGKILL).ok());
  EXPECT_EQ(shard.Log(*c).find("restored the primary's snapshot"),
            std::string::npos)
      << "the transfer finished before the kill:\n" << shard.Log(*c);
  // C has no state yet: not ready (its next copy starts 200 ms after the
  // cut stream and takes longer than this call).
  EXPECT_EQ(ReplicaHealth(shard.address(*c)), "NOT_SERVING");

  ASSERT_TRUE(CountingPushes(client.get(), 300, nullptr, &pause).ok())
      << shard.Log(b);
  absl::Status synced = shard.WaitFor(
      shard.address(b), {shard.address(b), shard.address(*c)},
      absl::Seconds(30));
  ASSERT_TRUE(synced.ok()) << synced << "\n" << shard.Log(*c);
  EXPECT_EQ(ReplicaHealth(shard.address(b)), "SERVING");  // primary
  EXPECT_EQ(ReplicaHealth(shard.address(*c)), "SERVING");  // in sync
  ASSERT_TRUE(shard.replica(b)->Signal(SIGKILL).ok());
  absl::StatusOr<std::vector<float>> final_values = Pull(client.get());
  ASSERT_TRUE(final_values.ok()) << final_values.status() << "\n"
                                 << shard.Log(*c);
  EXPECT_EQ(shard.resolver().Address(0), shard.address(*c));
  ExpectAll(*final_values, start - 600);
}

// A whole shard restarted against the same etcd finds the in_sync set of
// the earlier run: the elected replica is not in it, so it may lack
// acknowledged pushes and fences itself, saying how to clear the stale set.
// `ps_ctl clear-replication` (ClearReplication) clears it once no replica
// runs, and then a new replica becomes primary; while one runs it refuses
// and deletes nothing.
TEST(ReplicatedShardTest, StaleInSyncSetFencesAndPsCtlClearsIt) {
  ReplicatedShard shard;
  ASSERT_TRUE(shard.Start("stale_set").ok());
  ASSERT_TRUE(shard.SetInSync("127.0.0.1:1,127.0.0.1:2").ok());
  absl::StatusOr<int> a = shard.AddReplica();
  ASSERT_TRUE(a.ok()) << a.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (shard.Log(*a).find("fenced") == std::string::npos &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  const std::string log = shard.Log(*a);
  EXPECT_NE(log.find("not in the shard's in_sync set [127.0.0.1:1,"
                     "127.0.0.1:2]"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(absl::StrCat("ps_ctl clear-replication --config ",
                                  shard.config().source_path)),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("etcdctl --endpoints="), std::string::npos) << log;
  EXPECT_NE(log.find(" del /ps/stale_set/"), std::string::npos) << log;

  // Once the fenced replica has resigned, `ps_ctl status` finds no primary
  // and points at the stale set.
  ctl::CtlOptions status;
  status.command = "status";
  status.client = ClientOptions::FromConfig(shard.config(), -1);
  status.etcd_endpoints = shard.config().replication.etcd_endpoints;
  status.cluster_id = "stale_set";
  std::string status_err;
  do {
    std::ostringstream out, err;
    EXPECT_EQ(ctl::RunCommand(status, out, err), ctl::kExitError);
    status_err = err.str();
  } while (!absl::StrContains(status_err, "no primary elected") &&
           absl::Now() < deadline);
  EXPECT_TRUE(absl::StrContains(
      status_err, "in_sync is [127.0.0.1:1,127.0.0.1:2]: if every server of "
                  "the cluster has stopped, that set is stale and `ps_ctl "
                  "clear-replication`"))
      << status_err;

  const std::vector<std::string>& etcd =
      shard.config().replication.etcd_endpoints;
  auto clear = [&] {
    return ctl::ClearReplication(etcd, EtcdTlsConfig(), "stale_set",
                                 /*num_shards=*/1, absl::Seconds(5));
  };
  // The fenced replica resigns from the election as it exits.
  absl::StatusOr<ctl::ClearedReplication> cleared = clear();
  while (!cleared.ok() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
    cleared = clear();
  }
  ASSERT_TRUE(cleared.ok()) << cleared.status();
  EXPECT_GE(cleared->deleted_keys, 1);
  ASSERT_EQ(cleared->shards.size(), 1u);
  EXPECT_EQ(cleared->shards[0].primary, "");
  EXPECT_EQ(cleared->shards[0].in_sync,
            (std::vector<std::string>{"127.0.0.1:1", "127.0.0.1:2"}));
  EXPECT_TRUE(shard.InSync().empty());

  absl::StatusOr<int> b = shard.AddReplica();
  ASSERT_TRUE(b.ok()) << b.status();
  const absl::Status primary = shard.WaitFor(
      shard.address(*b), {shard.address(*b)}, absl::Seconds(10));
  ASSERT_TRUE(primary.ok()) << primary << "\n" << shard.Log(*b);

  cleared = clear();
  EXPECT_EQ(cleared.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(
      cleared.status().message(),
      absl::StrCat("replicas of cluster 'stale_set' are running (shard 0: ",
                   shard.address(*b), "); nothing was deleted")))
      << cleared.status();
  EXPECT_EQ(shard.InSync(), std::vector<std::string>{shard.address(*b)});
}

// Supervisors (ps_launch, Kubernetes) restart a crashed replica on the same
// address. The restarted process starts empty; were it taken for its
// predecessor in the in_sync set, it would be elected and serve a shard
// without its acknowledged pushes. Its id carries an incarnation, so it is
// not in the set: it fences itself and serves nothing.
TEST(ReplicatedShardTest, ReplicaRestartedOnItsAddressIsNotItsPredecessor) {
  ReplicatedShard shard;
  ASSERT_TRUE(shard.Start("reincarnation").ok());
  absl::StatusOr<int> a = shard.AddReplica();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(shard.WaitFor(shard.address(*a), {shard.address(*a)},
                            absl::Seconds(10)).ok());
  absl::StatusOr<std::unique_ptr<Client>> client = shard.Connect();
  ASSERT_TRUE(client.ok()) << client.status();
  absl::Duration pause;
  ASSERT_TRUE(CountingPushes(client->get(), 10, nullptr, &pause).ok());
  client->reset();

  ASSERT_TRUE(shard.replica(*a)->Signal(SIGKILL).ok());
  const std::string address = shard.address(*a);
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port));
  absl::StatusOr<int> again = shard.AddReplica(port);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(shard.address(*again), address);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (shard.Log(*again).find("fenced") == std::string::npos &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  const std::string log = shard.Log(*again);
  EXPECT_NE(log.find(absl::StrCat("not in the shard's in_sync set [", address,
                                  "/")),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("is primary, term"), std::string::npos) << log;
  EXPECT_EQ(shard.InSync(), std::vector<std::string>{address});
}

// A backup receives the whole shard over Follow: with a bearer token
// configured, backups present it and join, and a caller without it is
// refused before anything is sent.
// With mutual TLS (the config's tls section, require_client_cert) the
// backups follow over TLS, presenting the config's certificate like any
// client: a primary's SIGKILL loses nothing and a new replica catches up.
// Every connection over mutual TLS: clients and backups to the replicas,
// and every process to etcd (replication.etcd_tls; etcd demands client
// certificates from the CA).
TEST(ReplicatedShardTest, MutualTlsReplicasAndEtcdFollowAndFailOver) {
  const std::string dir = absl::StrCat(TestTempDirOrTmp(), "/replica_certs");
  ASSERT_EQ(std::system(absl::StrCat("bash ",
                                     RunfilePath("tests/security/make_certs.sh"),
                                     " ", dir)
                            .c_str()),
            0);
  ReplicatedShard shard;
  ReplicatedShard::Options options;
  options.tls_dir = dir;
  absl::StatusOr<PrimaryAndBackup> setup =
      StartPrimaryAndBackup(&shard, "tls", options);
  ASSERT_TRUE(setup.ok()) << setup.status();
  // etcd answers the config's credentials only: not plaintext, not TLS
  // without a client certificate.
  auto ping = [&](const std::shared_ptr<grpc::ChannelCredentials>& creds) {
    replication::EtcdClientOptions o;
    o.endpoints = {shard.etcd()->endpoint()};
    o.credentials = creds;
    return (*replication::EtcdClient::Create(o))->Ping(absl::Seconds(2));
  };
  EtcdTlsConfig without_cert = shard.config().replication.etcd_tls;
  without_cert.cert_file.clear();
  without_cert.key_file.clear();
  EXPECT_TRUE(ping(*replication::EtcdCredentials(
                       shard.config().replication.etcd_tls))
                  .ok());
  EXPECT_FALSE(ping(nullptr).ok());
  EXPECT_FALSE(ping(*replication::EtcdCredentials(without_cert)).ok());
  std::unique_ptr<Client> client = std::move(setup->client);
  const float start = setup->initial[0];
  absl::Duration pause;
  ASSERT_TRUE(CountingPushes(
                  client.get(), 1000,
                  [&] { ASSERT_TRUE(shard.replica(setup->a)->Signal(SIGKILL).ok()); },
                  &pause)
                  .ok())
      << shard.Log(setup->b);
  EXPECT_EQ(shard.resolver().Address(0), shard.address(setup->b));
  absl::StatusOr<int> c = shard.AddReplica();
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(shard
                  .WaitFor(shard.address(setup->b),
                           {shard.address(setup->b), shard.address(*c)},
                           absl::Seconds(20))
                  .ok())
      << shard.Log(*c);
  ASSERT_TRUE(shard.replica(setup->b)->Signal(SIGKILL).ok());
  absl::StatusOr<std::vector<float>> values = Pull(client.get());
  ASSERT_TRUE(values.ok()) << values.status() << "\n" << shard.Log(*c);
  ExpectAll(*values, start - 1000);
}

// `ps_ctl status` on a replicated config: the shards are probed at their
// elected primary (servers[0] of this config, 127.0.0.1:1, serves nothing),
// and the report carries each shard's primary, term and in_sync set, before
// and after a failover.
TEST(ReplicatedShardTest, PsCtlStatusShowsPrimaryTermAndInSync) {
  ReplicatedShard shard;
  absl::StatusOr<PrimaryAndBackup> setup = StartPrimaryAndBackup(&shard, "ctl");
  ASSERT_TRUE(setup.ok()) << setup.status();
  ctl::CtlOptions options;
  options.command = "status";
  options.json = true;
  options.client = ClientOptions::FromConfig(shard.config(), -1);
  options.etcd_endpoints = shard.config().replication.etcd_endpoints;
  options.cluster_id = "ctl";
  auto status = [&options] {
    std::ostringstream out, err;
    const int code = ctl::RunCommand(options, out, err);
    return std::make_pair(code, out.str() + err.str());
  };
  const std::string a = shard.address(setup->a);
  const std::string b = shard.address(setup->b);
  auto [code, report] = status();
  ASSERT_EQ(code, ctl::kExitOk) << report;
  EXPECT_TRUE(absl::StrContains(
      report, absl::StrCat("\"replication\":[{\"shard\":0,\"primary\":\"", a,
                           "\",\"term\":")))
      << report;
  EXPECT_TRUE(absl::StrContains(report, absl::StrCat("\"", a, "/")) &&
              absl::StrContains(report, absl::StrCat("\"", b, "/")))
      << "both replicas in sync: " << report;

  ASSERT_TRUE(shard.replica(setup->a)->Signal(SIGKILL).ok());
  ASSERT_TRUE(shard.WaitFor(b, {b}, absl::Seconds(10)).ok());
  std::tie(code, report) = status();
  ASSERT_EQ(code, ctl::kExitOk) << report;
  EXPECT_TRUE(absl::StrContains(
      report, absl::StrCat("\"primary\":\"", b, "\",\"term\":")))
      << report;
  EXPECT_FALSE(absl::StrContains(report, absl::StrCat("\"", a, "/")))
      << "the dead replica left in_sync: " << report;

  options.json = false;  // the text report has the table too
  std::tie(code, report) = status();
  ASSERT_EQ(code, ctl::kExitOk) << report;
  EXPECT_TRUE(absl::StrContains(report, "PRIMARY")) << report;
  EXPECT_TRUE(absl::StrContains(report, absl::StrCat("1 [", b, "/")))
      << report;
}

TEST(ReplicatedShardTest, FollowRequiresTheClusterToken) {
  ReplicatedShard shard;
  ReplicatedShard::Options options;
  options.auth_token = "s3cret";
  ASSERT_TRUE(shard.Start("token", options).ok());
  absl::StatusOr<int> a = shard.AddReplica();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(shard.WaitFor(shard.address(*a), {shard.address(*a)},
                            absl::Seconds(10)).ok());
  absl::StatusOr<int> b = shard.AddReplica();
  ASSERT_TRUE(b.ok()) << b.status();
  const absl::Status joined = shard.WaitFor(
      shard.address(*a), {shard.address(*a), shard.address(*b)},
      absl::Seconds(10));
  ASSERT_TRUE(joined.ok()) << joined << "\nbackup log:\n" << shard.Log(*b);

  auto stub = replication::Replication::NewStub(grpc::CreateChannel(
      shard.address(*a), grpc::InsecureChannelCredentials()));
  for (const char* token : {"", "Bearer wrong"}) {
    grpc::ClientContext context;
    if (*token != '\0') context.AddMetadata("authorization", token);
    auto stream = stub->Follow(&context);
    replication::FollowRequest hello;
    hello.set_replica_id("intruder");
    stream->Write(hello);
    stream->WritesDone();
    replication::FollowMessage message;
    EXPECT_FALSE(stream->Read(&message)) << "got a snapshot with '" << token
                                         << "'";
    const grpc::Status status = stream->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << token << ": " << status.error_message();
  }
}

}  // namespace
}  // namespace ps::testing
