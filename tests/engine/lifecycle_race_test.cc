// The lifecycle, token and lock guarantees under contention: 16 concurrent callers.
#include <atomic>

#include "support/concurrency.h"
#include "support/engine_fixture.h"

namespace idem {
namespace {

using testing::EngineTest;

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
      auto r = engine().Execute(Op::Begin("pay", "k" + std::to_string(i)));
      ASSERT_TRUE(r.ok());
      if (r->outcome == Outcome::kStarted) started[i]++;
      else EXPECT_EQ(Outcome::kInProgress, r->outcome);
    }
  });
  for (int i = 0; i < kKeys; ++i) EXPECT_EQ(1, started[i].load()) << i;
}

TEST_F(LifecycleRaceTest, OneTakeoverWhenALeaseRunsOut) {
  constexpr int kKeys = 50;
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_EQ(Outcome::kStarted, engine().Execute(Op::Begin("pay", "k" + std::to_string(i), "", 1000))->outcome);
  }
  clock_->Advance(1000);
  std::vector<std::atomic<int>> started(kKeys);
  RunCallers([&](int t) {
    for (int k = 0; k < kKeys; ++k) {
      int i = (k * 7 + t) % kKeys;
      auto r = engine().Execute(Op::Begin("pay", "k" + std::to_string(i), "", 60'000));
      ASSERT_TRUE(r.ok());
      if (r->outcome == Outcome::kStarted) started[i]++;
    }
  });
  for (int i = 0; i < kKeys; ++i) EXPECT_EQ(1, started[i].load()) << i;
}

TEST_F(LifecycleRaceTest, ExactlyOneSuccessfulTokenConsume) {
  constexpr int kTokens = 50;
  std::vector<std::string> tokens;
  for (int i = 0; i < kTokens; ++i) tokens.push_back(engine().Execute(Op::IssueToken("form"))->token);
  std::vector<std::atomic<int>> consumed(kTokens);
  RunCallers([&](int t) {
    for (int k = 0; k < kTokens; ++k) {
      int i = (k + t) % kTokens;
      auto r = engine().Execute(Op::ConsumeToken("form", tokens[i]));
      ASSERT_TRUE(r.ok());
      if (r->outcome == Outcome::kConsumed) consumed[i]++;
      else EXPECT_EQ(Outcome::kAlreadyConsumed, r->outcome);
    }
  });
  for (int i = 0; i < kTokens; ++i) EXPECT_EQ(1, consumed[i].load()) << i;
}

TEST_F(LifecycleRaceTest, AtMostOneLockHolderAtAnyMoment) {
  std::atomic<int> holders{0};
  std::atomic<int> max_holders{0};
  std::atomic<int> acquisitions{0};
  RunCallers([&](int t) {
    const std::string owner = "worker-" + std::to_string(t);
    for (int n = 0; n < 200; ++n) {
      auto r = engine().Execute(Op::Lock("locks", "the-lock", owner));
      ASSERT_TRUE(r.ok());
      if (r->outcome != Outcome::kAcquired) {
        EXPECT_EQ(Outcome::kHeld, r->outcome);
        continue;
      }
      int now = ++holders;
      int seen = max_holders.load();
      while (now > seen && !max_holders.compare_exchange_weak(seen, now)) {
      }
      acquisitions++;
      --holders;  // leave the critical section before releasing the lock
      ASSERT_EQ(Outcome::kReleased,
                engine().Execute(Op::Unlock("locks", "the-lock", r->record->fence))->outcome);
    }
  });
  EXPECT_EQ(1, max_holders.load());
  EXPECT_GT(acquisitions.load(), kCallers);  // the lock really changed hands
}

}  // namespace
}  // namespace idem
