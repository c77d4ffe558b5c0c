#include "client/future.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace ps {
namespace {

TEST(FutureTest, DefaultIsCompletedOk) {
  Future f;
  EXPECT_TRUE(f.Ready());
  EXPECT_TRUE(f.Wait().ok());
}

TEST(FutureTest, CompletedWithError) {
  Future f(absl::NotFoundError("nope"));
  EXPECT_TRUE(f.Ready());
  EXPECT_EQ(f.Wait(), absl::NotFoundError("nope"));
}

TEST(FutureTest, WaitBlocksUntilCompletedFromAnotherThread) {
  Promise p;
  Future f = p.future();
  EXPECT_FALSE(f.Ready());
  std::thread t([&p] {
    absl::SleepFor(absl::Milliseconds(20));
    p.state->Complete(absl::DataLossError("x"));
  });
  EXPECT_EQ(f.Wait().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(f.Ready());
  t.join();
}

TEST(FutureTest, OnlyFirstCompletionCounts) {
  Promise p;
  EXPECT_TRUE(p.state->Complete(absl::OkStatus()));
  EXPECT_FALSE(p.state->Complete(absl::InternalError("late")));
  EXPECT_TRUE(p.future().Wait().ok());
}

TEST(FutureTest, ThenBeforeCompletionRunsOnceOnCompletion) {
  Promise p;
  Future f = p.future();
  Future copy = f;  // copies share the result
  std::vector<absl::Status> seen;
  f.Then([&seen](const absl::Status& s) { seen.push_back(s); });
  copy.Then([&seen](const absl::Status& s) { seen.push_back(s); });
  EXPECT_TRUE(seen.empty());
  p.state->Complete(absl::AbortedError("a"));
  p.state->Complete(absl::OkStatus());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], absl::AbortedError("a"));
  EXPECT_EQ(seen[1], absl::AbortedError("a"));
}

TEST(FutureTest, ThenAfterCompletionRunsImmediatelyInCaller) {
  Future f(absl::UnavailableError("down"));
  const std::thread::id me = std::this_thread::get_id();
  bool ran = false;
  f.Then([&](const absl::Status& s) {
    ran = true;
    EXPECT_EQ(std::this_thread::get_id(), me);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  });
  EXPECT_TRUE(ran);
}

TEST(FutureTest, CallbackMayAttachAnotherCallback) {
  // Callbacks run outside the lock: re-entering the future must not deadlock.
  Promise p;
  Future f = p.future();
  int calls = 0;
  f.Then([&](const absl::Status&) {
    ++calls;
    f.Then([&](const absl::Status&) { ++calls; });
    EXPECT_TRUE(f.Ready());
  });
  p.state->Complete(absl::OkStatus());
  EXPECT_EQ(calls, 2);
}

TEST(FutureTest, WaitAllReturnsFirstErrorInOrderAfterAllComplete) {
  Promise a, b, c;
  std::vector<Future> futures = {a.future(), b.future(), c.future()};
  std::thread t([&] {
    c.state->Complete(absl::InternalError("c"));  // completes first
    absl::SleepFor(absl::Milliseconds(10));
    b.state->Complete(absl::NotFoundError("b"));
    absl::SleepFor(absl::Milliseconds(10));
    a.state->Complete(absl::OkStatus());
  });
  EXPECT_EQ(WaitAll(futures), absl::NotFoundError("b"));
  for (const Future& f : futures) EXPECT_TRUE(f.Ready());
  t.join();
  EXPECT_TRUE(WaitAll({}).ok());
  EXPECT_TRUE(WaitAll({Future(), Future()}).ok());
}

TEST(JoinerTest, CompletesAfterAllSubRequestsWithFirstError) {
  Promise p;
  auto joiner = Joiner::Create(3, p.state);
  joiner->Done(absl::OkStatus());
  joiner->Done(absl::OutOfRangeError("first"));
  EXPECT_FALSE(p.future().Ready());  // waits for every sub-request
  joiner->Done(absl::InternalError("second"));
  EXPECT_EQ(p.future().Wait(), absl::OutOfRangeError("first"));
}

TEST(JoinerTest, FinishHookSeesAndMayReplaceTheStatus) {
  Promise p;
  absl::Status seen = absl::UnknownError("not called");
  auto joiner = Joiner::Create(2, p.state, [&](absl::Status s) {
    seen = s;
    return absl::CancelledError("replaced");
  });
  joiner->Done(absl::OkStatus());
  joiner->Done(absl::OkStatus());
  EXPECT_TRUE(seen.ok());
  EXPECT_EQ(p.future().Wait(), absl::CancelledError("replaced"));
}

TEST(JoinerTest, ConcurrentSubRequestsCompleteParentExactlyOnce) {
  constexpr int kThreads = 8, kPerThread = 1000;
  Promise p;
  std::atomic<int> callbacks{0};
  p.future().Then([&](const absl::Status&) { ++callbacks; });
  auto joiner = Joiner::Create(kThreads * kPerThread, p.state);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&joiner] {
      for (int i = 0; i < kPerThread; ++i) joiner->Done(absl::OkStatus());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(p.future().Wait().ok());
  EXPECT_EQ(callbacks.load(), 1);
}

}  // namespace
}  // namespace ps
