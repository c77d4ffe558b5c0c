// Chaos, sync training (issue 16 item 7b): a bounded, seeded random schedule
// of SIGSTOP/SIGCONT and SIGKILL of the servers and the workers of a 2 x 2
// sync job run by the real ps_launch (real ps_server / ps_worker processes).
//
// The schedule: kEvents events, kGapMin..kGapMax s apart, each a pause
// (SIGSTOP, then SIGCONT after 0.3..4 s; the heartbeat timeout is 2 s, so a
// long worker pause gets the worker evicted and it must resynchronise, and a
// long server pause must not evict the healthy workers) or a SIGKILL (the
// launcher restarts the process; a server restores its newest checkpoint,
// written every 2 s, a worker rejoins at the job's step) of one server or
// worker, at most kMaxKillsPerProcess kills of any one process (the restart
// budget is 3). The first event waits for both shards' first checkpoint.
//
// Asserted: the job finishes (exit 0 and its RESULT line), its accuracy holds
// (> 0.8, as without faults), the launcher restarted exactly the processes
// the schedule killed, and both workers end (DONE) at the same, last step.
//
// The seed is printed; PS_CHAOS_SEED replays a schedule. Network cuts are not
// part of this test: the namespace harness (tests/netns) runs processes it
// starts itself, not ps_launch's (see the report of issue 16).
#include <signal.h>

#include <cstdio>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "deploy/launcher/ps_launch_harness.h"
#include "gtest/gtest.h"
#include "tests/chaos_seed.h"

namespace ps::launcher::testing {
namespace {

constexpr int kEvents = 6;
constexpr double kGapMin = 0.5, kGapMax = 2.0;  // seconds between events
constexpr int kMaxKillsPerProcess = 2;

enum class Action { kPause, kKill };
enum class Role { kServer, kWorker };

struct Event {
  Action action;
  Role role;
  int index;
  double pause_s;  // kPause only
  double gap_s;    // before the event
};

const char* Name(Role role) {
  return role == Role::kServer ? "server" : "worker";
}

std::vector<Event> Schedule(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> pause(0.3, 4.0), gap(kGapMin, kGapMax);
  int kills[2][2] = {{0, 0}, {0, 0}};  // [role][index]
  std::vector<Event> events;
  while (static_cast<int>(events.size()) < kEvents) {
    Event e;
    e.action = rng() % 2 == 0 ? Action::kPause : Action::kKill;
    e.role = rng() % 2 == 0 ? Role::kServer : Role::kWorker;
    e.index = static_cast<int>(rng() % 2);
    e.pause_s = pause(rng);
    e.gap_s = gap(rng);
    int& killed = kills[static_cast<int>(e.role)][e.index];
    if (e.action == Action::kKill && killed == kMaxKillsPerProcess) continue;
    if (e.action == Action::kKill) ++killed;
    events.push_back(e);
  }
  return events;
}

TEST(PsLaunchChaosTest, SeededKillsAndPausesOfServersAndWorkersSyncJob) {
  const uint32_t seed = ps::testing::ChaosSeed();
  const std::vector<Event> events = Schedule(seed);

  const std::string dir = TempDir();
  // 8000 examples: 200 steps per epoch and worker. The job must outlast the
  // schedule (at most kEvents * (kGapMax + 4 s pause or a restart), ~36 s)
  // even without its stalls: 60 epochs took 13 s here by 2026-11-28 and
  // ended first for some seeds (1747203112: "worker 1 is not running");
  // 200 epochs take ~45 s.
  constexpr int kEpochs = 200;
  constexpr int kSteps = kEpochs * 200;
  BackgroundLaunch launch(
      {"--progress=plain", "--config=" + WriteConfig(dir, 8000),
       "--out_dir=" + dir + "/out", absl::StrCat("--epochs=", kEpochs),
       "--set=server.heartbeat_timeout_ms=2000",
       "--worker_flags=--log_every_steps=50", "--stall_timeout_s=20",
       "--stall_fail_s=120"});
  ASSERT_TRUE(launch.WaitForLine("[worker 1] PROGRESS", 120))
      << launch.Joined();
  ASSERT_TRUE(launch.WaitForLine("shard-0-of-2/ckpt-", 30)) << launch.Joined();
  ASSERT_TRUE(launch.WaitForLine("shard-1-of-2/ckpt-", 30)) << launch.Joined();

  int restarts[2] = {0, 0};  // [role]: kills done, each restarted once
  for (const Event& e : events) {
    absl::SleepFor(absl::Seconds(e.gap_s));
    const std::string flag = absl::StrCat("--index=", e.index);
    // A process the previous event killed may still be waiting out its
    // restart delay (1 s): the event goes to its successor (seed 710905928
    // killed server 0 twice 0.6 s apart and found no server 0 running).
    pid_t pid = -1;
    const absl::Time restart_deadline = absl::Now() + absl::Seconds(10);
    while ((pid = launch.ChildWith({e.role == Role::kServer ? "ps_server"
                                                           : "ps_worker",
                                    flag})) <= 0 &&
           absl::Now() < restart_deadline) {
      absl::SleepFor(absl::Milliseconds(50));
    }
    ASSERT_GT(pid, 0) << Name(e.role) << " " << e.index
                      << " is not running; the job ended before the "
                         "schedule did (make it longer)\n"
                      << launch.Joined();
    if (e.action == Action::kPause) {
      std::printf("chaos: pause %s %d (pid %d) for %.1f s\n", Name(e.role),
                  e.index, pid, e.pause_s);
      ASSERT_EQ(kill(pid, SIGSTOP), 0);
      absl::SleepFor(absl::Seconds(e.pause_s));
      ASSERT_EQ(kill(pid, SIGCONT), 0);
      continue;
    }
    std::printf("chaos: kill %s %d (pid %d)\n", Name(e.role), e.index, pid);
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    ++restarts[static_cast<int>(e.role)];
    // The next event finds the restarted process.
    ASSERT_TRUE(launch.WaitForLine(
        absl::StrCat("[launch] restarted ", Name(e.role), " ", e.index), 60))
        << launch.Joined();
  }
  std::fflush(stdout);

  EXPECT_EQ(launch.Finish(), 0) << launch.Joined();
  const std::vector<std::string>& lines = launch.lines();
  // The launcher reports restarts only when there were some: a schedule
  // of pauses alone (seed 4128981579: six) restarts nothing.
  const bool killed = restarts[0] + restarts[1] > 0;
  EXPECT_EQ(CountContaining(lines, std::regex(absl::StrCat(
                             "\\[launch\\] restarts: ", restarts[0],
                             " of servers, ", restarts[1], " of workers"))),
            killed ? 1 : 0)
      << launch.Joined();
  EXPECT_EQ(CountContaining(lines, std::regex("\\[launch\\] restarts: ")),
            killed ? 1 : 0)
      << launch.Joined();
  // Both workers end at the job's last step.
  for (int w = 0; w < 2; ++w) {
    EXPECT_EQ(CountContaining(lines, std::regex(absl::StrCat(
                               "\\[worker ", w, "\\] DONE worker=", w,
                               " steps=", kSteps, " "))),
              1)
        << launch.Joined();
  }
  ASSERT_FALSE(lines.empty());
  const std::string& result = lines.back();
  ASSERT_EQ(result.rfind(absl::StrCat("RESULT model=softmax mode=sync servers=2 "
                                      "workers=2 epochs=",
                                      kEpochs, " "),
                         0),
            0u)
      << launch.Joined();
  EXPECT_GT(TestAccuracy(result), 0.8)
      << result;
  std::printf("chaos seed %u: %d events, restarts %d of servers, %d of "
              "workers\n",
              seed, kEvents, restarts[0], restarts[1]);
}

}  // namespace
}  // namespace ps::launcher::testing
