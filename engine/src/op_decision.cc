#include "op_decision.h"

#include <algorithm>

namespace idem {
namespace {

// An answer that leaves the record as it is (see Decision::returns_current).
Decision Answer(Outcome outcome, const Record* record) {
  Decision d;
  d.result.outcome = outcome;
  d.returns_current = record != nullptr;
  return d;
}

// A change to the current record: copies it, bumps the version and the update time.
Decision Change(Outcome outcome, const Record& current, int64_t now_ms) {
  Decision d;
  d.result.outcome = outcome;
  d.result.record = current;
  d.write = Decision::Write::kPut;
  d.result.record->version += 1;
  d.result.record->updated_ms = now_ms;
  return d;
}

// A new life at the key: version 1 and a fresh fence.
Decision Create(Outcome outcome, std::string_view status, int64_t now_ms, int64_t expiry_ms) {
  Decision d;
  d.write = Decision::Write::kPut;
  d.needs_fence = true;
  d.result.outcome = outcome;
  Record& r = d.result.record.emplace();
  r.status.assign(status);
  r.version = 1;
  r.created_ms = r.updated_ms = now_ms;
  r.expires_at_ms = expiry_ms;
  return d;
}

Decision Remove(Outcome outcome, const Record& current) {
  Decision d = Answer(outcome, &current);
  d.write = Decision::Write::kDelete;
  return d;
}

// A record must not expire while its lease runs, or a second Begin/Lock would take the key
// from a live holder.
int64_t NotBefore(int64_t expiry_ms, int64_t t) {
  return expiry_ms == kNeverExpires ? kNeverExpires : std::max(expiry_ms, t);
}

bool FingerprintDiffers(const Op& op, const Record& r) {
  return !op.fingerprint.empty() && op.fingerprint != r.fingerprint;
}

Decision DecideInsert(const Op& op, const Record* current, const DecisionInputs& in) {
  if (current != nullptr) {
    Decision d = Answer(Outcome::kExists, current);
    d.result.fingerprint_matches = !FingerprintDiffers(op, *current);
    return d;
  }
  // A state machine starts in one of its states, or no edge could ever leave it.
  if (in.graph != nullptr && !in.graph->Names(op.status)) return Answer(Outcome::kIllegal, nullptr);
  Decision d =
      Create(Outcome::kInserted, op.status, in.now_ms, in.expiry_ms.value_or(kNeverExpires));
  d.result.record->payload.assign(op.payload);
  d.result.record->fingerprint.assign(op.fingerprint);
  return d;
}

Decision DecideCompareAndSet(const Op& op, const Record* current, const DecisionInputs& in) {
  if (current == nullptr) return Answer(Outcome::kNotFound, nullptr);
  if (!ConditionHolds(op.condition, *current)) return Answer(Outcome::kConditionFailed, current);
  if (op.update.status && *op.update.status != current->status && in.graph != nullptr &&
      !in.graph->Allows(current->status, *op.update.status)) {
    return Answer(Outcome::kIllegal, current);
  }
  Decision d = Change(Outcome::kApplied, *current, in.now_ms);
  Record& r = *d.result.record;
  if (op.update.status) r.status.assign(*op.update.status);
  if (op.update.payload) r.payload.assign(*op.update.payload);
  if (in.expiry_ms) r.expires_at_ms = *in.expiry_ms;
  return d;
}

Decision DecideDelete(const Op& op, const Record* current) {
  if (current == nullptr) return Answer(Outcome::kNotFound, nullptr);
  if (!ConditionHolds(op.condition, *current)) return Answer(Outcome::kConditionFailed, current);
  return Remove(Outcome::kDeleted, *current);
}

// --- Request lifecycle -------------------------------------------------------------------

Decision DecideBegin(const Op& op, const Record* current, const DecisionInputs& in) {
  const int64_t lease_until = in.now_ms + in.lease_ms;
  if (current == nullptr) {
    Decision d = Create(Outcome::kStarted, kStatusInProgress, in.now_ms,
                        NotBefore(in.expiry_ms.value_or(kNeverExpires), lease_until));
    Record& r = *d.result.record;
    r.fingerprint.assign(op.fingerprint);
    r.owner.assign(op.owner);
    r.lease_until_ms = lease_until;
    return d;
  }
  if (FingerprintDiffers(op, *current)) {
    Decision d = Answer(Outcome::kMismatch, current);
    d.result.fingerprint_matches = false;
    return d;
  }
  if (current->status != kStatusInProgress) return Answer(Outcome::kCompleted, current);
  if (current->lease_until_ms > in.now_ms) return Answer(Outcome::kInProgress, current);
  // The holder's lease ran out (it crashed or stalled): take over with a higher fence, so the
  // old holder's Complete/Abort/Heartbeat are rejected from now on.
  Decision d = Change(Outcome::kStarted, *current, in.now_ms);
  d.needs_fence = true;
  Record& r = *d.result.record;
  r.owner.assign(op.owner);
  r.lease_until_ms = lease_until;
  r.expires_at_ms = NotBefore(r.expires_at_ms, lease_until);
  return d;
}

// Shared by the operations only the current holder (the fence's owner) may perform.
std::optional<Decision> RejectUnlessHolder(const Op& op, const Record* current) {
  if (current == nullptr) return Answer(Outcome::kNotFound, nullptr);
  if (!op.condition.fence || *op.condition.fence != current->fence) {
    return Answer(Outcome::kFenceMismatch, current);
  }
  return std::nullopt;
}

Decision DecideComplete(const Op& op, const Record* current, const DecisionInputs& in) {
  if (auto rejected = RejectUnlessHolder(op, current)) return *std::move(rejected);
  // A repeated Complete by the holder (its first answer was lost) is a success, not an error.
  if (current->status != kStatusInProgress) return Answer(Outcome::kAlready, current);
  Decision d = Change(Outcome::kApplied, *current, in.now_ms);
  Record& r = *d.result.record;
  r.status.assign(op.status.empty() ? kStatusCompleted : op.status);
  r.payload.assign(op.payload);
  r.lease_until_ms = 0;
  r.expires_at_ms = in.expiry_ms.value_or(r.expires_at_ms);
  return d;
}

Decision DecideAbort(const Op& op, const Record* current, const DecisionInputs& in) {
  if (auto rejected = RejectUnlessHolder(op, current)) return *std::move(rejected);
  if (current->status != kStatusInProgress) return Answer(Outcome::kConditionFailed, current);
  if (!in.remember_failures) return Remove(Outcome::kReleased, *current);
  Decision d = Change(Outcome::kReleased, *current, in.now_ms);
  Record& r = *d.result.record;
  r.status.assign(kStatusFailed);
  r.payload.assign(op.payload);
  r.lease_until_ms = 0;
  r.expires_at_ms = in.expiry_ms.value_or(r.expires_at_ms);
  return d;
}

Decision DecideHeartbeat(const Op& op, const Record* current, const DecisionInputs& in) {
  if (auto rejected = RejectUnlessHolder(op, current)) return *std::move(rejected);
  if (current->status != kStatusInProgress) return Answer(Outcome::kConditionFailed, current);
  Decision d = Change(Outcome::kApplied, *current, in.now_ms);
  Record& r = *d.result.record;
  r.lease_until_ms = in.now_ms + in.lease_ms;
  r.expires_at_ms = NotBefore(r.expires_at_ms, r.lease_until_ms);
  return d;
}

// A recovery point: the payload says how far the holder got. The status stays IN_PROGRESS, as
// that is what keeps the attempt resumable: Begin takes over an IN_PROGRESS attempt whose lease
// ended (its record, checkpoint included, goes to the new holder) and replays any other status as
// the final response. The lease is not touched: saving progress does not claim more time.
Decision DecideCheckpoint(const Op& op, const Record* current, const DecisionInputs& in) {
  if (auto rejected = RejectUnlessHolder(op, current)) return *std::move(rejected);
  // As for Complete: a finished attempt is never reopened; its final record is the answer.
  if (current->status != kStatusInProgress) return Answer(Outcome::kAlready, current);
  Decision d = Change(Outcome::kApplied, *current, in.now_ms);
  d.result.record->payload.assign(op.payload);
  return d;
}

// --- Tokens --------------------------------------------------------------------------------

Decision DecideIssueToken(const Op& op, const Record* current, const DecisionInputs& in) {
  if (current != nullptr) return Answer(Outcome::kExists, current);  // 2^-128: never in practice
  Decision d =
      Create(Outcome::kIssued, kStatusIssued, in.now_ms, in.expiry_ms.value_or(kNeverExpires));
  d.result.record->payload.assign(op.payload);  // what the token authorizes
  return d;
}

Decision DecideConsumeToken(const Record* current, const DecisionInputs& in) {
  if (current == nullptr) return Answer(Outcome::kNotFound, nullptr);
  if (current->status != kStatusIssued) return Answer(Outcome::kAlreadyConsumed, current);
  // Kept (as CONSUMED) until the token would have expired, so a second consume is told apart
  // from an unknown or expired token.
  Decision d = Change(Outcome::kConsumed, *current, in.now_ms);
  d.result.record->status.assign(kStatusConsumed);
  return d;
}

// --- Locks ---------------------------------------------------------------------------------
// A lock record expires when its lease does, so an abandoned lock frees itself through the
// ordinary expiry path, and the next Lock starts a new life with a higher fence.

Decision DecideLock(const Op& op, const Record* current, const DecisionInputs& in) {
  const int64_t lease_until = in.now_ms + in.lease_ms;
  if (current == nullptr) {
    Decision d = Create(Outcome::kAcquired, kStatusLocked, in.now_ms, lease_until);
    d.result.record->owner.assign(op.owner);
    d.result.record->lease_until_ms = lease_until;
    return d;
  }
  if (current->owner != op.owner) return Answer(Outcome::kHeld, current);
  // The holder asking again (say its first answer was lost): same fence, lease extended.
  Decision d = Change(Outcome::kAcquired, *current, in.now_ms);
  d.result.record->lease_until_ms = d.result.record->expires_at_ms = lease_until;
  return d;
}

Decision DecideRenew(const Op& op, const Record* current, const DecisionInputs& in) {
  if (auto rejected = RejectUnlessHolder(op, current)) return *std::move(rejected);
  Decision d = Change(Outcome::kApplied, *current, in.now_ms);
  d.result.record->lease_until_ms = d.result.record->expires_at_ms = in.now_ms + in.lease_ms;
  return d;
}

Decision DecideUnlock(const Op& op, const Record* current) {
  if (auto rejected = RejectUnlessHolder(op, current)) return *std::move(rejected);
  return Remove(Outcome::kReleased, *current);
}

// --- State machines ------------------------------------------------------------------------

Decision DecideTransition(const Op& op, const Record* current, const DecisionInputs& in) {
  if (current == nullptr) return Answer(Outcome::kNotFound, nullptr);
  // A duplicate (the payment callback delivered twice) is answered as success.
  if (current->status == op.status) return Answer(Outcome::kAlready, current);
  if (in.graph != nullptr && !in.graph->Allows(current->status, op.status)) {
    return Answer(Outcome::kIllegal, current);
  }
  if (op.condition.version && *op.condition.version != current->version) {
    return Answer(Outcome::kConditionFailed, current);
  }
  Decision d = Change(Outcome::kApplied, *current, in.now_ms);
  d.result.record->status.assign(op.status);
  if (op.update.payload) d.result.record->payload.assign(*op.update.payload);
  return d;
}

// --- Record kinds ----------------------------------------------------------------------------

// The kind of record `type` works on (and creates); nullopt for the universal operations.
std::optional<RecordKind> KindOf(OpType type, const DecisionInputs& in) {
  switch (type) {
    case OpType::kInsert:
    case OpType::kCompareAndSet:
    case OpType::kTransition:
      return in.graph != nullptr ? RecordKind::kStateMachine : RecordKind::kPlain;
    case OpType::kBegin:
    case OpType::kComplete:
    case OpType::kAbort:
    case OpType::kHeartbeat:
    case OpType::kCheckpoint:
      return RecordKind::kAttempt;
    case OpType::kIssueToken:
    case OpType::kConsumeToken:
      return RecordKind::kToken;
    case OpType::kLock:
    case OpType::kRenew:
    case OpType::kUnlock:
      return RecordKind::kLock;
    case OpType::kGet:
    case OpType::kDelete:
      break;
  }
  return std::nullopt;
}

// Plain records and state machines take the same operations: which graph governs a status
// change is the namespace's business (DecisionInputs::graph), not the record's. A namespace's
// graph may be declared after its records were made.
bool SameFamily(RecordKind op_kind, RecordKind record_kind) {
  const auto plain = [](RecordKind k) {
    return k == RecordKind::kPlain || k == RecordKind::kStateMachine;
  };
  return op_kind == record_kind || (plain(op_kind) && plain(record_kind));
}

// The rules of op.type, once the record's kind is known to suit it.
Decision DecideByType(const Op& op, const Record* current, const DecisionInputs& in) {
  switch (op.type) {
    case OpType::kInsert:
      return DecideInsert(op, current, in);
    case OpType::kCompareAndSet:
      return DecideCompareAndSet(op, current, in);
    case OpType::kGet:
      return Answer(current ? Outcome::kFound : Outcome::kNotFound, current);
    case OpType::kDelete:
      return DecideDelete(op, current);
    case OpType::kBegin:
      return DecideBegin(op, current, in);
    case OpType::kComplete:
      return DecideComplete(op, current, in);
    case OpType::kAbort:
      return DecideAbort(op, current, in);
    case OpType::kHeartbeat:
      return DecideHeartbeat(op, current, in);
    case OpType::kIssueToken:
      return DecideIssueToken(op, current, in);
    case OpType::kConsumeToken:
      return DecideConsumeToken(current, in);
    case OpType::kLock:
      return DecideLock(op, current, in);
    case OpType::kRenew:
      return DecideRenew(op, current, in);
    case OpType::kUnlock:
      return DecideUnlock(op, current);
    case OpType::kTransition:
      return DecideTransition(op, current, in);
    case OpType::kCheckpoint:
      return DecideCheckpoint(op, current, in);
  }
  return Answer(Outcome::kNotFound, nullptr);  // unreachable: ValidateOp rejects unknown types
}

// --- Remembered keys ----------------------------------------------------------------------

// The marker's answer to `op`, for the ops it answers (see Decide); nullopt for the others.
std::optional<Decision> DecideRemembered(const Op& op, const Record& marker,
                                         const DecisionInputs& in) {
  switch (op.type) {
    case OpType::kGet:
      return Answer(Outcome::kExpired, &marker);
    case OpType::kDelete:
      // An administrator forgets the key. A condition names a record's status, version or
      // fence, which a marker does not have.
      if (!op.condition.Empty()) return Answer(Outcome::kConditionFailed, &marker);
      return Remove(Outcome::kDeleted, marker);
    case OpType::kInsert:
    case OpType::kBegin:
    case OpType::kLock:
      break;
    default:
      return std::nullopt;
  }
  if (!SameFamily(*KindOf(op.type, in), marker.kind)) return Answer(Outcome::kWrongKind, &marker);
  if (op.type == OpType::kBegin && FingerprintDiffers(op, marker)) {
    Decision d = Answer(Outcome::kMismatch, &marker);
    d.result.fingerprint_matches = false;
    return d;
  }
  Decision d = Answer(Outcome::kExpired, &marker);
  d.result.fingerprint_matches = !FingerprintDiffers(op, marker);
  return d;
}

}  // namespace

bool ConditionHolds(const Condition& c, const Record& r) {
  if (c.version && *c.version != r.version) return false;
  if (c.fence && *c.fence != r.fence) return false;
  if (!c.status_in.empty() &&
      std::find(c.status_in.begin(), c.status_in.end(), r.status) == c.status_in.end()) {
    return false;
  }
  return true;
}

Decision Decide(const Op& op, const Record* current, const DecisionInputs& in,
                const Record* remembered) {
  if (current == nullptr && remembered != nullptr) {
    if (std::optional<Decision> d = DecideRemembered(op, *remembered, in)) return *std::move(d);
  }
  const std::optional<RecordKind> kind = KindOf(op.type, in);
  // Before every other rule: what the op carries (a fence, a fingerprint, a target status) means
  // nothing for another scheme's record.
  if (current != nullptr && kind && current->kind != RecordKind::kUntyped &&
      !SameFamily(*kind, current->kind)) {
    return Answer(Outcome::kWrongKind, current);
  }
  Decision d = DecideByType(op, current, in);
  d.admin_override = op.type == OpType::kDelete && d.write == Decision::Write::kDelete &&
                     current->kind != RecordKind::kPlain && current->kind != RecordKind::kUntyped;
  // A new record gets the op's kind; so does an untyped one (written before kinds) on its first
  // change.
  if (d.write == Decision::Write::kPut && kind && d.result.record->kind == RecordKind::kUntyped) {
    d.result.record->kind = *kind;
  }
  return d;
}

}  // namespace idem
