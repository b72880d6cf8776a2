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

Op Op::Insert(std::string_view ns, std::string_view key, std::string_view status,
              std::string_view payload, std::string_view fingerprint, int64_t ttl_ms) {
  Op op = Keyed(OpType::kInsert, ns, key);
  op.status = status;
  op.payload = payload;
  op.fingerprint = fingerprint;
  op.ttl_ms = ttl_ms;
  return op;
}

Op Op::CompareAndSet(std::string_view ns, std::string_view key, Condition condition,
                     Update update) {
  Op op = Keyed(OpType::kCompareAndSet, ns, key);
  op.condition = std::move(condition);
  op.update = update;
  return op;
}

Op Op::Get(std::string_view ns, std::string_view key) { return Keyed(OpType::kGet, ns, key); }

Op Op::Delete(std::string_view ns, std::string_view key, Condition condition) {
  Op op = Keyed(OpType::kDelete, ns, key);
  op.condition = std::move(condition);
  return op;
}

Op Op::Begin(std::string_view ns, std::string_view key, std::string_view fingerprint,
             int64_t lease_ms, int64_t wait_ms, std::string_view owner) {
  Op op = Keyed(OpType::kBegin, ns, key);
  op.fingerprint = fingerprint;
  op.lease_ms = lease_ms;
  op.wait_ms = wait_ms;
  op.owner = owner;
  return op;
}

Op Op::Complete(std::string_view ns, std::string_view key, uint64_t fence,
                std::string_view response, int64_t ttl_ms) {
  Op op = Fenced(OpType::kComplete, ns, key, fence);
  op.payload = response;
  op.ttl_ms = ttl_ms;
  return op;
}

Op Op::Abort(std::string_view ns, std::string_view key, uint64_t fence) {
  return Fenced(OpType::kAbort, ns, key, fence);
}

Op Op::Heartbeat(std::string_view ns, std::string_view key, uint64_t fence, int64_t lease_ms) {
  Op op = Fenced(OpType::kHeartbeat, ns, key, fence);
  op.lease_ms = lease_ms;
  return op;
}

Op Op::IssueToken(std::string_view ns, int64_t ttl_ms) {
  Op op = Keyed(OpType::kIssueToken, ns, {});
  op.ttl_ms = ttl_ms;
  return op;
}

Op Op::ConsumeToken(std::string_view ns, std::string_view token) {
  return Keyed(OpType::kConsumeToken, ns, token);
}

Op Op::Lock(std::string_view ns, std::string_view key, std::string_view owner, int64_t lease_ms) {
  Op op = Keyed(OpType::kLock, ns, key);
  op.owner = owner;
  op.lease_ms = lease_ms;
  return op;
}

Op Op::Renew(std::string_view ns, std::string_view key, uint64_t fence, int64_t lease_ms) {
  Op op = Fenced(OpType::kRenew, ns, key, fence);
  op.lease_ms = lease_ms;
  return op;
}

Op Op::Unlock(std::string_view ns, std::string_view key, uint64_t fence) {
  return Fenced(OpType::kUnlock, ns, key, fence);
}

Op Op::Transition(std::string_view ns, std::string_view key, std::string_view to_status,
                  std::optional<uint64_t> expect_version) {
  Op op = Keyed(OpType::kTransition, ns, key);
  op.status = to_status;
  op.condition.version = expect_version;
  return op;
}

}  // namespace idem
