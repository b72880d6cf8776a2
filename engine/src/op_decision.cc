#include "op_decision.h"

#include <algorithm>

namespace idem {
namespace {

Decision Answer(Outcome outcome, const Record* record) {
  Decision d;
  d.result.outcome = outcome;
  if (record != nullptr) d.result.record = *record;
  return d;
}

Decision DecideInsert(const Op& op, const Record* current, int64_t now_ms, int64_t expiry_ms) {
  if (current != nullptr) {
    Decision d = Answer(Outcome::kExists, current);
    d.result.fingerprint_matches = op.fingerprint.empty() || op.fingerprint == current->fingerprint;
    return d;
  }
  Decision d;
  d.write = Decision::Write::kPut;
  d.needs_fence = true;
  d.result.outcome = Outcome::kInserted;
  Record& r = d.result.record.emplace();
  r.status.assign(op.status);
  r.payload.assign(op.payload);
  r.fingerprint.assign(op.fingerprint);
  r.version = 1;
  r.created_ms = r.updated_ms = now_ms;
  r.expires_at_ms = expiry_ms;
  return d;
}

Decision DecideCompareAndSet(const Op& op, const Record* current, int64_t now_ms,
                             std::optional<int64_t> expiry_ms) {
  if (current == nullptr) return Answer(Outcome::kNotFound, nullptr);
  if (!ConditionHolds(op.condition, *current)) return Answer(Outcome::kConditionFailed, current);
  Decision d = Answer(Outcome::kApplied, current);
  d.write = Decision::Write::kPut;
  Record& r = *d.result.record;
  if (op.update.status) r.status.assign(*op.update.status);
  if (op.update.payload) r.payload.assign(*op.update.payload);
  if (expiry_ms) r.expires_at_ms = *expiry_ms;
  r.version += 1;
  r.updated_ms = now_ms;
  return d;
}

Decision DecideDelete(const Op& op, const Record* current) {
  if (current == nullptr) return Answer(Outcome::kNotFound, nullptr);
  if (!ConditionHolds(op.condition, *current)) return Answer(Outcome::kConditionFailed, current);
  Decision d = Answer(Outcome::kDeleted, current);
  d.write = Decision::Write::kDelete;
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

Decision Decide(const Op& op, const Record* current, int64_t now_ms,
                std::optional<int64_t> new_expiry_ms) {
  switch (op.type) {
    case OpType::kInsert:
      return DecideInsert(op, current, now_ms, new_expiry_ms.value_or(kNeverExpires));
    case OpType::kCompareAndSet:
      return DecideCompareAndSet(op, current, now_ms, new_expiry_ms);
    case OpType::kGet:
      return Answer(current ? Outcome::kFound : Outcome::kNotFound, current);
    case OpType::kDelete:
      return DecideDelete(op, current);
  }
  return Answer(Outcome::kNotFound, nullptr);  // unreachable: ValidateOp rejects unknown types
}

}  // namespace idem
