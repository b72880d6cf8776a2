// Test support: the fixtures' helpers take a TTL in milliseconds, as the wire protocol writes it
// (kDefaultTtl: not given; kForever), so a test states a TTL in one short argument.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "idem/operation.h"

namespace idem::testing {

inline std::optional<Ttl> TtlMs(int64_t ms) {
  if (ms == kDefaultTtl) return std::nullopt;
  return Ttl(std::chrono::milliseconds(ms));
}

}  // namespace idem::testing
