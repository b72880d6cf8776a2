// Waiting Locks over the network (net/src/op_waiter.h): a Lock with wait_ms is answered when the
// holder unlocks or its lease ends, or HELD when the wait runs out; it holds no server thread;
// waiters for one key acquire in the order the server received them; a stopping server answers
// them. The server runs on a ManualClock: a lease ends only when a test advances it, so an
// answer before the deadline can only come from the release the test made.
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/outcome_name.h"
#include "test_server.h"

namespace idem {
namespace {

using namespace std::chrono_literals;

// One client's waiting Lock, sent without blocking the test.
class PendingLock {
 public:
  PendingLock(Client& client, std::string owner, std::chrono::milliseconds wait)
      : owner_(std::move(owner)) {
    std::vector<Op> op = {Op::Lock({.ns = "locks", .key = "L", .owner = owner_, .wait = wait})};
    // The promise is shared: a client destroyed after this object still answers it.
    client.ApplyAsync(op, [done = done_](Status s, std::vector<Result<OpResult>> r) {
      done->set_value(s.ok() ? std::move(r[0]) : Result<OpResult>(s));
    });
    // The server reads a connection's frames in order: once a later request is answered, the
    // Lock has arrived (and taken its place in line).
    EXPECT_TRUE(client.Stats().ok());
  }
  bool Answered() { return future_.wait_for(0ms) == std::future_status::ready; }
  // Waits up to `limit` for the answer.
  Result<OpResult> Get(std::chrono::seconds limit = 10s) {
    if (future_.wait_for(limit) != std::future_status::ready) return Status::TimedOut("no answer");
    return future_.get();
  }

 private:
  std::string owner_;  // the Op borrows it until ApplyAsync returns
  std::shared_ptr<std::promise<Result<OpResult>>> done_ =
      std::make_shared<std::promise<Result<OpResult>>>();
  std::future<Result<OpResult>> future_ = done_->get_future();
};

class WaitingLockTest : public ::testing::Test {
 protected:
  void SetUp() override { Start({}); }
  void Start(ServerOptions options) {
    server_ = std::make_unique<testing::TestServer>(options);
    holder_ = Connect();
  }
  std::unique_ptr<Client> Connect() {
    auto client = server_->Connect();
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(*client) : nullptr;
  }
  // `owner` takes the lock; returns its fence.
  uint64_t Take(std::string_view owner, std::optional<std::chrono::milliseconds> lease = {}) {
    Result<OpResult> r =
        holder_->Execute(Op::Lock({.ns = "locks", .key = "L", .owner = owner, .lease = lease}));
    EXPECT_TRUE(r.ok() && r->outcome == Outcome::kAcquired) << testing::Name(r);
    return r.ok() && r->record ? r->record->fence : 0;
  }
  std::string Unlock(uint64_t fence) {
    return testing::Name(holder_->Execute(Op::Unlock({.ns = "locks", .key = "L", .fence = fence})));
  }

  std::unique_ptr<testing::TestServer> server_;
  std::unique_ptr<Client> holder_;
};

TEST_F(WaitingLockTest, AcquiresAsSoonAsTheHolderUnlocks) {
  const uint64_t fence = Take("alice");  // a 30 s lease on a clock that does not move
  auto client = Connect();
  PendingLock bob(*client, "bob", 1min);
  EXPECT_FALSE(bob.Answered());
  const auto released = std::chrono::steady_clock::now();
  ASSERT_EQ("RELEASED", Unlock(fence));
  Result<OpResult> r = bob.Get();
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kAcquired, r->outcome);
  EXPECT_EQ("bob", r->record->owner);
  EXPECT_LT(std::chrono::steady_clock::now() - released, 5s);  // woken, not by the deadline
}

TEST_F(WaitingLockTest, AcquiresWhenTheHoldersLeaseEnds) {
  Take("alice", 100ms);
  auto client = Connect();
  PendingLock bob(*client, "bob", 1min);
  EXPECT_FALSE(bob.Answered());
  server_->clock().Advance(100);  // alice's lease ends; nobody unlocks
  Result<OpResult> r = bob.Get();
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kAcquired, r->outcome);
  EXPECT_EQ("bob", r->record->owner);
}

TEST_F(WaitingLockTest, AnswersHeldWithTheHolderWhenTheWaitRunsOut) {
  Take("alice");
  auto client = Connect();
  const auto start = std::chrono::steady_clock::now();
  PendingLock bob(*client, "bob", 300ms);
  Result<OpResult> r = bob.Get();
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kHeld, r->outcome);
  EXPECT_EQ("alice", r->record->owner);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
}

// First come, first served: each release goes to the longest waiter, never to a later one.
TEST_F(WaitingLockTest, WaitersAcquireInTheOrderTheyArrived) {
  uint64_t fence = Take("alice");
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<PendingLock>> waiters;
  for (std::string owner : {"w1", "w2", "w3"}) {
    clients.push_back(Connect());
    waiters.push_back(std::make_unique<PendingLock>(*clients.back(), owner, 1min));
  }
  for (size_t turn = 0; turn < waiters.size(); ++turn) {
    ASSERT_EQ("RELEASED", Unlock(fence));
    Result<OpResult> r = waiters[turn]->Get();
    ASSERT_OK(r);
    ASSERT_EQ(Outcome::kAcquired, r->outcome) << "turn " << turn;
    EXPECT_EQ("w" + std::to_string(turn + 1), r->record->owner);
    fence = r->record->fence;
    // The later waiters are still waiting: the lock is held again.
    for (size_t later = turn + 1; later < waiters.size(); ++later) {
      EXPECT_FALSE(waiters[later]->Answered()) << "waiter " << later + 1 << " at turn " << turn;
    }
  }
}

// A waiter that arrives while others wait takes its place behind them, even when the lock is free
// at that moment: here alice's lease has ended, and the first waiter has not looked yet (it
// sleeps until the lease's end by its own timer, about a second).
TEST_F(WaitingLockTest, ALaterWaiterDoesNotJumpTheLineWhenTheLockIsFree) {
  Take("alice", 1s);
  auto c1 = Connect();
  auto c2 = Connect();
  PendingLock first(*c1, "first", 1min);
  server_->clock().Advance(1000);
  PendingLock second(*c2, "second", 1min);
  EXPECT_FALSE(second.Answered());
  Result<OpResult> r = first.Get();
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kAcquired, r->outcome);
  EXPECT_EQ("first", r->record->owner);
  EXPECT_FALSE(second.Answered());
}

// One whose wait runs out in line answers HELD, with the holder, without taking the lock from the
// waiter ahead of it.
TEST_F(WaitingLockTest, AWaiterWhoseWaitRunsOutInLineAnswersHeld) {
  const uint64_t fence = Take("alice");
  auto c1 = Connect();
  auto c2 = Connect();
  PendingLock first(*c1, "first", 1min);
  PendingLock impatient(*c2, "impatient", 200ms);
  Result<OpResult> gave_up = impatient.Get();
  ASSERT_OK(gave_up);
  EXPECT_EQ(Outcome::kHeld, gave_up->outcome);
  EXPECT_EQ("alice", gave_up->record->owner);
  ASSERT_EQ("RELEASED", Unlock(fence));
  Result<OpResult> r = first.Get();
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kAcquired, r->outcome);
  EXPECT_EQ("first", r->record->owner);
}

// Waiting holds no server thread: with one engine thread, or the event loop applying, other
// requests (on the waiter's own connection too) are answered while it waits.
class WaitingLockThreadsTest : public WaitingLockTest, public ::testing::WithParamInterface<int> {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.engine_threads = GetParam();
    Start(options);
  }
};

TEST_P(WaitingLockThreadsTest, AWaitingLockDoesNotStallOtherRequests) {
  const uint64_t fence = Take("alice");
  auto client = Connect();
  PendingLock bob(*client, "bob", 1min);
  for (int i = 0; i < 50; ++i) {
    ASSERT_OK(client->Insert({.ns = "ns", .key = "other-" + std::to_string(i), .status = "NEW"}));
  }
  EXPECT_EQ("HELD", testing::Name(
                        client->Execute(Op::Lock({.ns = "locks", .key = "L", .owner = "carol"}))));
  EXPECT_FALSE(bob.Answered());
  ASSERT_EQ("RELEASED", Unlock(fence));
  Result<OpResult> r = bob.Get();
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kAcquired, r->outcome);
}

INSTANTIATE_TEST_SUITE_P(EngineThreads, WaitingLockThreadsTest, ::testing::Values(0, 1));

TEST_F(WaitingLockTest, WaitOutsideZeroToMaxWaitIsInvalidArgument) {
  Take("alice");
  auto lock = [&](std::chrono::milliseconds wait) {
    return holder_->Execute(Op::Lock({.ns = "locks", .key = "L", .owner = "bob", .wait = wait}));
  };
  Result<OpResult> negative = lock(-1ms);
  ASSERT_TRUE(negative.status().IsInvalidArgument()) << negative.status().ToString();
  EXPECT_NE(std::string::npos, negative.status().message().find("max_wait_ms"));
  const auto max = std::chrono::milliseconds(server_->engine().options().limits.max_wait_ms);
  EXPECT_TRUE(lock(max + 1ms).status().IsInvalidArgument());
  EXPECT_EQ("HELD", testing::Name(lock(0ms)));  // zero: answer now
}

// A Lock that would wait in line is validated as it arrives, like any op: an invalid one is
// refused at once, not answered HELD when its wait runs out (nor waits past max_wait_ms).
TEST_F(WaitingLockTest, AnInvalidLockBehindAnotherWaiterIsRefusedAtOnce) {
  Take("alice");
  auto c1 = Connect();
  auto c2 = Connect();
  auto c3 = Connect();
  PendingLock first(*c1, "first", 1min);
  PendingLock no_owner(*c2, "", 200ms);
  const auto max = std::chrono::milliseconds(server_->engine().options().limits.max_wait_ms);
  PendingLock too_long(*c3, "carol", max + 1ms);
  for (PendingLock* invalid : {&no_owner, &too_long}) {
    Result<OpResult> r = invalid->Get(5s);
    EXPECT_TRUE(r.status().IsInvalidArgument()) << testing::Name(r);
  }
  EXPECT_FALSE(first.Answered());
}

// The holder retrying its Lock (its answer was lost) re-locks at once, as without a wait: it is
// not queued behind those waiting for its own lock.
TEST_F(WaitingLockTest, TheHolderAskingAgainWithAWaitReLocksAtOnce) {
  const uint64_t fence = Take("alice");
  auto c1 = Connect();
  auto c2 = Connect();
  PendingLock waiter(*c1, "carol", 1min);
  PendingLock again(*c2, "alice", 1min);
  Result<OpResult> r = again.Get(5s);
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kAcquired, r->outcome);
  EXPECT_EQ("alice", r->record->owner);
  EXPECT_EQ(fence, r->record->fence);
  EXPECT_FALSE(waiter.Answered());
  ASSERT_EQ("RELEASED", Unlock(fence));
  Result<OpResult> next = waiter.Get();
  ASSERT_OK(next);
  EXPECT_EQ(Outcome::kAcquired, next->outcome);
  EXPECT_EQ("carol", next->record->owner);
}

// Stop() does not wait out long waits: the first in line gets its last answer, and one still in
// line gets the holder its line last saw.
TEST_F(WaitingLockTest, StopAnswersEveryWaiterAtOnce) {
  Take("alice");
  auto c1 = Connect();
  auto c2 = Connect();
  PendingLock first(*c1, "first", 1min);
  PendingLock second(*c2, "second", 1min);
  const auto start = std::chrono::steady_clock::now();
  server_->server().Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  for (PendingLock* waiter : {&first, &second}) {
    Result<OpResult> r = waiter->Get();
    ASSERT_OK(r);
    EXPECT_EQ(Outcome::kHeld, r->outcome);
    EXPECT_EQ("alice", r->record->owner);
  }
}

}  // namespace
}  // namespace idem
