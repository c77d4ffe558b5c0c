// A contender process for the replication tests: campaigns in one election
// through Elector and prints one line per role change on stdout:
//
//   ROLE <role> term=<t> since_us=<µs> end_us=<µs> key=<key> leader=<...> reason=<...>
//
// Times are CLOCK_MONOTONIC microseconds (comparable between processes of the
// machine, also across network namespaces). end_us is, when the line leaves
// the primary role, the instant primacy ended: the earlier of the change and
// the lease's validity (PrimaryTerm() was empty from then on); else 0.
// Also: "READY pid=<pid>" at start, "BYE" after resigning.
//
// It resigns and exits 0 when its stdin closes or on SIGTERM / SIGINT, and dies
// with its parent (PR_SET_PDEATHSIG).
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/command_line.h"
#include "server/replication/elector.h"
#include "server/replication/etcd_client.h"

ABSL_FLAG(std::string, endpoints, "", "etcd endpoints, host:port,...");
ABSL_FLAG(std::string, prefix, "/ps/test/shard/0/primary/", "election prefix");
ABSL_FLAG(std::string, value, "", "value published with the key");
ABSL_FLAG(int64_t, ttl_s, 1, "lease TTL in seconds");
ABSL_FLAG(int64_t, keepalive_ms, 1000, "gRPC keepalive ping period to etcd");

namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop = true; }

void PrintRole(const ps::replication::RoleState& s, bool was_primary) {
  using ps::replication::MonoMicros;
  using Role = ps::replication::RoleState::Role;
  int64_t end_us = 0;
  if (was_primary && s.role != Role::kPrimary) {
    end_us = std::min(MonoMicros(s.since), MonoMicros(s.valid_until));
  }
  std::printf("ROLE %s term=%lld since_us=%lld end_us=%lld key=%s leader=%s reason=%s\n",
              ps::replication::RoleState::RoleName(s.role), static_cast<long long>(s.term),
              static_cast<long long>(MonoMicros(s.since)), static_cast<long long>(end_us),
              s.key.c_str(), ps::replication::DescribeLeader(s.leader).c_str(),
              s.reason.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  ps::ParseCommandLineWithHelp(
      argc, argv,
      "a contender process for the replication tests: campaigns in one "
      "election and prints a ROLE line per role change.\n\n"
      "  contender --endpoints HOST:PORT,... [--prefix P] [--value V] "
      "[--ttl_s N] [--keepalive_ms N]",
      {__FILE__});
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  signal(SIGPIPE, SIG_IGN);

  ps::replication::EtcdClientOptions client_options;
  client_options.endpoints = absl::StrSplit(absl::GetFlag(FLAGS_endpoints), ',');
  client_options.keepalive_time = absl::Milliseconds(absl::GetFlag(FLAGS_keepalive_ms));
  client_options.call_timeout = absl::Milliseconds(500);
  auto client = ps::replication::EtcdClient::Create(client_options);
  if (!client.ok()) {
    std::fprintf(stderr, "contender: %s\n", client.status().ToString().c_str());
    return 2;
  }
  std::printf("READY pid=%d\n", static_cast<int>(getpid()));
  std::fflush(stdout);

  ps::replication::ElectorOptions options;
  options.prefix = absl::GetFlag(FLAGS_prefix);
  options.value = absl::GetFlag(FLAGS_value);
  options.ttl_seconds = absl::GetFlag(FLAGS_ttl_s);
  absl::Mutex print_mu;
  bool was_primary = false;
  {
    ps::replication::Elector elector(
        client->get(), options, [&](const ps::replication::RoleState& s) {
          absl::MutexLock lock(&print_mu);
          PrintRole(s, was_primary);
          was_primary = s.role == ps::replication::RoleState::Role::kPrimary;
        });
    // Stdin closes when the test process goes away or closes our pipe.
    std::thread stdin_watch([] {
      char c;
      while (read(STDIN_FILENO, &c, 1) > 0) {
      }
      g_stop = true;
    });
    stdin_watch.detach();
    while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    elector.Resign().IgnoreError();
  }
  std::printf("BYE\n");
  std::fflush(stdout);
  return 0;
}
