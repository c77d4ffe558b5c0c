// A bounded, seeded random schedule of faults for the namespace chaos tests
// (netns_chaos_test, netns_training_chaos_test): silent cuts between a
// server's host and a client's (or worker's) host, a client's host isolated,
// a server's link set down, a server SIGSTOPped, a server or a client
// SIGKILLed and restarted, each for a random time (a killed process stays
// down that long), with random gaps between them. The same seed and spec give the same
// schedule, so a test that prints its seed (tests/chaos_seed.h) can be
// replayed with PS_CHAOS_SEED.
#ifndef PS_TESTS_NETNS_FAULT_SCHEDULE_H_
#define PS_TESTS_NETNS_FAULT_SCHEDULE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tests/cluster_harness.h"
#include "tests/netns/netns.h"

namespace ps::testing {

enum class Fault {
  kCut,
  kIsolateClient,
  kServerLinkDown,
  kPauseServer,
  kKillServer,
  kKillClient,
};

// Who kills and restarts processes (kKillServer, kKillClient): the test,
// which owns them. A kill returns once the process is gone, a restart once
// it runs again. An event whose hooks are unset fails.
struct ProcessHooks {
  std::function<absl::Status(int server)> kill_server, restart_server;
  std::function<absl::Status(int client)> kill_client, restart_client;
};

// Which hosts the faults name: server i runs in servers[i] (and is
// LocalCluster server i, for kPauseServer), clients in `clients`.
struct FaultHosts {
  std::vector<std::string> servers;
  std::vector<std::string> clients;
};

struct FaultScheduleSpec {
  // The kinds drawn from, uniformly (the default: no kills).
  std::vector<Fault> kinds = {Fault::kCut, Fault::kIsolateClient,
                              Fault::kServerLinkDown, Fault::kPauseServer};
  int events = 8;
  int gap_min_ms = 200, gap_max_ms = 1000;         // before each fault
  int duration_min_ms = 300, duration_max_ms = 3000;  // of each fault
};

struct FaultEvent {
  Fault fault;
  // Index into FaultHosts::servers (kCut, kServerLinkDown, kPauseServer).
  int server;
  // Index into FaultHosts::clients (kCut, kIsolateClient).
  int client;
  absl::Duration gap;       // before the fault
  absl::Duration duration;  // of the fault
};

// spec.events events drawn from a generator seeded with `seed`.
std::vector<FaultEvent> MakeFaultSchedule(uint32_t seed,
                                          const FaultScheduleSpec& spec,
                                          const FaultHosts& hosts);

// E.g. "cut server a - client c for 1200 ms".
std::string Describe(const FaultEvent& e, const FaultHosts& hosts);

// Applies the fault, waits its duration, undoes it. `cluster` is needed
// for kPauseServer only, `hooks` for the kills only.
absl::Status RunFault(const FaultEvent& e, const FaultHosts& hosts,
                      TestNetwork& net, LocalCluster* cluster,
                      const ProcessHooks& hooks = {});

// Runs a schedule on a thread of its own: each event after its gap, printed
// ("chaos: <Describe>") as it starts. Join() before reading the results;
// the destructor joins too. Stop() makes it skip the events not yet started
// (one in progress runs to its end, so the network is healed).
class FaultThread {
 public:
  FaultThread(std::vector<FaultEvent> events, FaultHosts hosts,
              TestNetwork& net, LocalCluster* cluster,
              ProcessHooks hooks = {});
  ~FaultThread();
  FaultThread(const FaultThread&) = delete;
  FaultThread& operator=(const FaultThread&) = delete;

  bool done() const { return done_.load(); }
  void Stop() { stop_ = true; }
  void Join();

  const std::vector<FaultEvent>& events() const { return events_; }
  // After Join(): each event's result (OK for skipped ones) and when it
  // started (InfinitePast for skipped ones).
  const std::vector<absl::Status>& results() const { return results_; }
  const std::vector<absl::Time>& started_at() const { return started_at_; }
  // How many events have started so far.
  int started() const { return started_.load(); }

 private:
  void Run(TestNetwork& net, LocalCluster* cluster);

  const std::vector<FaultEvent> events_;
  const FaultHosts hosts_;
  const ProcessHooks hooks_;
  std::vector<absl::Status> results_;
  std::vector<absl::Time> started_at_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  std::atomic<int> started_{0};
  std::thread thread_;
};

}  // namespace ps::testing

#endif  // PS_TESTS_NETNS_FAULT_SCHEDULE_H_
