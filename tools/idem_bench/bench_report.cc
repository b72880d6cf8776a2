#include "bench_report.h"

#include "idem/operation.h"
#include "idem/status.h"

namespace idem::bench {

uint64_t BenchReport::error_count() const {
  uint64_t n = 0;
  for (uint64_t e : errors) n += e;
  return n;
}

// Names come from the engine's tables (append-only, so they never drift); slot 0 of the error
// counters is idem-bench's own: requests the server never answered.
std::string_view OutcomeName(size_t outcome) {
  return idem::OutcomeName(static_cast<idem::Outcome>(outcome));
}

std::string_view ErrorName(size_t code) {
  return code == 0 ? "UNANSWERED" : idem::CodeName(static_cast<idem::Status::Code>(code));
}

}  // namespace idem::bench
