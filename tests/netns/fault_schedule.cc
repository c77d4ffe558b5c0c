#include "tests/netns/fault_schedule.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace ps::testing {

std::vector<FaultEvent> MakeFaultSchedule(uint32_t seed,
                                          const FaultScheduleSpec& spec,
                                          const FaultHosts& hosts) {
  // The draws' order is part of the replay contract: a seed printed by an
  // older run of a test must give the same schedule.
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> gap_ms(spec.gap_min_ms, spec.gap_max_ms);
  std::uniform_int_distribution<int> duration_ms(spec.duration_min_ms,
                                                 spec.duration_max_ms);
  std::vector<FaultEvent> events(spec.events);
  for (FaultEvent& e : events) {
    e.fault = spec.kinds[rng() % spec.kinds.size()];
    e.server = static_cast<int>(rng() % hosts.servers.size());
    e.client = static_cast<int>(rng() % hosts.clients.size());
    e.gap = absl::Milliseconds(gap_ms(rng));
    e.duration = absl::Milliseconds(duration_ms(rng));
  }
  return events;
}

std::string Describe(const FaultEvent& e, const FaultHosts& hosts) {
  const std::string& server = hosts.servers[e.server];
  const std::string& client = hosts.clients[e.client];
  const std::string how_long =
      absl::StrCat(" for ", absl::ToInt64Milliseconds(e.duration), " ms");
  switch (e.fault) {
    case Fault::kCut:
      return absl::StrCat("cut server ", server, " - client ", client,
                          how_long);
    case Fault::kIsolateClient:
      return absl::StrCat("isolate client ", client, how_long);
    case Fault::kServerLinkDown:
      return absl::StrCat("link down on server ", server, how_long);
    case Fault::kPauseServer:
      return absl::StrCat("SIGSTOP server ", server, how_long);
    case Fault::kKillServer:
      return absl::StrCat("SIGKILL server ", server, ", restart after",
                          how_long.substr(4));
    case Fault::kKillClient:
      return absl::StrCat("SIGKILL client ", client, ", restart after",
                          how_long.substr(4));
  }
  return "";
}

namespace {

absl::Status Signal(LocalCluster* cluster, int server, int signal) {
  if (cluster == nullptr) return absl::InvalidArgumentError("no cluster");
  if (kill(cluster->server_pid(server), signal) != 0) {
    return absl::InternalError(absl::StrCat("kill(", signal, ") failed"));
  }
  return absl::OkStatus();
}

// hook(index), or an error naming the missing hook.
absl::Status CallHook(const std::function<absl::Status(int)>& hook,
                      const char* name, int index) {
  if (!hook) return absl::InvalidArgumentError(absl::StrCat("no ", name));
  return hook(index);
}

absl::Status Apply(const FaultEvent& e, const FaultHosts& hosts,
                   TestNetwork& net, LocalCluster* cluster,
                   const ProcessHooks& hooks) {
  const std::string& server = hosts.servers[e.server];
  const std::string& client = hosts.clients[e.client];
  switch (e.fault) {
    case Fault::kCut:
      return net.Cut(server, client);
    case Fault::kIsolateClient:
      return net.Isolate(client);
    case Fault::kServerLinkDown:
      return net.LinkDown(server);
    case Fault::kPauseServer:
      return Signal(cluster, e.server, SIGSTOP);
    case Fault::kKillServer:
      return CallHook(hooks.kill_server, "kill_server hook", e.server);
    case Fault::kKillClient:
      return CallHook(hooks.kill_client, "kill_client hook", e.client);
  }
  return absl::OkStatus();
}

absl::Status Undo(const FaultEvent& e, const FaultHosts& hosts,
                  TestNetwork& net, LocalCluster* cluster,
                  const ProcessHooks& hooks) {
  const std::string& server = hosts.servers[e.server];
  const std::string& client = hosts.clients[e.client];
  switch (e.fault) {
    case Fault::kCut:
      return net.Heal(server, client);
    case Fault::kIsolateClient:
      return net.HealAll();
    case Fault::kServerLinkDown:
      return net.LinkUp(server);
    case Fault::kPauseServer:
      return Signal(cluster, e.server, SIGCONT);
    case Fault::kKillServer:
      return CallHook(hooks.restart_server, "restart_server hook", e.server);
    case Fault::kKillClient:
      return CallHook(hooks.restart_client, "restart_client hook", e.client);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunFault(const FaultEvent& e, const FaultHosts& hosts,
                      TestNetwork& net, LocalCluster* cluster,
                      const ProcessHooks& hooks) {
  if (absl::Status s = Apply(e, hosts, net, cluster, hooks); !s.ok()) {
    return s;
  }
  absl::SleepFor(e.duration);
  return Undo(e, hosts, net, cluster, hooks);
}

FaultThread::FaultThread(std::vector<FaultEvent> events, FaultHosts hosts,
                         TestNetwork& net, LocalCluster* cluster,
                         ProcessHooks hooks)
    : events_(std::move(events)),
      hosts_(std::move(hosts)),
      hooks_(std::move(hooks)),
      results_(events_.size()),
      started_at_(events_.size(), absl::InfinitePast()) {
  thread_ = std::thread([this, &net, cluster] { Run(net, cluster); });
}

FaultThread::~FaultThread() { Join(); }

void FaultThread::Join() {
  if (thread_.joinable()) thread_.join();
}

void FaultThread::Run(TestNetwork& net, LocalCluster* cluster) {
  for (size_t i = 0; i < events_.size(); ++i) {
    // The gap in slices, so that Stop() is seen within 50 ms.
    const absl::Time start = absl::Now() + events_[i].gap;
    while (!stop_ && absl::Now() < start) {
      absl::SleepFor(std::min(absl::Milliseconds(50), start - absl::Now()));
    }
    if (stop_) break;
    std::printf("chaos: %s\n", Describe(events_[i], hosts_).c_str());
    std::fflush(stdout);
    started_at_[i] = absl::Now();
    ++started_;
    results_[i] = RunFault(events_[i], hosts_, net, cluster, hooks_);
  }
  done_ = true;
}

}  // namespace ps::testing
