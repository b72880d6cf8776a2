// The rules of Decide that concern record kinds, as a table: which operation works on which kind
// of record, and what happens to records written before kinds existed. Pure: no engine, no clock.
#include "op_decision.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace idem {
namespace {

constexpr uint64_t kFence = 7;
constexpr int64_t kNow = 1'000;

// A live record of `kind`, as its own scheme leaves it.
Record Of(RecordKind kind) {
  Record r;
  r.kind = kind;
  r.version = 1;
  r.fence = kFence;
  switch (kind) {
    case RecordKind::kAttempt:
      r.status = kStatusInProgress;
      r.lease_until_ms = kNow + 30'000;
      break;
    case RecordKind::kToken:
      r.status = kStatusIssued;
      break;
    case RecordKind::kLock:
      r.status = kStatusLocked;
      r.owner = "alice";
      r.lease_until_ms = kNow + 30'000;
      break;
    default:
      r.status = "NEW";
  }
  return r;
}

struct Row {
  const char* op;
  Op value;
  std::vector<std::string> outcomes;  // on plain, attempt, token, lock, state-machine
};

std::vector<Row> Table() {
  const std::string wk = "WRONG_KIND";
  return {
      {"Insert",
       Op::Insert({.ns = "ns", .key = "k", .status = "NEW"}),
       {"EXISTS", wk, wk, wk, "EXISTS"}},
      {"CompareAndSet",
       Op::CompareAndSet({.ns = "ns", .key = "k", .update = {.status = "NEXT"}}),
       {"APPLIED", wk, wk, wk, "APPLIED"}},
      {"Get", Op::Get({.ns = "ns", .key = "k"}), {"FOUND", "FOUND", "FOUND", "FOUND", "FOUND"}},
      {"Delete",
       Op::Delete({.ns = "ns", .key = "k"}),
       {"DELETED", "DELETED", "DELETED", "DELETED", "DELETED"}},
      {"Begin", Op::Begin({.ns = "ns", .key = "k"}), {wk, "IN_PROGRESS", wk, wk, wk}},
      {"Complete",
       Op::Complete({.ns = "ns", .key = "k", .fence = kFence, .response = "r"}),
       {wk, "APPLIED", wk, wk, wk}},
      {"Abort", Op::Abort({.ns = "ns", .key = "k", .fence = kFence}), {wk, "RELEASED", wk, wk, wk}},
      {"Heartbeat",
       Op::Heartbeat({.ns = "ns", .key = "k", .fence = kFence}),
       {wk, "APPLIED", wk, wk, wk}},
      {"Checkpoint",
       Op::Checkpoint({.ns = "ns", .key = "k", .fence = kFence, .payload = "phase"}),
       {wk, "APPLIED", wk, wk, wk}},
      {"ConsumeToken", Op::ConsumeToken({.ns = "ns", .token = "k"}), {wk, wk, "CONSUMED", wk, wk}},
      {"Lock", Op::Lock({.ns = "ns", .key = "k", .owner = "alice"}), {wk, wk, wk, "ACQUIRED", wk}},
      {"Renew", Op::Renew({.ns = "ns", .key = "k", .fence = kFence}), {wk, wk, wk, "APPLIED", wk}},
      {"Unlock",
       Op::Unlock({.ns = "ns", .key = "k", .fence = kFence}),
       {wk, wk, wk, "RELEASED", wk}},
      {"Transition",
       Op::Transition({.ns = "ns", .key = "k", .to_status = "NEXT"}),
       {"APPLIED", wk, wk, wk, "APPLIED"}},
  };
}

DecisionInputs Inputs() {
  DecisionInputs in;
  in.now_ms = kNow;
  in.lease_ms = 30'000;
  return in;
}

TEST(OpDecisionKinds, EachOperationWorksOnItsOwnKindOnly) {
  const RecordKind kinds[] = {RecordKind::kPlain, RecordKind::kAttempt, RecordKind::kToken,
                              RecordKind::kLock, RecordKind::kStateMachine};
  for (const Row& row : Table()) {
    for (size_t i = 0; i < std::size(kinds); ++i) {
      const Record current = Of(kinds[i]);
      Decision d = Decide(row.value, &current, Inputs());
      EXPECT_EQ(row.outcomes[i], OutcomeName(d.result.outcome))
          << row.op << " on a " << RecordKindName(kinds[i]) << " record";
      if (d.result.outcome == Outcome::kWrongKind) {
        EXPECT_EQ(Decision::Write::kNone, d.write) << row.op;
        EXPECT_TRUE(d.returns_current) << row.op;  // the caller sees what is there
      }
      if (d.write == Decision::Write::kPut) {
        EXPECT_EQ(kinds[i], d.result.record->kind) << row.op << ": a change keeps the kind";
      }
    }
  }
}

TEST(OpDecisionKinds, NewRecordsTakeTheKindOfTheOperationThatCreatesThem) {
  StateGraph graph = *StateGraph::Parse("NEW>NEXT");
  DecisionInputs with_graph = Inputs();
  with_graph.graph = &graph;
  auto created = [](const Op& op, const DecisionInputs& in) {
    Decision d = Decide(op, nullptr, in);
    return d.result.record ? RecordKindName(d.result.record->kind) : "no record";
  };
  EXPECT_EQ("plain", created(Op::Insert({.ns = "ns", .key = "k", .status = "NEW"}), Inputs()));
  EXPECT_EQ("state-machine",
            created(Op::Insert({.ns = "ns", .key = "k", .status = "NEW"}), with_graph));
  EXPECT_EQ("attempt", created(Op::Begin({.ns = "ns", .key = "k"}), Inputs()));
  EXPECT_EQ("token", created(Op::IssueToken({.ns = "ns"}), Inputs()));
  EXPECT_EQ("lock", created(Op::Lock({.ns = "ns", .key = "k", .owner = "alice"}), Inputs()));
}

// Records stored before kinds existed (kind byte 0) keep working as they did: every operation
// accepts them. The first operation that changes one gives it that operation's kind, and from
// then on the record is protected like any other.
TEST(OpDecisionKinds, UntypedRecordsAreAcceptedAndTakeTheKindOfTheirFirstChange) {
  Record legacy = Of(RecordKind::kAttempt);
  legacy.kind = RecordKind::kUntyped;
  Decision completed = Decide(
      Op::Complete({.ns = "ns", .key = "k", .fence = kFence, .response = "r"}), &legacy, Inputs());
  ASSERT_EQ(Outcome::kApplied, completed.result.outcome);
  EXPECT_EQ(RecordKind::kAttempt, completed.result.record->kind);
  EXPECT_EQ(Outcome::kWrongKind, Decide(Op::Transition({.ns = "ns", .key = "k", .to_status = "X"}),
                                        &*completed.result.record, Inputs())
                                     .result.outcome);

  Decision moved =
      Decide(Op::Transition({.ns = "ns", .key = "k", .to_status = "X"}), &legacy, Inputs());
  ASSERT_EQ(Outcome::kApplied, moved.result.outcome);  // as before kinds: nothing to tell by
  EXPECT_EQ(RecordKind::kPlain, moved.result.record->kind);

  Record token = Of(RecordKind::kToken);
  token.kind = RecordKind::kUntyped;
  Decision consumed = Decide(Op::ConsumeToken({.ns = "ns", .token = "k"}), &token, Inputs());
  ASSERT_EQ(Outcome::kConsumed, consumed.result.outcome);
  EXPECT_EQ(RecordKind::kToken, consumed.result.record->kind);

  // An answer that writes nothing leaves it untyped.
  Decision found = Decide(Op::Begin({.ns = "ns", .key = "k"}), &legacy, Inputs());
  EXPECT_EQ(Outcome::kInProgress, found.result.outcome);
  EXPECT_EQ(Decision::Write::kNone, found.write);
}

TEST(OpDecisionKinds, CompareAndSetStatusChangesFollowTheGraph) {
  StateGraph graph = *StateGraph::Parse("NEW>NEXT,*>GONE");
  DecisionInputs in = Inputs();
  in.graph = &graph;
  const Record current = Of(RecordKind::kStateMachine);
  auto cas = [&](std::string_view status) {
    Op op = Op::CompareAndSet({.ns = "ns", .key = "k", .update = {.status = status}});
    return std::string(OutcomeName(Decide(op, &current, in).result.outcome));
  };
  EXPECT_EQ("APPLIED", cas("NEXT"));
  EXPECT_EQ("APPLIED", cas("GONE"));
  EXPECT_EQ("APPLIED", cas("NEW"));  // not a change
  EXPECT_EQ("ILLEGAL", cas("ELSEWHERE"));
}

// A remembered key (remembered_key.h) answers the ops that would start a new life at it and the
// ones that look at it; every other op finds no record.
TEST(OpDecisionRemembered, AMarkerAnswersStartsAndLooksOnly) {
  Record marker;
  marker.kind = RecordKind::kAttempt;
  marker.fingerprint = "fp";
  auto on_marker = [&](const Op& op) {
    Decision d = Decide(op, nullptr, Inputs(), &marker);
    EXPECT_TRUE(d.write == Decision::Write::kNone || op.type == OpType::kDelete);
    return std::string(OutcomeName(d.result.outcome));
  };
  EXPECT_EQ("EXPIRED", on_marker(Op::Begin({.ns = "ns", .key = "k", .fingerprint = "fp"})));
  EXPECT_EQ("EXPIRED", on_marker(Op::Begin({.ns = "ns", .key = "k"})));
  EXPECT_EQ("MISMATCH", on_marker(Op::Begin({.ns = "ns", .key = "k", .fingerprint = "other"})));
  EXPECT_EQ("EXPIRED", on_marker(Op::Get({.ns = "ns", .key = "k"})));
  EXPECT_EQ("DELETED", on_marker(Op::Delete({.ns = "ns", .key = "k"})));
  EXPECT_EQ("CONDITION_FAILED",
            on_marker(Op::Delete({.ns = "ns", .key = "k", .condition = {.fence = 0}})));
  EXPECT_EQ("WRONG_KIND", on_marker(Op::Insert({.ns = "ns", .key = "k", .status = "S"})));
  EXPECT_EQ("WRONG_KIND", on_marker(Op::Lock({.ns = "ns", .key = "k", .owner = "o"})));
  EXPECT_EQ("NOT_FOUND", on_marker(Op::Complete({.ns = "ns", .key = "k", .fence = kFence})));
  EXPECT_EQ("NOT_FOUND", on_marker(Op::Heartbeat({.ns = "ns", .key = "k", .fence = kFence})));
  EXPECT_EQ("NOT_FOUND", on_marker(Op::CompareAndSet({.ns = "ns", .key = "k"})));

  marker.kind = RecordKind::kPlain;
  Decision insert = Decide(Op::Insert({.ns = "ns", .key = "k", .status = "S", .fingerprint = "x"}),
                           nullptr, Inputs(), &marker);
  EXPECT_EQ(Outcome::kExpired, insert.result.outcome);
  EXPECT_FALSE(insert.result.fingerprint_matches);
  EXPECT_TRUE(insert.returns_current);
}

TEST(OpDecisionRemembered, ALiveRecordWinsOverAMarker) {
  Record marker;
  marker.kind = RecordKind::kAttempt;
  const Record live = Of(RecordKind::kAttempt);
  EXPECT_EQ(Outcome::kInProgress,
            Decide(Op::Begin({.ns = "ns", .key = "k"}), &live, Inputs(), &marker).result.outcome);
}

}  // namespace
}  // namespace idem
