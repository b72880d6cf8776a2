// The lifecycle, token and lock guarantees under contention: 16 concurrent callers.
#include <atomic>
#include <chrono>

#include "support/concurrency.h"
#include "support/engine_fixture.h"
#include "support/lock_contention.h"

namespace idem {
namespace {

using namespace std::chrono_literals;

using testing::ContendForOneLock;
using testing::EngineTest;
using testing::LockContention;

constexpr int kCallers = 16;

class LifecycleRaceTest : public EngineTest {
 protected:
  LifecycleRaceTest() { options_.durability = Durability::kAsync; }
  template <typename Fn>
  void RunCallers(Fn fn) {
    testing::RunConcurrently(kCallers, fn);
  }
};

TEST_F(LifecycleRaceTest, OneStartedPerKey) {
  constexpr int kKeys = 50;
  std::vector<std::atomic<int>> started(kKeys);
  RunCallers([&](int t) {
    for (int k = 0; k < kKeys; ++k) {
      int i = (k + t * 3) % kKeys;
      auto r = engine().Execute(Op::Begin({.ns = "pay", .key = "k" + std::to_string(i)}));
      ASSERT_TRUE(r.ok());
      if (r->outcome == Outcome::kStarted)
        started[i]++;
      else
        EXPECT_EQ(Outcome::kInProgress, r->outcome);
    }
  });
  for (int i = 0; i < kKeys; ++i) EXPECT_EQ(1, started[i].load()) << i;
}

TEST_F(LifecycleRaceTest, OneTakeoverWhenALeaseRunsOut) {
  constexpr int kKeys = 50;
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_EQ(Outcome::kStarted,
              engine()
                  .Execute(Op::Begin({.ns = "pay", .key = "k" + std::to_string(i), .lease = 1s}))
                  ->outcome);
  }
  clock_->Advance(1000);
  std::vector<std::atomic<int>> started(kKeys);
  RunCallers([&](int t) {
    for (int k = 0; k < kKeys; ++k) {
      int i = (k * 7 + t) % kKeys;
      auto r =
          engine().Execute(Op::Begin({.ns = "pay", .key = "k" + std::to_string(i), .lease = 1min}));
      ASSERT_TRUE(r.ok());
      if (r->outcome == Outcome::kStarted) started[i]++;
    }
  });
  for (int i = 0; i < kKeys; ++i) EXPECT_EQ(1, started[i].load()) << i;
}

TEST_F(LifecycleRaceTest, ExactlyOneSuccessfulTokenConsume) {
  constexpr int kTokens = 50;
  std::vector<std::string> tokens;
  for (int i = 0; i < kTokens; ++i)
    tokens.push_back(engine().Execute(Op::IssueToken({.ns = "form"}))->token);
  std::vector<std::atomic<int>> consumed(kTokens);
  RunCallers([&](int t) {
    for (int k = 0; k < kTokens; ++k) {
      int i = (k + t) % kTokens;
      auto r = engine().Execute(Op::ConsumeToken({.ns = "form", .token = tokens[i]}));
      ASSERT_TRUE(r.ok());
      if (r->outcome == Outcome::kConsumed)
        consumed[i]++;
      else
        EXPECT_EQ(Outcome::kAlreadyConsumed, r->outcome);
    }
  });
  for (int i = 0; i < kTokens; ++i) EXPECT_EQ(1, consumed[i].load()) << i;
}

TEST_F(LifecycleRaceTest, AtMostOneLockHolderAtAnyMoment) {
  LockContention contention = ContendForOneLock(engine(), kCallers, /*holds_per_caller=*/5);
  EXPECT_EQ(1, contention.max_holders);
  EXPECT_EQ(5 * kCallers, contention.acquisitions);  // the lock really changed hands
}

}  // namespace
}  // namespace idem
