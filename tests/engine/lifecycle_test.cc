// Request lifecycle (Begin/Complete/Abort/Heartbeat), one-shot tokens, locks and state machines
// in the embedded engine, on a ManualClock.
#include <chrono>
#include <future>
#include <set>
#include <thread>

#include "support/engine_fixture.h"

namespace idem {
namespace {

using namespace std::chrono_literals;

using testing::EngineTest;
using testing::Name;

class LifecycleTest : public EngineTest {
 protected:
  static constexpr int64_t kLease = 30'000;
  LifecycleTest() {
    options_.lifecycle["remember"] = LifecyclePolicy{kLease, kHour, 0, /*remember_failures=*/true};
    options_.lifecycle["small"] = LifecyclePolicy{kLease, kHour, 0, false, /*max_response=*/8};
    options_.lifecycle["keep"] = LifecyclePolicy{kLease, kHour, /*completed_ttl=*/2 * kHour};
    options_.state_graphs["order"] =
        *StateGraph::Parse("WAIT_PAY>PAYING>PAID>SHIPPED>DONE,WAIT_PAY>CLOSED");
  }
  Result<OpResult> Do(const Op& op) { return engine().Execute(op); }
  uint64_t Started(std::string_view ns, std::string_view key, std::string_view fp = {}) {
    auto r = Do(Op::Begin({.ns = ns, .key = key, .fingerprint = fp}));
    EXPECT_TRUE(r.ok() && r->outcome == Outcome::kStarted) << Name(r);
    return r.ok() && r->record ? r->record->fence : 0;
  }
};

TEST_F(LifecycleTest, BeginCompleteReplay) {
  auto first =
      Do(Op::Begin({.ns = "pay", .key = "req-1", .fingerprint = "fp", .owner = "worker-a"}));
  ASSERT_OK(first);
  EXPECT_EQ(Outcome::kStarted, first->outcome);
  EXPECT_EQ(kStatusInProgress, first->record->status);
  EXPECT_EQ("worker-a", first->record->owner);
  EXPECT_EQ(clock_->NowMillis() + kLease, first->record->lease_until_ms);
  const uint64_t fence = first->record->fence;

  auto dup = Do(Op::Begin({.ns = "pay", .key = "req-1", .fingerprint = "fp"}));
  ASSERT_OK(dup);
  EXPECT_EQ(Outcome::kInProgress, dup->outcome);
  EXPECT_EQ(first->record->lease_until_ms, dup->record->lease_until_ms);

  clock_->Advance(1000);
  auto done = Do(
      Op::Complete({.ns = "pay", .key = "req-1", .fence = fence, .response = "HTTP 201 {id: 7}"}));
  ASSERT_OK(done);
  EXPECT_EQ(Outcome::kApplied, done->outcome);
  EXPECT_EQ(kStatusCompleted, done->record->status);
  EXPECT_EQ(0, done->record->lease_until_ms);

  auto replay = Do(Op::Begin({.ns = "pay", .key = "req-1", .fingerprint = "fp"}));
  ASSERT_OK(replay);
  EXPECT_EQ(Outcome::kCompleted, replay->outcome);
  EXPECT_EQ("HTTP 201 {id: 7}", replay->record->payload);
  EXPECT_EQ(clock_->NowMillis(), replay->record->updated_ms);  // when it was completed
  EXPECT_EQ(clock_->NowMillis() + options_.default_retention.default_ttl_ms,
            replay->record->expires_at_ms);
}

TEST_F(LifecycleTest, CompletedRetentionComesFromTheNamespacePolicy) {
  uint64_t fence = Started("keep", "k");
  auto done = Do(Op::Complete({.ns = "keep", .key = "k", .fence = fence, .response = "r"}));
  ASSERT_OK(done);
  EXPECT_EQ(clock_->NowMillis() + 2 * kHour, done->record->expires_at_ms);
  auto explicit_ttl = Do(Op::Complete(
      {.ns = "keep", .key = "k2", .fence = Started("keep", "k2"), .response = "r", .ttl = 5s}));
  ASSERT_OK(explicit_ttl);
  EXPECT_EQ(clock_->NowMillis() + 5000, explicit_ttl->record->expires_at_ms);
}

TEST_F(LifecycleTest, SameKeyDifferentFingerprintIsMismatchInEveryState) {
  uint64_t fence = Started("pay", "k", "hash-a");
  EXPECT_EQ("MISMATCH", Name(Do(Op::Begin({.ns = "pay", .key = "k", .fingerprint = "hash-b"}))));
  ASSERT_EQ("APPLIED",
            Name(Do(Op::Complete({.ns = "pay", .key = "k", .fence = fence, .response = "r"}))));
  auto r = Do(Op::Begin({.ns = "pay", .key = "k", .fingerprint = "hash-b"}));
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kMismatch, r->outcome);
  EXPECT_FALSE(r->fingerprint_matches);
  EXPECT_EQ("COMPLETED", Name(Do(Op::Begin({.ns = "pay", .key = "k", .fingerprint = "hash-a"}))));
  EXPECT_EQ("COMPLETED",
            Name(Do(Op::Begin({.ns = "pay", .key = "k"}))));  // no fingerprint: nothing to compare
}

TEST_F(LifecycleTest, OnlyTheFenceHolderCompletesAndARepeatIsAlready) {
  uint64_t fence = Started("pay", "k");
  EXPECT_EQ("FENCE_MISMATCH",
            Name(Do(Op::Complete({.ns = "pay", .key = "k", .fence = fence + 1, .response = "r"}))));
  EXPECT_EQ("APPLIED",
            Name(Do(Op::Complete({.ns = "pay", .key = "k", .fence = fence, .response = "r"}))));
  EXPECT_EQ("ALREADY",
            Name(Do(Op::Complete({.ns = "pay", .key = "k", .fence = fence, .response = "r"}))));
  EXPECT_EQ(
      "NOT_FOUND",
      Name(Do(Op::Complete({.ns = "pay", .key = "missing", .fence = fence, .response = "r"}))));
}

TEST_F(LifecycleTest, AbortReleasesTheKeyForTheNextBegin) {
  uint64_t fence = Started("pay", "k");
  EXPECT_EQ("FENCE_MISMATCH", Name(Do(Op::Abort({.ns = "pay", .key = "k", .fence = fence + 1}))));
  EXPECT_EQ("RELEASED", Name(Do(Op::Abort({.ns = "pay", .key = "k", .fence = fence}))));
  auto next = Do(Op::Begin({.ns = "pay", .key = "k"}));
  ASSERT_OK(next);
  EXPECT_EQ(Outcome::kStarted, next->outcome);
  EXPECT_GT(next->record->fence, fence);
}

TEST_F(LifecycleTest, RememberedFailuresAreReplayed) {
  uint64_t fence = Started("remember", "k");
  Op abort = Op::Abort({.ns = "remember", .key = "k", .fence = fence});
  abort.payload = "HTTP 422 card declined";
  auto r = Do(abort);
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kReleased, r->outcome);
  auto replay = Do(Op::Begin({.ns = "remember", .key = "k"}));
  ASSERT_OK(replay);
  EXPECT_EQ(Outcome::kCompleted, replay->outcome);
  EXPECT_EQ(kStatusFailed, replay->record->status);
  EXPECT_EQ("HTTP 422 card declined", replay->record->payload);
  EXPECT_EQ("CONDITION_FAILED",
            Name(Do(Op::Abort({.ns = "remember", .key = "k", .fence = fence}))));
}

TEST_F(LifecycleTest, ExpiredLeaseIsTakenOverAndTheStaleHolderIsRejected) {
  uint64_t old_fence = Started("pay", "k");
  clock_->Advance(kLease - 1);
  EXPECT_EQ("IN_PROGRESS", Name(Do(Op::Begin({.ns = "pay", .key = "k"}))));
  clock_->Advance(1);  // the lease ends: the worker is presumed dead
  auto takeover = Do(Op::Begin({.ns = "pay", .key = "k", .owner = "worker-b"}));
  ASSERT_OK(takeover);
  EXPECT_EQ(Outcome::kStarted, takeover->outcome);
  const uint64_t new_fence = takeover->record->fence;
  EXPECT_GT(new_fence, old_fence);
  EXPECT_EQ("worker-b", takeover->record->owner);
  // The old worker wakes up: every holder-only operation is refused.
  EXPECT_EQ(
      "FENCE_MISMATCH",
      Name(Do(Op::Complete({.ns = "pay", .key = "k", .fence = old_fence, .response = "late"}))));
  EXPECT_EQ("FENCE_MISMATCH", Name(Do(Op::Abort({.ns = "pay", .key = "k", .fence = old_fence}))));
  auto hb = Do(Op::Heartbeat({.ns = "pay", .key = "k", .fence = old_fence}));
  ASSERT_OK(hb);
  EXPECT_EQ(Outcome::kFenceMismatch, hb->outcome);
  EXPECT_EQ(new_fence, hb->record->fence);  // tells the loser who holds it now
  ASSERT_EQ(
      "APPLIED",
      Name(Do(Op::Complete({.ns = "pay", .key = "k", .fence = new_fence, .response = "winner"}))));
  EXPECT_EQ("winner", GetRecord("pay", "k").payload);
}

TEST_F(LifecycleTest, HeartbeatKeepsTheLeaseAlive) {
  uint64_t fence = Started("pay", "k");
  for (int i = 0; i < 5; ++i) {
    clock_->Advance(kLease - 1000);
    auto hb = Do(Op::Heartbeat({.ns = "pay", .key = "k", .fence = fence}));
    ASSERT_OK(hb);
    EXPECT_EQ(Outcome::kApplied, hb->outcome);
    EXPECT_EQ(clock_->NowMillis() + kLease, hb->record->lease_until_ms);
  }
  EXPECT_EQ("IN_PROGRESS", Name(Do(Op::Begin({.ns = "pay", .key = "k"}))));
}

TEST_F(LifecycleTest, AnInProgressRecordDoesNotExpireBeforeItsLease) {
  auto r = Do([] {
    Op op = Op::Begin({.ns = "pay", .key = "k", .lease = 1min});
    op.ttl = 1s;  // shorter than the lease
    return op;
  }());
  ASSERT_OK(r);
  EXPECT_GE(r->record->expires_at_ms, r->record->lease_until_ms);
  clock_->Advance(30'000);
  EXPECT_EQ("IN_PROGRESS", Name(Do(Op::Begin({.ns = "pay", .key = "k"}))));
}

TEST_F(LifecycleTest, WaitingBeginReceivesTheResponseTheMomentTheHolderCompletes) {
  uint64_t fence = Started("pay", "k");
  auto waiter = std::async(std::launch::async, [&] {
    auto t0 = std::chrono::steady_clock::now();
    auto r = Do(Op::Begin({.ns = "pay", .key = "k", .wait = 20s}));
    return std::make_pair(std::move(r), std::chrono::steady_clock::now() - t0);
  });
  // Let the waiter block (this only makes the test meaningful; correctness does not depend on it).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ("APPLIED",
            Name(Do(Op::Complete(
                {.ns = "pay", .key = "k", .fence = fence, .response = "the response"}))));
  auto [r, waited] = waiter.get();
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kCompleted, r->outcome);
  EXPECT_EQ("the response", r->record->payload);
  EXPECT_LT(waited, std::chrono::seconds(10));  // woken by the completion, not the deadline
}

TEST_F(LifecycleTest, WaitingBeginStartsWhenTheHolderAborts) {
  uint64_t fence = Started("pay", "k");
  auto waiter = std::async(std::launch::async,
                           [&] { return Do(Op::Begin({.ns = "pay", .key = "k", .wait = 20s})); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ("RELEASED", Name(Do(Op::Abort({.ns = "pay", .key = "k", .fence = fence}))));
  auto r = waiter.get();
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kStarted, r->outcome);
  EXPECT_GT(r->record->fence, fence);
}

TEST_F(LifecycleTest, WaitingBeginGivesUpAfterItsWait) {
  Started("pay", "k");
  auto t0 = std::chrono::steady_clock::now();
  auto r = Do(Op::Begin({.ns = "pay", .key = "k", .wait = 100ms}));
  auto waited = std::chrono::steady_clock::now() - t0;
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kInProgress, r->outcome);
  EXPECT_GE(waited, std::chrono::milliseconds(100));
}

TEST_F(LifecycleTest, ApplyNoWaitNeverBlocks) {
  Started("pay", "k");
  std::vector<Op> ops = {Op::Begin({.ns = "pay", .key = "k", .wait = 1min})};
  std::vector<Result<OpResult>> results;
  ASSERT_TRUE(engine().ApplyNoWait(ops, &results).ok());
  EXPECT_EQ("IN_PROGRESS", Name(results[0]));
}

TEST_F(LifecycleTest, BulkConsumerDedupInOneCallEach) {
  uint64_t f3 = Started("queue", "msg-3");
  ASSERT_EQ(
      "APPLIED",
      Name(Do(Op::Complete({.ns = "queue", .key = "msg-3", .fence = f3, .response = "done"}))));
  std::vector<std::string> ids = {"msg-1", "msg-2", "msg-3", "msg-4"};
  std::vector<Op> claims;
  for (const auto& id : ids) claims.push_back(Op::Begin({.ns = "queue", .key = id}));
  std::vector<Result<OpResult>> claimed;
  ASSERT_TRUE(engine().Apply(claims, &claimed).ok());
  EXPECT_EQ("STARTED", Name(claimed[0]));
  EXPECT_EQ("STARTED", Name(claimed[1]));
  EXPECT_EQ("COMPLETED", Name(claimed[2]));  // already processed: skip it
  EXPECT_EQ("STARTED", Name(claimed[3]));
  std::vector<Op> completes;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (claimed[i]->outcome == Outcome::kStarted) {
      completes.push_back(Op::Complete(
          {.ns = "queue", .key = ids[i], .fence = claimed[i]->record->fence, .response = "ok"}));
    }
  }
  std::vector<Result<OpResult>> completed;
  ASSERT_TRUE(engine().Apply(completes, &completed).ok());
  for (const auto& r : completed) EXPECT_EQ("APPLIED", Name(r));
}

TEST_F(LifecycleTest, TokensAreConsumedExactlyOnce) {
  auto issued = Do(Op::IssueToken({.ns = "form", .ttl = 1min}));
  ASSERT_OK(issued);
  EXPECT_EQ(Outcome::kIssued, issued->outcome);
  const std::string token = issued->token;
  EXPECT_EQ(22u, token.size());  // 128 bits, base64url
  auto other = Do(Op::IssueToken({.ns = "form", .ttl = 1min}));
  ASSERT_OK(other);
  EXPECT_NE(token, other->token);
  EXPECT_EQ("CONSUMED", Name(Do(Op::ConsumeToken({.ns = "form", .token = token}))));
  EXPECT_EQ("ALREADY_CONSUMED", Name(Do(Op::ConsumeToken({.ns = "form", .token = token}))));
  EXPECT_EQ("NOT_FOUND", Name(Do(Op::ConsumeToken({.ns = "form", .token = "never-issued"}))));
  EXPECT_EQ("NOT_FOUND", Name(Do(Op::ConsumeToken({.ns = "other-ns", .token = other->token}))));
  clock_->Advance(60'000);
  EXPECT_EQ("NOT_FOUND",
            Name(Do(Op::ConsumeToken({.ns = "form", .token = other->token}))));  // expired
}

// A token is passed on command lines (idemctl token-consume NS TOKEN), where a leading '-' reads
// as a flag. With the kernel's random bits, 10,000 tokens would include ~156 such tokens if the
// first character could be '-' (1 in 64).
TEST_F(LifecycleTest, TokensNeverStartWithADash) {
  const std::vector<Op> issues(Limits{}.max_batch_ops, Op::IssueToken({.ns = "form"}));
  std::vector<Result<OpResult>> issued;
  ASSERT_OK(engine().Apply(issues, &issued));
  std::set<std::string> distinct;
  std::vector<std::string> dashed;
  for (const Result<OpResult>& r : issued) {
    ASSERT_EQ("ISSUED", Name(r));
    ASSERT_EQ(22u, r->token.size());
    if (r->token.front() == '-') dashed.push_back(r->token);
    distinct.insert(r->token);
  }
  EXPECT_EQ(0u, dashed.size()) << "e.g. " << dashed.front();
  EXPECT_EQ(issues.size(), distinct.size());
}

TEST_F(LifecycleTest, LocksWithLeasesAndFencing) {
  auto a = Do(Op::Lock({.ns = "locks", .key = "report", .owner = "alice", .lease = 10s}));
  ASSERT_OK(a);
  EXPECT_EQ(Outcome::kAcquired, a->outcome);
  const uint64_t alice = a->record->fence;
  auto held = Do(Op::Lock({.ns = "locks", .key = "report", .owner = "bob", .lease = 10s}));
  ASSERT_OK(held);
  EXPECT_EQ(Outcome::kHeld, held->outcome);
  EXPECT_EQ("alice", held->record->owner);
  EXPECT_EQ(clock_->NowMillis() + 10'000, held->record->lease_until_ms);
  // Alice asking again (a retried request) keeps her fence.
  auto again = Do(Op::Lock({.ns = "locks", .key = "report", .owner = "alice", .lease = 10s}));
  ASSERT_OK(again);
  EXPECT_EQ(Outcome::kAcquired, again->outcome);
  EXPECT_EQ(alice, again->record->fence);
  EXPECT_EQ("APPLIED",
            Name(Do(Op::Renew({.ns = "locks", .key = "report", .fence = alice, .lease = 10s}))));
  EXPECT_EQ(
      "FENCE_MISMATCH",
      Name(Do(Op::Renew({.ns = "locks", .key = "report", .fence = alice + 1, .lease = 10s}))));
  clock_->Advance(10'000);  // Alice stalls past her lease
  auto b = Do(Op::Lock({.ns = "locks", .key = "report", .owner = "bob", .lease = 10s}));
  ASSERT_OK(b);
  EXPECT_EQ(Outcome::kAcquired, b->outcome);
  EXPECT_GT(b->record->fence, alice);  // downstream systems can reject Alice's writes
  EXPECT_EQ("FENCE_MISMATCH",
            Name(Do(Op::Unlock({.ns = "locks", .key = "report", .fence = alice}))));
  EXPECT_EQ("RELEASED",
            Name(Do(Op::Unlock({.ns = "locks", .key = "report", .fence = b->record->fence}))));
  EXPECT_EQ("NOT_FOUND",
            Name(Do(Op::Unlock({.ns = "locks", .key = "report", .fence = b->record->fence}))));
  EXPECT_EQ("ACQUIRED", Name(Do(Op::Lock({.ns = "locks", .key = "report", .owner = "carol"}))));
}

TEST_F(LifecycleTest, StateMachineTransitions) {
  ASSERT_EQ("INSERTED", Insert("order", "o1", "WAIT_PAY"));
  EXPECT_EQ("APPLIED",
            Name(Do(Op::Transition({.ns = "order", .key = "o1", .to_status = "PAYING"}))));
  EXPECT_EQ("APPLIED", Name(Do(Op::Transition({.ns = "order", .key = "o1", .to_status = "PAID"}))));
  // The payment provider calls back again: success, nothing changes.
  auto dup = Do(Op::Transition({.ns = "order", .key = "o1", .to_status = "PAID"}));
  ASSERT_OK(dup);
  EXPECT_EQ(Outcome::kAlready, dup->outcome);
  EXPECT_EQ(3u, dup->record->version);
  auto illegal = Do(Op::Transition({.ns = "order", .key = "o1", .to_status = "CLOSED"}));
  ASSERT_OK(illegal);
  EXPECT_EQ(Outcome::kIllegal, illegal->outcome);
  EXPECT_EQ("PAID", illegal->record->status);
  EXPECT_EQ("ILLEGAL",
            Name(Do(Op::Transition({.ns = "order", .key = "o1", .to_status = "NO_SUCH_STATE"}))));
  EXPECT_EQ("CONDITION_FAILED",
            Name(Do(Op::Transition(
                {.ns = "order", .key = "o1", .to_status = "SHIPPED", .expect_version = 2}))));
  EXPECT_EQ("APPLIED",
            Name(Do(Op::Transition(
                {.ns = "order", .key = "o1", .to_status = "SHIPPED", .expect_version = 3}))));
  EXPECT_EQ("NOT_FOUND",
            Name(Do(Op::Transition({.ns = "order", .key = "missing", .to_status = "PAID"}))));
}

TEST_F(LifecycleTest, NamespaceWithoutAGraphAllowsAnyTransition) {
  ASSERT_EQ("INSERTED", Insert("free", "k", "A"));
  EXPECT_EQ("APPLIED", Name(Do(Op::Transition({.ns = "free", .key = "k", .to_status = "Z"}))));
  EXPECT_EQ("ALREADY", Name(Do(Op::Transition({.ns = "free", .key = "k", .to_status = "Z"}))));
  EXPECT_EQ("APPLIED", Name(Do(Op::Transition({.ns = "free", .key = "k", .to_status = "A"}))));
}

TEST_F(LifecycleTest, BadArgumentsAreInvalidArgument) {
  Op no_fence = Op::Complete({.ns = "pay", .key = "k", .fence = 1, .response = "r"});
  no_fence.condition.fence.reset();
  EXPECT_EQ("INVALID_ARGUMENT", Name(Do(no_fence)));
  EXPECT_EQ(
      "INVALID_ARGUMENT",
      Name(Do(Op::Begin({.ns = "pay",
                         .key = "k",
                         .lease = std::chrono::milliseconds(25 * kHour)}))));  // > max lease (24h)
  EXPECT_EQ("INVALID_ARGUMENT",
            Name(Do(Op::Begin({.ns = "pay", .key = "k", .lease = std::chrono::milliseconds(-5)}))));
  EXPECT_EQ("INVALID_ARGUMENT",
            Name(Do(Op::Begin({.ns = "pay", .key = "k", .wait = std::chrono::milliseconds(-1)}))));
  EXPECT_EQ("INVALID_ARGUMENT",
            Name(Do(Op::Begin({.ns = "pay", .key = "k", .wait = 1h}))));  // > max wait
  EXPECT_EQ("INVALID_ARGUMENT", Name(Do(Op::Lock({.ns = "locks", .key = "k"}))));
  Op keyed_token = Op::IssueToken({.ns = "form"});
  keyed_token.key = "chosen";
  EXPECT_EQ("INVALID_ARGUMENT", Name(Do(keyed_token)));
  EXPECT_EQ("INVALID_ARGUMENT", Name(Do(Op::Transition({.ns = "order", .key = "o"}))));
  uint64_t fence = Started("small", "k");
  auto big = Do(Op::Complete({.ns = "small", .key = "k", .fence = fence, .response = "123456789"}));
  EXPECT_EQ("INVALID_ARGUMENT", Name(big));
  EXPECT_NE(std::string::npos, big.status().message().find("max_response_bytes"));
}

TEST(StateGraph, ParsesChains) {
  auto g = StateGraph::Parse("A>B>C,A>D");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->Allows("A", "B"));
  EXPECT_TRUE(g->Allows("B", "C"));
  EXPECT_TRUE(g->Allows("A", "D"));
  EXPECT_FALSE(g->Allows("A", "C"));
  EXPECT_FALSE(g->Allows("C", "A"));
  EXPECT_FALSE(StateGraph::Parse("").ok());
  EXPECT_FALSE(StateGraph::Parse("A>>B").ok());
  EXPECT_FALSE(StateGraph::Parse("A").ok());
}

TEST(StateGraph, StarIsAnySourceState) {
  auto g = StateGraph::Parse("draft>published,*>moderated");
  ASSERT_OK(g);
  EXPECT_TRUE(g->Allows("draft", "moderated"));
  EXPECT_TRUE(g->Allows("published", "moderated"));
  EXPECT_TRUE(g->Allows("a state the graph never names", "moderated"));
  EXPECT_FALSE(g->Allows("moderated", "published"));
  EXPECT_FALSE(g->Allows("*", "published"));  // "*" is not a state: no record has it
}

TEST(StateGraph, StarIsOnlyASource) {
  for (std::string_view spec : {"draft>*", "*>*", "a>*>b"}) {
    auto g = StateGraph::Parse(spec);
    EXPECT_EQ(Status::Code::kInvalidArgument, g.status().code()) << spec;
    EXPECT_NE(std::string::npos, g.status().message().find("'*'")) << g.status().ToString();
  }
}

TEST(StateGraph, StateNamesOutsideTheCharacterSetAreRejectedNamingTheRule) {
  for (std::string_view spec : {"A > B", "A>B,B>C ", "paid>refund!", "A>B\tC", "a>b;c", "x>é"}) {
    auto g = StateGraph::Parse(spec);
    ASSERT_EQ(Status::Code::kInvalidArgument, g.status().code()) << spec;
    EXPECT_NE(std::string::npos, g.status().message().find("[A-Za-z0-9_.:-]"))
        << g.status().ToString();
  }
  EXPECT_TRUE(StateGraph::Parse("WAIT_PAY>v1.paid>ns:done-2").ok());
}

TEST_F(LifecycleTest, StateNamesLongerThanTheStatusLimitFailOpen) {
  options_.limits.max_status_bytes = 8;
  options_.state_graphs["order"] = *StateGraph::Parse("NEW>SHIPPED_TODAY");
  auto opened = Engine::Open(dir_.Sub("too-long"), options_);
  ASSERT_EQ(Status::Code::kInvalidArgument, opened.status().code());
  EXPECT_NE(std::string::npos, opened.status().message().find("max_status_bytes"))
      << opened.status().ToString();
}

}  // namespace
}  // namespace idem
