// Test support: the fixtures' helpers take a TTL in milliseconds, as the wire protocol writes it
// (nullopt: not given; kForever: forever; any other value, zero included, an explicit TTL), so a
// test states a TTL in one short argument.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "idem/operation.h"

namespace idem::testing {

inline std::optional<Ttl> TtlMs(std::optional<int64_t> ms) {
  if (!ms) return std::nullopt;
  return Ttl(std::chrono::milliseconds(*ms));
}

}  // namespace idem::testing
