// Request lifecycle (Begin/Complete/Abort/Heartbeat, waiting Begin), one-shot tokens, locks and
// state machines: the same cases against the Engine and against a Client over a real server
// (store_conformance.h). Over the network a waiting Begin is served without parking a server
// thread (net/src/op_waiter.h); the answers must be the same.
#include <chrono>
#include <future>

#include "store_conformance.h"

namespace idem::testing {
namespace {

using namespace std::chrono_literals;

TEST_P(StoreConformanceTest, BeginCompleteAndReplay) {
  Result<OpResult> started = store().Execute(
      Op::Begin({.ns = "pay", .key = "k", .fingerprint = "hash-a", .owner = "worker-a"}));
  ASSERT_OK(started);
  EXPECT_EQ(Outcome::kStarted, started->outcome);
  EXPECT_EQ("worker-a", started->record->owner);
  EXPECT_GT(started->record->lease_until_ms, now());
  const uint64_t fence = started->record->fence;
  EXPECT_EQ("IN_PROGRESS",
            Name(store().Execute(Op::Begin({.ns = "pay", .key = "k", .fingerprint = "hash-a"}))));
  EXPECT_EQ("FENCE_MISMATCH",
            Name(store().Execute(
                Op::Complete({.ns = "pay", .key = "k", .fence = fence + 1, .response = "x"}))));
  EXPECT_EQ("APPLIED", Name(store().Execute(Op::Complete(
                           {.ns = "pay", .key = "k", .fence = fence, .response = "HTTP 201"}))));
  Result<OpResult> replay =
      store().Execute(Op::Begin({.ns = "pay", .key = "k", .fingerprint = "hash-a"}));
  ASSERT_OK(replay);
  EXPECT_EQ(Outcome::kCompleted, replay->outcome);
  EXPECT_EQ("HTTP 201", replay->record->payload);
  EXPECT_EQ("MISMATCH",
            Name(store().Execute(Op::Begin({.ns = "pay", .key = "k", .fingerprint = "hash-b"}))));
}

// Zero is not "the default": a lease or TTL that is given must be in range, and the answer names
// the range; a lease left out is the namespace's default.
TEST_P(StoreConformanceTest, AnExplicitZeroLeaseOrTtlIsRefusedWithTheRange) {
  const std::string lease_range = "lease 0 ms is out of range: 1 ms .. ";
  for (Op op : {Op::Begin({.ns = "pay", .key = "k", .lease = 0ms}),
                Op::Lock({.ns = "locks", .key = "k", .owner = "alice", .lease = 0ms})}) {
    Result<OpResult> r = store().Execute(op);
    ASSERT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
    EXPECT_NE(std::string::npos, r.status().message().find(lease_range)) << r.status().message();
  }
  EXPECT_EQ("INVALID_ARGUMENT",
            Name(store().Execute(Op::Begin({.ns = "pay", .key = "k", .ttl = 0ms}))));
  Result<OpResult> started = store().Execute(Op::Begin({.ns = "pay", .key = "k"}));
  ASSERT_OK(started);
  EXPECT_EQ(now() + 30'000, started->record->lease_until_ms);
  const uint64_t fence = started->record->fence;
  Result<OpResult> hb =
      store().Execute(Op::Heartbeat({.ns = "pay", .key = "k", .fence = fence, .lease = 0ms}));
  ASSERT_TRUE(hb.status().IsInvalidArgument()) << hb.status().ToString();
  EXPECT_NE(std::string::npos, hb.status().message().find(lease_range)) << hb.status().message();
  Result<OpResult> done = store().Execute(
      Op::Complete({.ns = "pay", .key = "k", .fence = fence, .response = "r", .ttl = 0ms}));
  ASSERT_TRUE(done.status().IsInvalidArgument()) << done.status().ToString();
  EXPECT_NE(std::string::npos, done.status().message().find("ttl 0 ms is out of range"))
      << done.status().message();
  // A zero wait is an explicit "answer now", the same as leaving the wait out.
  EXPECT_EQ("IN_PROGRESS",
            Name(store().Execute(Op::Begin({.ns = "pay", .key = "k", .wait = 0ms}))));
  EXPECT_EQ("INVALID_ARGUMENT",
            Name(store().Execute(Op::Begin({.ns = "pay", .key = "k", .wait = -1ms}))));
}

TEST_P(StoreConformanceTest, AbortReleasesAndHeartbeatExtends) {
  Result<OpResult> first = store().Execute(Op::Begin({.ns = "pay", .key = "k"}));
  ASSERT_OK(first);
  const uint64_t fence = first->record->fence;
  clock_->Advance(1000);
  Result<OpResult> hb =
      store().Execute(Op::Heartbeat({.ns = "pay", .key = "k", .fence = fence, .lease = 1min}));
  ASSERT_OK(hb);
  EXPECT_EQ(Outcome::kApplied, hb->outcome);
  EXPECT_EQ(now() + 60'000, hb->record->lease_until_ms);
  EXPECT_EQ("RELEASED",
            Name(store().Execute(Op::Abort({.ns = "pay", .key = "k", .fence = fence}))));
  Result<OpResult> again = store().Execute(Op::Begin({.ns = "pay", .key = "k"}));
  ASSERT_OK(again);
  EXPECT_EQ(Outcome::kStarted, again->outcome);
  EXPECT_GT(again->record->fence, fence);
}

// docs/recipes.md "Rules when several outcomes apply". A retry without a fingerprint is not
// compared (it replays); a retry with one is compared even against a record stored without one
// (MISMATCH: the empty fingerprint differs from it). The same rule for Insert's EXISTS.
TEST_P(StoreConformanceTest, OnlyARetryCarryingAFingerprintIsCompared) {
  ASSERT_EQ(
      "STARTED",
      Name(store().Execute(Op::Begin({.ns = "pay", .key = "with", .fingerprint = "hash-a"}))));
  EXPECT_EQ("IN_PROGRESS", Name(store().Execute(Op::Begin({.ns = "pay", .key = "with"}))));
  ASSERT_EQ("STARTED", Name(store().Execute(Op::Begin({.ns = "pay", .key = "without"}))));
  EXPECT_EQ(
      "MISMATCH",
      Name(store().Execute(Op::Begin({.ns = "pay", .key = "without", .fingerprint = "hash-a"}))));

  ASSERT_EQ("INSERTED", Insert("plain"));
  Result<OpResult> exists =
      store().Insert({.ns = "pay", .key = "plain", .status = "PENDING", .fingerprint = "hash-a"});
  ASSERT_OK(exists);
  EXPECT_EQ(Outcome::kExists, exists->outcome);
  EXPECT_FALSE(exists->fingerprint_matches);
  ASSERT_EQ("INSERTED", Insert("printed", "PENDING", "hash-a"));
  Result<OpResult> bare = store().Insert({.ns = "pay", .key = "printed", .status = "PENDING"});
  ASSERT_OK(bare);
  EXPECT_EQ(Outcome::kExists, bare->outcome);
  EXPECT_TRUE(bare->fingerprint_matches);
}

// The first Complete wins: a second one by the holder, with another payload, answers ALREADY
// with the stored record, whose payload is the first one (the caller compares it with its own).
TEST_P(StoreConformanceTest, ASecondCompleteWithAnotherPayloadIsAlreadyAndKeepsTheFirst) {
  Result<OpResult> started = store().Execute(Op::Begin({.ns = "pay", .key = "k"}));
  ASSERT_OK(started);
  const uint64_t fence = started->record->fence;
  ASSERT_EQ("APPLIED", Name(store().Execute(Op::Complete(
                           {.ns = "pay", .key = "k", .fence = fence, .response = "first"}))));
  Result<OpResult> second = store().Execute(
      Op::Complete({.ns = "pay", .key = "k", .fence = fence, .response = "second"}));
  ASSERT_OK(second);
  EXPECT_EQ(Outcome::kAlready, second->outcome);
  EXPECT_EQ("first", second->record->payload);
  Result<OpResult> replay = store().Execute(Op::Begin({.ns = "pay", .key = "k"}));
  ASSERT_OK(replay);
  EXPECT_EQ(Outcome::kCompleted, replay->outcome);
  EXPECT_EQ("first", replay->record->payload);
}

// A lease that ran out ends nothing by itself: until another Begin takes over, the holder's
// Heartbeat (its fence still current) is APPLIED and the attempt is live again.
TEST_P(StoreConformanceTest, AHeartbeatAfterTheLeaseEndedButBeforeATakeoverRevivesTheAttempt) {
  Result<OpResult> started = store().Execute(Op::Begin({.ns = "pay", .key = "k", .lease = 10s}));
  ASSERT_OK(started);
  const uint64_t fence = started->record->fence;
  clock_->Advance(15'000);  // past the lease; nobody has asked since
  Result<OpResult> hb =
      store().Execute(Op::Heartbeat({.ns = "pay", .key = "k", .fence = fence, .lease = 10s}));
  ASSERT_OK(hb);
  EXPECT_EQ(Outcome::kApplied, hb->outcome);
  EXPECT_EQ(fence, hb->record->fence);
  EXPECT_EQ(now() + 10'000, hb->record->lease_until_ms);
  EXPECT_EQ("IN_PROGRESS", Name(store().Execute(Op::Begin({.ns = "pay", .key = "k"}))));
}

// A lock's owner names its holder: two processes that Lock with one owner name both get
// ACQUIRED with the same fence (the second is taken for a retry of the first), so they hold the
// lock together. Owner names must be unique per holder.
TEST_P(StoreConformanceTest, TwoHoldersWithOneOwnerNameShareTheLock) {
  Result<OpResult> one =
      store().Execute(Op::Lock({.ns = "locks", .key = "report", .owner = "worker", .lease = 10s}));
  ASSERT_OK(one);
  EXPECT_EQ(Outcome::kAcquired, one->outcome);
  Result<OpResult> two =
      store().Execute(Op::Lock({.ns = "locks", .key = "report", .owner = "worker", .lease = 10s}));
  ASSERT_OK(two);
  EXPECT_EQ(Outcome::kAcquired, two->outcome);
  EXPECT_EQ(one->record->fence, two->record->fence);
}

TEST_P(StoreConformanceTest, OneShotTokens) {
  Result<OpResult> issued = store().Execute(Op::IssueToken({.ns = "form"}));
  ASSERT_OK(issued);
  EXPECT_EQ(Outcome::kIssued, issued->outcome);
  ASSERT_FALSE(issued->token.empty());
  const std::string token = issued->token;
  EXPECT_EQ("CONSUMED", Name(store().Execute(Op::ConsumeToken({.ns = "form", .token = token}))));
  EXPECT_EQ("ALREADY_CONSUMED",
            Name(store().Execute(Op::ConsumeToken({.ns = "form", .token = token}))));
  EXPECT_EQ("NOT_FOUND",
            Name(store().Execute(Op::ConsumeToken({.ns = "form", .token = "never-issued"}))));
}

// What a token authorizes travels with it: issued with a payload, returned by the consume and by
// every later ALREADY_CONSUMED answer.
TEST_P(StoreConformanceTest, TokensCarryTheirPayload) {
  Result<OpResult> issued =
      store().Execute(Op::IssueToken({.ns = "form", .payload = "refund order 42"}));
  ASSERT_OK(issued);
  ASSERT_EQ(Outcome::kIssued, issued->outcome);
  EXPECT_EQ("refund order 42", issued->record->payload);
  Result<OpResult> consumed =
      store().Execute(Op::ConsumeToken({.ns = "form", .token = issued->token}));
  ASSERT_OK(consumed);
  EXPECT_EQ(Outcome::kConsumed, consumed->outcome);
  EXPECT_EQ("refund order 42", consumed->record->payload);
  Result<OpResult> again =
      store().Execute(Op::ConsumeToken({.ns = "form", .token = issued->token}));
  ASSERT_OK(again);
  EXPECT_EQ(Outcome::kAlreadyConsumed, again->outcome);
  EXPECT_EQ("refund order 42", again->record->payload);
}

TEST_P(StoreConformanceTest, TokenPayloadIsBoundedByThePayloadLimit) {
  const std::string big(Limits{}.max_payload_bytes + 1, 'x');
  EXPECT_EQ("INVALID_ARGUMENT",
            Name(store().Execute(Op::IssueToken({.ns = "form", .payload = big}))));
}

TEST_P(StoreConformanceTest, Locks) {
  Result<OpResult> alice =
      store().Execute(Op::Lock({.ns = "locks", .key = "report", .owner = "alice", .lease = 10s}));
  ASSERT_OK(alice);
  EXPECT_EQ(Outcome::kAcquired, alice->outcome);
  const uint64_t fence = alice->record->fence;
  Result<OpResult> bob =
      store().Execute(Op::Lock({.ns = "locks", .key = "report", .owner = "bob", .lease = 10s}));
  ASSERT_OK(bob);
  EXPECT_EQ(Outcome::kHeld, bob->outcome);
  EXPECT_EQ("alice", bob->record->owner);
  EXPECT_EQ("APPLIED", Name(store().Execute(Op::Renew(
                           {.ns = "locks", .key = "report", .fence = fence, .lease = 10s}))));
  EXPECT_EQ(
      "FENCE_MISMATCH",
      Name(store().Execute(Op::Unlock({.ns = "locks", .key = "report", .fence = fence + 1}))));
  EXPECT_EQ("RELEASED",
            Name(store().Execute(Op::Unlock({.ns = "locks", .key = "report", .fence = fence}))));
  EXPECT_EQ("ACQUIRED",
            Name(store().Execute(Op::Lock({.ns = "locks", .key = "report", .owner = "bob"}))));
}

TEST_P(StoreConformanceTest, StateMachineTransitions) {
  ASSERT_OK(store().Insert({.ns = "order", .key = "o1", .status = "WAIT_PAY"}));
  EXPECT_EQ(
      "APPLIED",
      Name(store().Execute(Op::Transition({.ns = "order", .key = "o1", .to_status = "PAYING"}))));
  EXPECT_EQ(
      "ALREADY",
      Name(store().Execute(Op::Transition({.ns = "order", .key = "o1", .to_status = "PAYING"}))));
  EXPECT_EQ(
      "ILLEGAL",
      Name(store().Execute(Op::Transition({.ns = "order", .key = "o1", .to_status = "CLOSED"}))));
  EXPECT_EQ("CONDITION_FAILED",
            Name(store().Execute(Op::Transition(
                {.ns = "order", .key = "o1", .to_status = "PAID", .expect_version = 1}))));
  EXPECT_EQ("APPLIED",
            Name(store().Execute(Op::Transition(
                {.ns = "order", .key = "o1", .to_status = "PAID", .expect_version = 2}))));
  EXPECT_EQ(
      "NOT_FOUND",
      Name(store().Execute(Op::Transition({.ns = "order", .key = "nope", .to_status = "PAID"}))));
}

// The "post" graph is "draft>published,*>moderated": a post can be moderated from any state.
TEST_P(StoreConformanceTest, StarInAStateGraphMeansFromAnyState) {
  ASSERT_OK(store().Insert({.ns = "post", .key = "p1", .status = "draft"}));
  ASSERT_OK(store().Insert({.ns = "post", .key = "p2", .status = "draft"}));
  EXPECT_EQ(
      "APPLIED",
      Name(store().Execute(Op::Transition({.ns = "post", .key = "p1", .to_status = "published"}))));
  EXPECT_EQ(
      "APPLIED",
      Name(store().Execute(Op::Transition({.ns = "post", .key = "p1", .to_status = "moderated"}))));
  EXPECT_EQ(
      "APPLIED",
      Name(store().Execute(Op::Transition({.ns = "post", .key = "p2", .to_status = "moderated"}))));
  EXPECT_EQ(
      "ILLEGAL",
      Name(store().Execute(Op::Transition({.ns = "post", .key = "p2", .to_status = "published"}))));
}

// The outcome does not depend on whether the Begin arrives before or after the Complete, so no
// sleep is needed; when it arrives first it waits and is woken by the Complete's commit.
TEST_P(StoreConformanceTest, WaitingBeginGetsTheResponseWhenTheHolderCompletes) {
  Result<OpResult> started = store().Execute(Op::Begin({.ns = "pay", .key = "k"}));
  ASSERT_OK(started);
  auto waiter = std::async(std::launch::async, [&] {
    return store().Execute(Op::Begin({.ns = "pay", .key = "k", .wait = 20s}));
  });
  ASSERT_EQ("APPLIED", Name(store().Execute(Op::Complete({.ns = "pay",
                                                          .key = "k",
                                                          .fence = started->record->fence,
                                                          .response = "the response"}))));
  ASSERT_EQ(std::future_status::ready, waiter.wait_for(15s));  // not the 20 s deadline
  Result<OpResult> r = waiter.get();
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kCompleted, r->outcome);
  EXPECT_EQ("the response", r->record->payload);
}

TEST_P(StoreConformanceTest, WaitingBeginGivesUpAtItsDeadline) {
  ASSERT_OK(store().Execute(Op::Begin({.ns = "pay", .key = "k"})));
  const auto start = std::chrono::steady_clock::now();
  Result<OpResult> r = store().Execute(Op::Begin({.ns = "pay", .key = "k", .wait = 200ms}));
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kInProgress, r->outcome);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
}

TEST_P(StoreConformanceTest, WaitOverTheLimitIsInvalid) {
  Op op = Op::Begin(
      {.ns = "pay", .key = "k", .wait = std::chrono::milliseconds(Limits{}.max_wait_ms + 1)});
  EXPECT_EQ("INVALID_ARGUMENT", Name(store().Execute(op)));
}

// A waiting Lock, like a waiting Begin: woken by the holder's Unlock (the ManualClock never ends
// the 30 s lease here), whichever of the two arrives first.
TEST_P(StoreConformanceTest, WaitingLockAcquiresWhenTheHolderUnlocks) {
  Result<OpResult> held = store().Execute(Op::Lock({.ns = "locks", .key = "L", .owner = "alice"}));
  ASSERT_OK(held);
  auto waiter = std::async(std::launch::async, [&] {
    return store().Execute(Op::Lock({.ns = "locks", .key = "L", .owner = "bob", .wait = 20s}));
  });
  ASSERT_EQ(
      "RELEASED",
      Name(store().Execute(Op::Unlock({.ns = "locks", .key = "L", .fence = held->record->fence}))));
  ASSERT_EQ(std::future_status::ready, waiter.wait_for(15s));  // not the 20 s deadline
  Result<OpResult> r = waiter.get();
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kAcquired, r->outcome);
  EXPECT_EQ("bob", r->record->owner);
  EXPECT_GT(r->record->fence, held->record->fence);
}

TEST_P(StoreConformanceTest, WaitingLockGivesUpAtItsDeadlineWithTheHolder) {
  ASSERT_OK(store().Execute(Op::Lock({.ns = "locks", .key = "L", .owner = "alice"})));
  const auto start = std::chrono::steady_clock::now();
  Result<OpResult> r =
      store().Execute(Op::Lock({.ns = "locks", .key = "L", .owner = "bob", .wait = 200ms}));
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kHeld, r->outcome);
  EXPECT_EQ("alice", r->record->owner);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
}

TEST_P(StoreConformanceTest, LockWaitOutsideItsRangeIsInvalidAndZeroAnswersNow) {
  ASSERT_OK(store().Execute(Op::Lock({.ns = "locks", .key = "L", .owner = "alice"})));
  auto lock = [&](std::chrono::milliseconds wait) {
    return Name(
        store().Execute(Op::Lock({.ns = "locks", .key = "L", .owner = "bob", .wait = wait})));
  };
  EXPECT_EQ("HELD", lock(0ms));
  EXPECT_EQ("INVALID_ARGUMENT", lock(-1ms));
  EXPECT_EQ("INVALID_ARGUMENT", lock(std::chrono::milliseconds(Limits{}.max_wait_ms + 1)));
}

}  // namespace
}  // namespace idem::testing
