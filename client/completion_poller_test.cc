// CompletionPoller with grpc::Alarm events on its queue (no network).
#include "client/completion_poller.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/alarm.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

// An event that records that it ran, and on which thread.
struct RecordingTag final : CompletionTag {
  void OnComplete(bool ok) override {
    thread = std::this_thread::get_id();
    this->ok = ok;
    ran.store(true);
  }
  std::atomic<bool> ran{false};
  std::thread::id thread;
  bool ok = false;
};

std::chrono::system_clock::time_point In(absl::Duration d) {
  return std::chrono::system_clock::now() + absl::ToChronoMicroseconds(d);
}

// `n` alarms on the poller's queue, alarm i due at first + i * step.
struct AlarmEvents {
  AlarmEvents(CompletionPoller* poller, int n, absl::Duration first,
              absl::Duration step) {
    for (int i = 0; i < n; ++i) {
      tags.push_back(std::make_unique<RecordingTag>());
      alarms.push_back(std::make_unique<grpc::Alarm>());
      alarms.back()->Set(poller->queue(), In(first + i * step),
                         tags.back().get());
    }
  }
  bool AllRan() const {
    for (const auto& tag : tags) {
      if (!tag->ran.load()) return false;
    }
    return true;
  }
  std::vector<std::unique_ptr<RecordingTag>> tags;
  std::vector<std::unique_ptr<grpc::Alarm>> alarms;
};

TEST(CompletionPollerTest, WaitingCallerHandlesTheEventOnItsOwnThread) {
  CompletionPoller poller;
  absl::SleepFor(absl::Milliseconds(20));  // the background thread polls
  RecordingTag tag;
  grpc::Alarm alarm;
  alarm.Set(poller.queue(), In(absl::Milliseconds(30)), &tag);
  poller.WaitUntil([&] { return tag.ran.load(); });
  EXPECT_TRUE(tag.ran.load());
  EXPECT_TRUE(tag.ok);
  // The caller took the token from the background thread and read the
  // event itself.
  EXPECT_EQ(tag.thread, std::this_thread::get_id());
}

TEST(CompletionPollerTest, BackgroundThreadHandlesEventsNobodyWaitsFor) {
  CompletionPoller poller;
  RecordingTag tag;
  grpc::Alarm alarm;
  alarm.Set(poller.queue(), In(absl::Milliseconds(5)), &tag);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!tag.ran.load() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_TRUE(tag.ran.load());
  EXPECT_NE(tag.thread, std::this_thread::get_id());
}

TEST(CompletionPollerTest, ManyWaitingThreadsAllReturn) {
  CompletionPoller poller;
  constexpr int kThreads = 8;
  AlarmEvents events(&poller, kThreads, absl::Milliseconds(5),
                     absl::Milliseconds(7));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      poller.WaitUntil([&] { return events.tags[i]->ran.load(); });
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(events.AllRan());
}

TEST(CompletionPollerTest, WaiterIsNotWokenByOtherThreadsEvents) {
  CompletionPoller poller;
  // 2,000 events, due one every 50 us from 100 ms on, for a thread that
  // polls meanwhile.
  AlarmEvents events(&poller, 2000, absl::Milliseconds(100),
                     absl::Microseconds(50));
  std::thread polling(
      [&] { poller.WaitUntil([&] { return events.AllRan(); }); });
  absl::SleepFor(absl::Milliseconds(20));  // it holds the token now
  // Another caller waits for its own result, due after those events.
  RecordingTag late;
  grpc::Alarm late_alarm;
  late_alarm.Set(poller.queue(), In(absl::Milliseconds(300)), &late);
  int own_thread_checks = 0;
  const absl::Time start = absl::Now();
  poller.WaitUntil([&, self = std::this_thread::get_id()] {
    if (std::this_thread::get_id() == self) ++own_thread_checks;
    return late.ran.load();
  });
  const absl::Duration waited = absl::Now() - start;
  polling.join();
  EXPECT_TRUE(late.ran.load());
  // The waiter looks at its result at most once per millisecond (its wait
  // timeout; its polling slice once it gets the token), plus once when
  // offered the token and once when woken for its result: never for each
  // of the other thread's events.
  EXPECT_LE(own_thread_checks, absl::ToInt64Milliseconds(waited) + 50)
      << "waited " << waited;
}

TEST(CompletionPollerTest, ResultCompletedElsewhereIsNoticedWithoutAnEvent) {
  CompletionPoller poller;
  std::atomic<bool> done{false};
  std::thread completer([&] {
    absl::SleepFor(absl::Milliseconds(20));
    done.store(true);  // not through the queue (e.g. a connection failing)
  });
  const absl::Time start = absl::Now();
  poller.WaitUntil([&] { return done.load(); });
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  completer.join();
}

TEST(CompletionPollerTest, NotifyWakesCallersWhoseResultsCompletedElsewhere) {
  CompletionPoller poller;
  std::atomic<bool> polling_done{false}, waiting_done{false};
  absl::Time polling_back, waiting_back;
  std::thread polling([&] {
    poller.WaitUntil([&] { return polling_done.load(); });
    polling_back = absl::Now();
  });
  absl::SleepFor(absl::Milliseconds(20));  // it holds the token now
  std::thread waiting([&] {
    poller.WaitUntil([&] { return waiting_done.load(); });
    waiting_back = absl::Now();
  });
  absl::SleepFor(absl::Milliseconds(20));  // it waits
  // Completed by this thread, not through the queue.
  polling_done.store(true);
  waiting_done.store(true);
  const absl::Time notified = absl::Now();
  poller.Notify();
  polling.join();
  waiting.join();
  // Well before kRecheck, the only other way they would notice.
  EXPECT_LT(polling_back - notified, CompletionPoller::kRecheck / 2);
  EXPECT_LT(waiting_back - notified, CompletionPoller::kRecheck / 2);
}

TEST(CompletionPollerTest, DestroyedWithAnAlarmPendingDrainsIt) {
  RecordingTag tag;
  auto alarm = std::make_unique<grpc::Alarm>();
  {
    CompletionPoller poller;
    alarm->Set(poller.queue(), In(absl::Hours(1)), &tag);
    alarm->Cancel();  // delivered with ok = false while the queue drains
  }
  EXPECT_TRUE(tag.ran.load());
  EXPECT_FALSE(tag.ok);
}

}  // namespace
}  // namespace ps
