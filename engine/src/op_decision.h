// What an operation does to one key, decided from the current record alone: no I/O, no locks,
// no clock reads. The engine supplies the live record (expired ones are already treated as
// absent), "now" and the resolved expiry, and carries the decision out.
#pragma once

#include <cstdint>
#include <optional>

#include "idem/operation.h"

namespace idem {

struct Decision {
  enum class Write : uint8_t { kNone, kPut, kDelete };
  Write write = Write::kNone;
  // The record written by kPut starts a new life and must get a fresh fence from the engine.
  bool needs_fence = false;
  // For kPut, result.record is exactly what must be stored.
  OpResult result;
};

bool ConditionHolds(const Condition& condition, const Record& record);

// `current`: the live record at the key, or null. `new_expiry_ms`: the resolved expiry of an
// Insert, or of a CompareAndSet whose update sets a TTL (nullopt: keep the current one).
Decision Decide(const Op& op, const Record* current, int64_t now_ms,
                std::optional<int64_t> new_expiry_ms);

}  // namespace idem
