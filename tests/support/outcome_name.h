// Test support: a result as a short string, so tests read like a specification:
//   EXPECT_EQ("INSERTED", Name(store.Insert({.ns = "pay", .key = "k1", .status = "PENDING"})));
#pragma once

#include <string>

#include "idem/operation.h"
#include "idem/result.h"

namespace idem::testing {

// "INSERTED", "CONDITION_FAILED", ... or the error code's name ("INVALID_ARGUMENT").
inline std::string Name(const Result<OpResult>& r) {
  if (!r.ok()) return std::string(CodeName(r.status().code()));
  return std::string(OutcomeName(r->outcome));
}

}  // namespace idem::testing
