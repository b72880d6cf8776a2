// What an operation does to one key, decided from the current record alone: no I/O, no locks,
// no clock reads. The engine supplies the live record (expired ones are already treated as
// absent) and the resolved inputs (now, expiry, lease, policy), and carries the decision out.
// Every rule of every operation is here; docs/recipes.md describes them for users.
#pragma once

#include <cstdint>
#include <optional>

#include "idem/operation.h"
#include "idem/options.h"

namespace idem {

struct Decision {
  enum class Write : uint8_t { kNone, kPut, kDelete };
  Write write = Write::kNone;
  // The record written by kPut needs a fresh fence (a new life, or a lease takeover).
  bool needs_fence = false;
  // For kPut, result.record is exactly what must be stored.
  OpResult result;
  // The answer carries the current record unchanged (EXISTS, FOUND, IN_PROGRESS, a replay, a
  // refusal, the removed record): result.record is left empty for the caller to fill, so it can
  // move the record it just decoded instead of copying it (duplicates are the hot path).
  bool returns_current = false;
  // An administrative override: a Delete removed another scheme's record (an attempt, token,
  // lock or state machine), bypassing that scheme's rules. Counted in StoreStats::admin_overrides.
  bool admin_override = false;
};

struct DecisionInputs {
  int64_t now_ms = 0;
  // The expiry the op writes, resolved from its TTL and the namespace policy: the new record's
  // (Insert, Begin, IssueToken), the retention of a finished attempt (Complete, Abort), or a
  // CompareAndSet's new expiry. nullopt: the op sets no expiry.
  std::optional<int64_t> expiry_ms;
  int64_t lease_ms = 0;  // resolved lease (Begin, Heartbeat, Lock, Renew)
  // Insert, CompareAndSet, Transition: the namespace's graph, if it has one. It governs their
  // status changes, makes their records state machines (RecordKind::kStateMachine), and names
  // the states an Insert may start a record in (StateGraph::Names; else ILLEGAL, no record).
  const StateGraph* graph = nullptr;
  bool remember_failures = false;  // Abort: keep a FAILED record instead of releasing
};

bool ConditionHolds(const Condition& condition, const Record& record);

// `current`: the live record at the key, or null. A record of another kind than the op works on
// is answered kWrongKind, before any other rule (docs/recipes.md, "Record kinds"); Get and
// Delete work on every kind.
//
// `remembered`: when `current` is null, the key's marker if the namespace remembers it
// (remembered_key.h: a RememberedRecord), or null. It stands for the record it replaced towards
// the ops that would start a new life at the key and the ones that look at it: Insert, Begin
// and Lock (kWrongKind as for the record; Begin: kMismatch for a different fingerprint; else
// kExpired, nothing written), Get (kExpired) and Delete (removes it: kDeleted; a condition never
// holds on a marker: kConditionFailed). To every other op the key is absent, as it is without
// remembered keys.
Decision Decide(const Op& op, const Record* current, const DecisionInputs& in,
                const Record* remembered = nullptr);

}  // namespace idem
