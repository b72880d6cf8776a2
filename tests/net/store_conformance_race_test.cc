// The lifecycle guarantees under contention and in real time, in both modes: 16 concurrent
// callers (threads sharing the Store; over the network, one pipelined Client), and leases that
// really run out on the system clock.
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "store_conformance.h"
#include "support/concurrency.h"
#include "support/lock_contention.h"

namespace idem::testing {
namespace {

using namespace std::chrono_literals;
constexpr int kCallers = 16;

template <typename Fn>
void RunCallers(Fn fn) {
  RunConcurrently(kCallers, fn);
}

TEST_P(StoreConformanceTest, SixteenCallersGetOneStartedPerKey) {
  constexpr int kKeys = 20;
  std::vector<std::atomic<int>> started(kKeys);
  RunCallers([&](int t) {
    for (int k = 0; k < kKeys; ++k) {
      int i = (k + t) % kKeys;
      Result<OpResult> r =
          store().Execute(Op::Begin({.ns = "race", .key = "k" + std::to_string(i)}));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (r->outcome == Outcome::kStarted) started[i]++;
    }
  });
  for (int i = 0; i < kKeys; ++i) EXPECT_EQ(1, started[i].load()) << i;
}

TEST_P(StoreConformanceTest, SixteenCallersConsumeATokenExactlyOnce) {
  constexpr int kTokens = 20;
  std::vector<std::string> tokens;
  for (int i = 0; i < kTokens; ++i) {
    Result<OpResult> r = store().Execute(Op::IssueToken({.ns = "form"}));
    ASSERT_OK(r);
    tokens.push_back(r->token);
  }
  std::vector<std::atomic<int>> consumed(kTokens);
  RunCallers([&](int t) {
    for (int k = 0; k < kTokens; ++k) {
      int i = (k + t) % kTokens;
      Result<OpResult> r = store().Execute(Op::ConsumeToken({.ns = "form", .token = tokens[i]}));
      ASSERT_TRUE(r.ok());
      if (r->outcome == Outcome::kConsumed)
        consumed[i]++;
      else
        EXPECT_EQ(Outcome::kAlreadyConsumed, r->outcome);
    }
  });
  for (int i = 0; i < kTokens; ++i) EXPECT_EQ(1, consumed[i].load()) << i;
}

TEST_P(StoreConformanceTest, SixteenCallersNeverHoldALockTogether) {
  LockContention contention = ContendForOneLock(store(), kCallers, /*holds_per_caller=*/2);
  EXPECT_EQ(1, contention.max_holders);
  EXPECT_EQ(2 * kCallers, contention.acquisitions);  // the lock really changed hands
}

// Real time: the system clock and leases of a few hundred milliseconds.
class RealLeaseTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    EngineOptions options = ForMode(GetParam(), TestEngineOptions(nullptr));
    options.clock = SystemClock::Default();
    if (InProcess(GetParam())) {
      engine_ = std::move(*Engine::Open(dir_.Sub("db"), options));
      store_ = engine_.get();
    } else {
      server_ = std::make_unique<TestServer>(ServerOptionsFor(GetParam()),
                                             std::make_shared<ManualClock>(), options, false);
      auto client = server_->Connect(ClientOptionsFor(GetParam()));
      ASSERT_OK(client);
      client_ = std::move(*client);
      store_ = client_.get();
    }
  }
  Store& store() { return *store_; }

  TempDir dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<Client> client_;
  Store* store_ = nullptr;
};

TEST_P(RealLeaseTest, AWaiterTakesOverWhenTheLeaseRunsOutAndTheStaleHolderIsRejected) {
  Result<OpResult> crashed = store().Execute(Op::Begin({.ns = "pay", .key = "k", .lease = 300ms}));
  ASSERT_OK(crashed);
  ASSERT_EQ(Outcome::kStarted, crashed->outcome);
  // The holder "crashes": it never heartbeats. A duplicate waits instead of polling, and is
  // handed the attempt when the lease ends (long before its 10 s wait).
  const auto t0 = std::chrono::steady_clock::now();
  Result<OpResult> takeover =
      store().Execute(Op::Begin({.ns = "pay", .key = "k", .lease = 5s, .wait = 10s}));
  const auto waited = std::chrono::steady_clock::now() - t0;
  ASSERT_OK(takeover);
  EXPECT_EQ(Outcome::kStarted, takeover->outcome);
  EXPECT_GT(takeover->record->fence, crashed->record->fence);
  EXPECT_LT(waited, 5s);
  // The old holder comes back: rejected.
  EXPECT_EQ(Outcome::kFenceMismatch,
            store()
                .Execute(Op::Complete(
                    {.ns = "pay", .key = "k", .fence = crashed->record->fence, .response = "late"}))
                ->outcome);
  EXPECT_EQ(Outcome::kFenceMismatch,
            store()
                .Execute(Op::Heartbeat({.ns = "pay", .key = "k", .fence = crashed->record->fence}))
                ->outcome);
  EXPECT_EQ(Outcome::kApplied,
            store()
                .Execute(Op::Complete(
                    {.ns = "pay", .key = "k", .fence = takeover->record->fence, .response = "won"}))
                ->outcome);
}

TEST_P(RealLeaseTest, AWaiterStartsWhenTheHolderAborts) {
  Result<OpResult> holder = store().Execute(Op::Begin({.ns = "pay", .key = "k", .lease = 1min}));
  ASSERT_OK(holder);
  auto waiter = std::async(std::launch::async, [&] {
    return store().Execute(Op::Begin({.ns = "pay", .key = "k", .wait = 20s}));
  });
  ASSERT_EQ(Outcome::kReleased,
            store()
                .Execute(Op::Abort({.ns = "pay", .key = "k", .fence = holder->record->fence}))
                ->outcome);
  ASSERT_EQ(std::future_status::ready, waiter.wait_for(15s));
  Result<OpResult> r = waiter.get();
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kStarted, r->outcome);
  EXPECT_GT(r->record->fence, holder->record->fence);
}

TEST_P(RealLeaseTest, AHeartbeatingHolderKeepsItsAttempt) {
  // Leases of 1.5 s renewed every 250 ms: a scheduling stall of over a second (a loaded CI
  // machine) would be needed to lose it, so the test checks the mechanism, not the scheduler.
  Result<OpResult> holder = store().Execute(Op::Begin({.ns = "pay", .key = "k", .lease = 1'500ms}));
  ASSERT_OK(holder);
  auto waiter = std::async(std::launch::async, [&] {
    return store().Execute(Op::Begin({.ns = "pay", .key = "k", .wait = 2s}));
  });
  for (int i = 0; i < 8; ++i) {  // heartbeats for 2 s: longer than the first lease
    std::this_thread::sleep_for(250ms);
    ASSERT_EQ(Outcome::kApplied,
              store()
                  .Execute(Op::Heartbeat(
                      {.ns = "pay", .key = "k", .fence = holder->record->fence, .lease = 1'500ms}))
                  ->outcome);
  }
  Result<OpResult> r = waiter.get();
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kInProgress, r->outcome);  // never taken over
}

INSTANTIATE_TEST_SUITE_P(Modes, RealLeaseTest, AllModes(), ModeTestName);

}  // namespace
}  // namespace idem::testing
