#include "idem/operation.h"

namespace idem {

std::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kInserted:
      return "INSERTED";
    case Outcome::kExists:
      return "EXISTS";
    case Outcome::kApplied:
      return "APPLIED";
    case Outcome::kConditionFailed:
      return "CONDITION_FAILED";
    case Outcome::kNotFound:
      return "NOT_FOUND";
    case Outcome::kDeleted:
      return "DELETED";
    case Outcome::kFound:
      return "FOUND";
    case Outcome::kStarted:
      return "STARTED";
    case Outcome::kInProgress:
      return "IN_PROGRESS";
    case Outcome::kCompleted:
      return "COMPLETED";
    case Outcome::kMismatch:
      return "MISMATCH";
    case Outcome::kFenceMismatch:
      return "FENCE_MISMATCH";
    case Outcome::kReleased:
      return "RELEASED";
    case Outcome::kIssued:
      return "ISSUED";
    case Outcome::kConsumed:
      return "CONSUMED";
    case Outcome::kAlreadyConsumed:
      return "ALREADY_CONSUMED";
    case Outcome::kAcquired:
      return "ACQUIRED";
    case Outcome::kHeld:
      return "HELD";
    case Outcome::kAlready:
      return "ALREADY";
    case Outcome::kIllegal:
      return "ILLEGAL";
    case Outcome::kWrongKind:
      return "WRONG_KIND";
    case Outcome::kExpired:
      return "EXPIRED";
  }
  return "UNKNOWN";
}

std::string_view RecordKindName(RecordKind kind) {
  switch (kind) {
    case RecordKind::kUntyped:
      return "untyped";
    case RecordKind::kPlain:
      return "plain";
    case RecordKind::kAttempt:
      return "attempt";
    case RecordKind::kToken:
      return "token";
    case RecordKind::kLock:
      return "lock";
    case RecordKind::kStateMachine:
      return "state-machine";
  }
  return "unknown";
}

std::string_view OpTypeName(OpType type) {
  switch (type) {
    case OpType::kInsert:
      return "insert";
    case OpType::kCompareAndSet:
      return "cas";
    case OpType::kGet:
      return "get";
    case OpType::kDelete:
      return "delete";
    case OpType::kBegin:
      return "begin";
    case OpType::kComplete:
      return "complete";
    case OpType::kAbort:
      return "abort";
    case OpType::kHeartbeat:
      return "heartbeat";
    case OpType::kIssueToken:
      return "token-issue";
    case OpType::kConsumeToken:
      return "token-consume";
    case OpType::kLock:
      return "lock";
    case OpType::kRenew:
      return "renew";
    case OpType::kUnlock:
      return "unlock";
    case OpType::kTransition:
      return "transition";
    case OpType::kCheckpoint:
      return "checkpoint";
  }
  return "unknown";
}

namespace {
Op Keyed(OpType type, std::string_view ns, std::string_view key) {
  Op op;
  op.type = type;
  op.ns = ns;
  op.key = key;
  return op;
}
Op Fenced(OpType type, std::string_view ns, std::string_view key, uint64_t fence) {
  Op op = Keyed(type, ns, key);
  op.condition.fence = fence;
  return op;
}
}  // namespace

Op Op::Insert(const InsertArgs& args) {
  Op op = Keyed(OpType::kInsert, args.ns, args.key);
  op.status = args.status;
  op.payload = args.payload;
  op.fingerprint = args.fingerprint;
  op.ttl = args.ttl;
  return op;
}

Op Op::CompareAndSet(const CompareAndSetArgs& args) {
  Op op = Keyed(OpType::kCompareAndSet, args.ns, args.key);
  op.condition = args.condition;
  op.update = args.update;
  return op;
}

Op Op::Get(const GetArgs& args) { return Keyed(OpType::kGet, args.ns, args.key); }

Op Op::Delete(const DeleteArgs& args) {
  Op op = Keyed(OpType::kDelete, args.ns, args.key);
  op.condition = args.condition;
  return op;
}

Op Op::Begin(const BeginArgs& args) {
  Op op = Keyed(OpType::kBegin, args.ns, args.key);
  op.fingerprint = args.fingerprint;
  op.owner = args.owner;
  op.lease = args.lease;
  op.wait = args.wait;
  op.ttl = args.ttl;
  return op;
}

Op Op::Complete(const CompleteArgs& args) {
  Op op = Fenced(OpType::kComplete, args.ns, args.key, args.fence);
  op.payload = args.response;
  op.status = args.status;
  op.ttl = args.ttl;
  return op;
}

Op Op::Abort(const AbortArgs& args) {
  Op op = Fenced(OpType::kAbort, args.ns, args.key, args.fence);
  op.payload = args.response;
  return op;
}

Op Op::Heartbeat(const HeartbeatArgs& args) {
  Op op = Fenced(OpType::kHeartbeat, args.ns, args.key, args.fence);
  op.lease = args.lease;
  return op;
}

Op Op::IssueToken(const IssueTokenArgs& args) {
  Op op = Keyed(OpType::kIssueToken, args.ns, {});
  op.ttl = args.ttl;
  op.payload = args.payload;
  return op;
}

Op Op::ConsumeToken(const ConsumeTokenArgs& args) {
  return Keyed(OpType::kConsumeToken, args.ns, args.token);
}

Op Op::Lock(const LockArgs& args) {
  Op op = Keyed(OpType::kLock, args.ns, args.key);
  op.owner = args.owner;
  op.lease = args.lease;
  op.wait = args.wait;
  return op;
}

bool WaitsForHolder(const Op& op) {
  return (op.type == OpType::kBegin || op.type == OpType::kLock) && op.wait && op.wait->count() > 0;
}

bool StillHeld(OpType type, Outcome outcome) {
  return (type == OpType::kBegin && outcome == Outcome::kInProgress) ||
         (type == OpType::kLock && outcome == Outcome::kHeld);
}

Op Op::Renew(const RenewArgs& args) {
  Op op = Fenced(OpType::kRenew, args.ns, args.key, args.fence);
  op.lease = args.lease;
  return op;
}

Op Op::Unlock(const UnlockArgs& args) {
  return Fenced(OpType::kUnlock, args.ns, args.key, args.fence);
}

Op Op::Transition(const TransitionArgs& args) {
  Op op = Keyed(OpType::kTransition, args.ns, args.key);
  op.status = args.to_status;
  op.condition.version = args.expect_version;
  op.update.payload = args.payload;
  return op;
}

Op Op::Checkpoint(const CheckpointArgs& args) {
  Op op = Fenced(OpType::kCheckpoint, args.ns, args.key, args.fence);
  op.payload = args.payload;
  return op;
}

}  // namespace idem
