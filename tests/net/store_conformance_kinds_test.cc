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
    Result<OpResult> r = store().Execute(Op::Begin({.ns = "pay", .key = key}));
    EXPECT_TRUE(r.ok() && r->outcome == Outcome::kStarted) << Name(r);
    return r.ok() && r->record ? r->record->fence : 0;
  }
  std::string StatusOf(std::string_view ns, std::string_view key) {
    Result<OpResult> r = store().Get({.ns = ns, .key = key});
    return r.ok() && r->record ? r->record->status : Name(r);
  }
};

// The trap: a Transition completed somebody else's attempt without its fence, and the next Begin
// replayed that as the request's response.
TEST_P(RecordKindsTest, TransitionCannotCompleteAnAttempt) {
  Began("k");
  EXPECT_EQ("WRONG_KIND", Do(Op::Transition({.ns = "pay", .key = "k", .to_status = "COMPLETED"})));
  EXPECT_EQ("IN_PROGRESS", Do(Op::Begin({.ns = "pay", .key = "k"})));
}

TEST_P(RecordKindsTest, ConsumingAnAttemptAsATokenIsWrongKind) {
  Began("k");
  EXPECT_EQ("WRONG_KIND", Do(Op::ConsumeToken({.ns = "pay", .token = "k"})));
  EXPECT_EQ("IN_PROGRESS", StatusOf("pay", "k"));
}

TEST_P(RecordKindsTest, CompareAndSetCannotChangeAnAttemptATokenOrALock) {
  Began("attempt");
  EXPECT_EQ("WRONG_KIND", Name(store().CompareAndSet(
                              {.ns = "pay", .key = "attempt", .update = {.status = "COMPLETED"}})));
  EXPECT_EQ("IN_PROGRESS", Do(Op::Begin({.ns = "pay", .key = "attempt"})));

  Result<OpResult> issued = store().Execute(Op::IssueToken({.ns = "form"}));
  ASSERT_OK(issued);
  ASSERT_EQ("CONSUMED", Do(Op::ConsumeToken({.ns = "form", .token = issued->token})));
  // Setting a consumed token back to ISSUED would make it usable twice.
  EXPECT_EQ("WRONG_KIND",
            Name(store().CompareAndSet(
                {.ns = "form", .key = issued->token, .update = {.status = "ISSUED"}})));
  EXPECT_EQ("ALREADY_CONSUMED", Do(Op::ConsumeToken({.ns = "form", .token = issued->token})));

  ASSERT_EQ("ACQUIRED", Do(Op::Lock({.ns = "locks", .key = "report", .owner = "alice"})));
  EXPECT_EQ("WRONG_KIND",
            Name(store().CompareAndSet(
                {.ns = "locks", .key = "report", .update = {.payload = "mine now"}})));
}

TEST_P(RecordKindsTest, LockOperationsDoNotApplyToAnAttempt) {
  const uint64_t fence = Began("k");
  EXPECT_EQ("WRONG_KIND",
            Do(Op::Unlock({.ns = "pay", .key = "k", .fence = fence})));  // was an Abort in disguise
  EXPECT_EQ("WRONG_KIND", Do(Op::Renew({.ns = "pay", .key = "k", .fence = fence})));
  EXPECT_EQ("WRONG_KIND", Do(Op::Lock({.ns = "pay", .key = "k", .owner = "worker"})));
  EXPECT_EQ("IN_PROGRESS", Do(Op::Begin({.ns = "pay", .key = "k"})));
}

TEST_P(RecordKindsTest, AttemptOperationsDoNotApplyToALockOrAPlainRecord) {
  Result<OpResult> lock =
      store().Execute(Op::Lock({.ns = "locks", .key = "report", .owner = "alice"}));
  ASSERT_OK(lock);
  const uint64_t fence = lock->record->fence;
  EXPECT_EQ("WRONG_KIND",
            Do(Op::Complete({.ns = "locks", .key = "report", .fence = fence, .response = "done"})));
  EXPECT_EQ("WRONG_KIND", Do(Op::Heartbeat({.ns = "locks", .key = "report", .fence = fence})));
  EXPECT_EQ("WRONG_KIND", Do(Op::Abort({.ns = "locks", .key = "report", .fence = fence})));
  EXPECT_EQ("WRONG_KIND", Do(Op::Begin({.ns = "locks", .key = "report"})));
  EXPECT_EQ("LOCKED", StatusOf("locks", "report"));
  // A plain record is not a finished attempt: Begin does not replay it as a response.
  ASSERT_EQ("INSERTED", Insert("plain"));
  EXPECT_EQ("WRONG_KIND", Do(Op::Begin({.ns = "pay", .key = "plain"})));
}

TEST_P(RecordKindsTest, InsertOnAnotherSchemesKeyIsWrongKindNotExists) {
  Began("k");
  EXPECT_EQ("WRONG_KIND", Insert("k"));
  ASSERT_EQ("INSERTED", Insert("plain"));
  EXPECT_EQ("EXISTS", Insert("plain"));
}

TEST_P(RecordKindsTest, WrongKindReturnsTheRecordAsItIs) {
  const uint64_t fence = Began("k");
  Result<OpResult> r =
      store().Execute(Op::Transition({.ns = "pay", .key = "k", .to_status = "COMPLETED"}));
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
  ASSERT_EQ("ACQUIRED", Do(Op::Lock({.ns = "locks", .key = "report", .owner = "alice"})));
  EXPECT_EQ(
      "WRONG_KIND",
      Do(Op::Complete({.ns = "locks", .key = "report", .fence = 999'999, .response = "done"})));
  EXPECT_EQ("WRONG_KIND",
            Do(Op::Transition({.ns = "locks", .key = "report", .to_status = "LOCKED"})));
  EXPECT_EQ(
      "WRONG_KIND",
      Name(store().CompareAndSet({.ns = "locks", .key = "report", .condition = {.version = 42}})));
}

TEST_P(RecordKindsTest, EveryRecordCarriesItsKind) {
  auto kind = [](const Result<OpResult>& r) {
    return r.ok() && r->record ? RecordKindName(r->record->kind) : "?";
  };
  EXPECT_EQ("plain", kind(store().Insert({.ns = "pay", .key = "plain", .status = "NEW"})));
  EXPECT_EQ("state-machine",
            kind(store().Insert({.ns = "order", .key = "o1", .status = "WAIT_PAY"})));
  EXPECT_EQ("attempt", kind(store().Execute(Op::Begin({.ns = "pay", .key = "attempt"}))));
  EXPECT_EQ("token", kind(store().Execute(Op::IssueToken({.ns = "form"}))));
  EXPECT_EQ("lock",
            kind(store().Execute(Op::Lock({.ns = "locks", .key = "report", .owner = "alice"}))));
  // Changes keep the kind.
  EXPECT_EQ(
      "state-machine",
      kind(store().Execute(Op::Transition({.ns = "order", .key = "o1", .to_status = "PAYING"}))));
  EXPECT_EQ(
      "plain",
      kind(store().CompareAndSet({.ns = "pay", .key = "plain", .update = {.status = "DONE"}})));
  EXPECT_EQ("attempt", kind(store().Get({.ns = "pay", .key = "attempt"})));
}

TEST_P(RecordKindsTest, CompareAndSetFollowsTheNamespacesStateGraph) {
  ASSERT_OK(store().Insert(
      {.ns = "order", .key = "o1", .status = "WAIT_PAY"}));  // WAIT_PAY>PAYING>PAID,WAIT_PAY>CLOSED
  Result<OpResult> skip =
      store().CompareAndSet({.ns = "order", .key = "o1", .update = {.status = "PAID"}});
  ASSERT_OK(skip);
  EXPECT_EQ(Outcome::kIllegal, skip->outcome);
  EXPECT_EQ("WAIT_PAY", skip->record->status);
  EXPECT_EQ(
      "APPLIED",
      Name(store().CompareAndSet({.ns = "order", .key = "o1", .update = {.status = "PAYING"}})));
  // Not a status change: the graph has nothing to say.
  EXPECT_EQ("APPLIED",
            Name(store().CompareAndSet({.ns = "order", .key = "o1", .update = {.payload = "p"}})));
  EXPECT_EQ(
      "APPLIED",
      Name(store().CompareAndSet({.ns = "order", .key = "o1", .update = {.status = "PAYING"}})));
  // The condition is judged first: a stale caller learns that, not what its move would do.
  EXPECT_EQ("CONDITION_FAILED", Name(store().CompareAndSet({.ns = "order",
                                                            .key = "o1",
                                                            .condition = {.version = 1},
                                                            .update = {.status = "WAIT_PAY"}})));
  EXPECT_EQ("ILLEGAL", Name(store().CompareAndSet({.ns = "order",
                                                   .key = "o1",
                                                   .condition = {.version = 4},
                                                   .update = {.status = "WAIT_PAY"}})));
  EXPECT_EQ("PAYING", StatusOf("order", "o1"));
}

// Get and Delete are universal. Delete is the administrative override: it removes a record of
// any kind, an attempt in progress included (best with the fence in its condition, so that it
// removes only the attempt the operator looked at). The holder's fence dies with the record: its
// Complete finds nothing, and after a new Begin it is told FENCE_MISMATCH.
TEST_P(RecordKindsTest, DeleteRemovesAnyKindAndTheOldHoldersFenceStaysDead) {
  const uint64_t fence = Began("k");
  EXPECT_EQ("FOUND", Get("k"));
  EXPECT_EQ("CONDITION_FAILED",
            Name(store().Delete({.ns = "pay", .key = "k", .condition = {.fence = fence + 1}})));
  EXPECT_EQ("DELETED",
            Name(store().Delete({.ns = "pay", .key = "k", .condition = {.fence = fence}})));
  EXPECT_EQ("NOT_FOUND",
            Do(Op::Complete({.ns = "pay", .key = "k", .fence = fence, .response = "late"})));
  const uint64_t next = Began("k");
  EXPECT_GT(next, fence);
  EXPECT_EQ("FENCE_MISMATCH",
            Do(Op::Complete({.ns = "pay", .key = "k", .fence = fence, .response = "late"})));
  EXPECT_EQ("DELETED",
            Name(store().Delete({.ns = "pay", .key = "k"})));  // unconditional: also allowed

  Result<OpResult> token = store().Execute(Op::IssueToken({.ns = "form"}));
  ASSERT_OK(token);
  EXPECT_EQ("DELETED", Name(store().Delete({.ns = "form", .key = token->token})));
  ASSERT_EQ("ACQUIRED", Do(Op::Lock({.ns = "locks", .key = "report", .owner = "alice"})));
  EXPECT_EQ("DELETED", Name(store().Delete({.ns = "locks", .key = "report"})));
}

// A state machine starts in a state its graph names (a source other than '*', or a target): a
// record inserted in any other status could never move, and would slip past the graph.
TEST_P(RecordKindsTest, InsertStartsAStateMachineInAStateOfItsGraph) {
  // order: WAIT_PAY>PAYING>PAID,WAIT_PAY>CLOSED; post: draft>published,*>moderated
  Result<OpResult> unknown = store().Insert({.ns = "order", .key = "o1", .status = "SHIPPED"});
  ASSERT_OK(unknown);
  EXPECT_EQ(Outcome::kIllegal, unknown->outcome);
  EXPECT_FALSE(unknown->record.has_value());
  EXPECT_EQ("NOT_FOUND", Get("o1", "order"));
  EXPECT_EQ("ILLEGAL", Name(store().Insert({.ns = "post", .key = "p1", .status = "*"})));
  EXPECT_EQ("INSERTED", Name(store().Insert({.ns = "order", .key = "o1", .status = "WAIT_PAY"})));
  EXPECT_EQ("INSERTED", Name(store().Insert({.ns = "order", .key = "o2", .status = "PAID"})));
  EXPECT_EQ("INSERTED", Name(store().Insert({.ns = "post", .key = "p1", .status = "moderated"})));
  // A retry finds the record first: EXISTS wins, whatever status it names.
  EXPECT_EQ("EXISTS", Name(store().Insert({.ns = "order", .key = "o1", .status = "SHIPPED"})));
  // Namespaces without a graph take any status.
  EXPECT_EQ("INSERTED", Name(store().Insert({.ns = "pay", .key = "k", .status = "SHIPPED"})));
}

// Delete removing another scheme's record is an administrative override, counted in the stats;
// deleting a plain record, or a Delete that removes nothing, is not.
TEST_P(RecordKindsTest, DeletesOfAnotherSchemesRecordAreCountedAsOverrides) {
  Result<StoreStats> before = store().Stats();
  ASSERT_OK(before);
  ASSERT_OK(store().Insert({.ns = "pay", .key = "plain", .status = "NEW"}));
  EXPECT_EQ("DELETED", Name(store().Delete({.ns = "pay", .key = "plain"})));
  EXPECT_EQ("NOT_FOUND", Name(store().Delete({.ns = "pay", .key = "plain"})));
  const uint64_t fence = Began("attempt");
  EXPECT_EQ(
      "CONDITION_FAILED",
      Name(store().Delete({.ns = "pay", .key = "attempt", .condition = {.fence = fence + 1}})));
  Result<StoreStats> after_plain = store().Stats();
  ASSERT_OK(after_plain);
  EXPECT_EQ(before->admin_overrides, after_plain->admin_overrides);

  EXPECT_EQ("DELETED", Name(store().Delete({.ns = "pay", .key = "attempt"})));
  Result<OpResult> token = store().Execute(Op::IssueToken({.ns = "form"}));
  ASSERT_OK(token);
  EXPECT_EQ("DELETED", Name(store().Delete({.ns = "form", .key = token->token})));
  ASSERT_EQ("ACQUIRED", Do(Op::Lock({.ns = "locks", .key = "report", .owner = "alice"})));
  EXPECT_EQ("DELETED", Name(store().Delete({.ns = "locks", .key = "report"})));
  ASSERT_OK(store().Insert({.ns = "order", .key = "o1", .status = "WAIT_PAY"}));
  EXPECT_EQ("DELETED", Name(store().Delete({.ns = "order", .key = "o1"})));
  Result<StoreStats> after = store().Stats();
  ASSERT_OK(after);
  EXPECT_EQ(before->admin_overrides + 4, after->admin_overrides);
}

INSTANTIATE_TEST_SUITE_P(Modes, RecordKindsTest, AllModes(), ModeTestName);

}  // namespace
}  // namespace idem::testing
