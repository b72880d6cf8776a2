// Record kinds: a record belongs to the scheme whose operation created it (plain records, request
// attempts, tokens, locks, state machines), and another scheme's operation is answered
// WRONG_KIND with the record as it is, instead of changing it behind the owner's back. In a
// namespace with a state graph, every status change (CompareAndSet too) follows the graph. The
// same cases against the Engine and against a Client over a real server (store_conformance.h).
#include "store_conformance.h"

namespace idem::testing {
namespace {

class RecordKindsTest : public StoreConformanceTest {
 protected:
  std::string Do(const Op& op) { return Name(store().Execute(op)); }
  uint64_t Began(std::string_view key) {
    Result<OpResult> r = store().Execute(Op::Begin("pay", key));
    EXPECT_TRUE(r.ok() && r->outcome == Outcome::kStarted) << Name(r);
    return r.ok() && r->record ? r->record->fence : 0;
  }
  std::string StatusOf(std::string_view ns, std::string_view key) {
    Result<OpResult> r = store().Get(ns, key);
    return r.ok() && r->record ? r->record->status : Name(r);
  }
};

// The trap: a Transition completed somebody else's attempt without its fence, and the next Begin
// replayed that as the request's response.
TEST_P(RecordKindsTest, TransitionCannotCompleteAnAttempt) {
  Began("k");
  EXPECT_EQ("WRONG_KIND", Do(Op::Transition("pay", "k", "COMPLETED")));
  EXPECT_EQ("IN_PROGRESS", Do(Op::Begin("pay", "k")));
}

TEST_P(RecordKindsTest, ConsumingAnAttemptAsATokenIsWrongKind) {
  Began("k");
  EXPECT_EQ("WRONG_KIND", Do(Op::ConsumeToken("pay", "k")));
  EXPECT_EQ("IN_PROGRESS", StatusOf("pay", "k"));
}

TEST_P(RecordKindsTest, CompareAndSetCannotChangeAnAttemptATokenOrALock) {
  Began("attempt");
  EXPECT_EQ("WRONG_KIND",
            Name(store().CompareAndSet("pay", "attempt", {}, Update{.status = "COMPLETED"})));
  EXPECT_EQ("IN_PROGRESS", Do(Op::Begin("pay", "attempt")));

  Result<OpResult> issued = store().Execute(Op::IssueToken("form"));
  ASSERT_OK(issued);
  ASSERT_EQ("CONSUMED", Do(Op::ConsumeToken("form", issued->token)));
  // Setting a consumed token back to ISSUED would make it usable twice.
  EXPECT_EQ("WRONG_KIND",
            Name(store().CompareAndSet("form", issued->token, {}, Update{.status = "ISSUED"})));
  EXPECT_EQ("ALREADY_CONSUMED", Do(Op::ConsumeToken("form", issued->token)));

  ASSERT_EQ("ACQUIRED", Do(Op::Lock("locks", "report", "alice")));
  EXPECT_EQ("WRONG_KIND",
            Name(store().CompareAndSet("locks", "report", {}, Update{.payload = "mine now"})));
}

TEST_P(RecordKindsTest, LockOperationsDoNotApplyToAnAttempt) {
  const uint64_t fence = Began("k");
  EXPECT_EQ("WRONG_KIND", Do(Op::Unlock("pay", "k", fence)));  // was an Abort in disguise
  EXPECT_EQ("WRONG_KIND", Do(Op::Renew("pay", "k", fence)));
  EXPECT_EQ("WRONG_KIND", Do(Op::Lock("pay", "k", "worker")));
  EXPECT_EQ("IN_PROGRESS", Do(Op::Begin("pay", "k")));
}

TEST_P(RecordKindsTest, AttemptOperationsDoNotApplyToALockOrAPlainRecord) {
  Result<OpResult> lock = store().Execute(Op::Lock("locks", "report", "alice"));
  ASSERT_OK(lock);
  const uint64_t fence = lock->record->fence;
  EXPECT_EQ("WRONG_KIND", Do(Op::Complete("locks", "report", fence, "done")));
  EXPECT_EQ("WRONG_KIND", Do(Op::Heartbeat("locks", "report", fence)));
  EXPECT_EQ("WRONG_KIND", Do(Op::Abort("locks", "report", fence)));
  EXPECT_EQ("WRONG_KIND", Do(Op::Begin("locks", "report")));
  EXPECT_EQ("LOCKED", StatusOf("locks", "report"));
  // A plain record is not a finished attempt: Begin does not replay it as a response.
  ASSERT_EQ("INSERTED", Insert("plain"));
  EXPECT_EQ("WRONG_KIND", Do(Op::Begin("pay", "plain")));
}

TEST_P(RecordKindsTest, InsertOnAnotherSchemesKeyIsWrongKindNotExists) {
  Began("k");
  EXPECT_EQ("WRONG_KIND", Insert("k"));
  ASSERT_EQ("INSERTED", Insert("plain"));
  EXPECT_EQ("EXISTS", Insert("plain"));
}

TEST_P(RecordKindsTest, WrongKindReturnsTheRecordAsItIs) {
  const uint64_t fence = Began("k");
  Result<OpResult> r = store().Execute(Op::Transition("pay", "k", "COMPLETED"));
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kWrongKind, r->outcome);
  ASSERT_TRUE(r->record);
  EXPECT_EQ(RecordKind::kAttempt, r->record->kind);
  EXPECT_EQ("IN_PROGRESS", r->record->status);
  EXPECT_EQ(fence, r->record->fence);
  EXPECT_EQ(1u, r->record->version);
}

// The kind is decided before anything the op carries is looked at: a wrong fence on a lock is
// still WRONG_KIND for Complete, and a Transition to the status a token already has is not
// ALREADY.
TEST_P(RecordKindsTest, WrongKindWinsOverEveryOtherRefusal) {
  ASSERT_EQ("ACQUIRED", Do(Op::Lock("locks", "report", "alice")));
  EXPECT_EQ("WRONG_KIND", Do(Op::Complete("locks", "report", 999'999, "done")));
  EXPECT_EQ("WRONG_KIND", Do(Op::Transition("locks", "report", "LOCKED")));
  EXPECT_EQ("WRONG_KIND", Name(store().CompareAndSet("locks", "report", {.version = 42}, {})));
}

TEST_P(RecordKindsTest, EveryRecordCarriesItsKind) {
  auto kind = [](const Result<OpResult>& r) {
    return r.ok() && r->record ? RecordKindName(r->record->kind) : "?";
  };
  EXPECT_EQ("plain", kind(store().Insert("pay", "plain", "NEW")));
  EXPECT_EQ("state-machine", kind(store().Insert("order", "o1", "WAIT_PAY")));
  EXPECT_EQ("attempt", kind(store().Execute(Op::Begin("pay", "attempt"))));
  EXPECT_EQ("token", kind(store().Execute(Op::IssueToken("form"))));
  EXPECT_EQ("lock", kind(store().Execute(Op::Lock("locks", "report", "alice"))));
  // Changes keep the kind.
  EXPECT_EQ("state-machine", kind(store().Execute(Op::Transition("order", "o1", "PAYING"))));
  EXPECT_EQ("plain", kind(store().CompareAndSet("pay", "plain", {}, Update{.status = "DONE"})));
  EXPECT_EQ("attempt", kind(store().Get("pay", "attempt")));
}

TEST_P(RecordKindsTest, CompareAndSetFollowsTheNamespacesStateGraph) {
  ASSERT_OK(store().Insert("order", "o1", "WAIT_PAY"));  // WAIT_PAY>PAYING>PAID,WAIT_PAY>CLOSED
  Result<OpResult> skip = store().CompareAndSet("order", "o1", {}, Update{.status = "PAID"});
  ASSERT_OK(skip);
  EXPECT_EQ(Outcome::kIllegal, skip->outcome);
  EXPECT_EQ("WAIT_PAY", skip->record->status);
  EXPECT_EQ("APPLIED",
            Name(store().CompareAndSet("order", "o1", {}, Update{.status = "PAYING"})));
  // Not a status change: the graph has nothing to say.
  EXPECT_EQ("APPLIED", Name(store().CompareAndSet("order", "o1", {}, Update{.payload = "p"})));
  EXPECT_EQ("APPLIED",
            Name(store().CompareAndSet("order", "o1", {}, Update{.status = "PAYING"})));
  // The condition is judged first: a stale caller learns that, not what its move would do.
  EXPECT_EQ("CONDITION_FAILED", Name(store().CompareAndSet("order", "o1", {.version = 1},
                                                           Update{.status = "WAIT_PAY"})));
  EXPECT_EQ("ILLEGAL", Name(store().CompareAndSet("order", "o1", {.version = 4},
                                                  Update{.status = "WAIT_PAY"})));
  EXPECT_EQ("PAYING", StatusOf("order", "o1"));
}

// Get and Delete are universal. Delete is the administrative override: it removes a record of
// any kind, an attempt in progress included (best with the fence in its condition, so that it
// removes only the attempt the operator looked at). The holder's fence dies with the record: its
// Complete finds nothing, and after a new Begin it is told FENCE_MISMATCH.
TEST_P(RecordKindsTest, DeleteRemovesAnyKindAndTheOldHoldersFenceStaysDead) {
  const uint64_t fence = Began("k");
  EXPECT_EQ("FOUND", Get("k"));
  EXPECT_EQ("CONDITION_FAILED", Name(store().Delete("pay", "k", {.fence = fence + 1})));
  EXPECT_EQ("DELETED", Name(store().Delete("pay", "k", {.fence = fence})));
  EXPECT_EQ("NOT_FOUND", Do(Op::Complete("pay", "k", fence, "late")));
  const uint64_t next = Began("k");
  EXPECT_GT(next, fence);
  EXPECT_EQ("FENCE_MISMATCH", Do(Op::Complete("pay", "k", fence, "late")));
  EXPECT_EQ("DELETED", Name(store().Delete("pay", "k")));  // unconditional: also allowed

  Result<OpResult> token = store().Execute(Op::IssueToken("form"));
  ASSERT_OK(token);
  EXPECT_EQ("DELETED", Name(store().Delete("form", token->token)));
  ASSERT_EQ("ACQUIRED", Do(Op::Lock("locks", "report", "alice")));
  EXPECT_EQ("DELETED", Name(store().Delete("locks", "report")));
}

INSTANTIATE_TEST_SUITE_P(Modes, RecordKindsTest, AllModes(), ModeTestName);

}  // namespace
}  // namespace idem::testing
