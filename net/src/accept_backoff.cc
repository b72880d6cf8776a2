#include "accept_backoff.h"

#include <algorithm>

namespace idem {

std::chrono::milliseconds AcceptBackoff::OnFailure(Clock::time_point now, std::string_view error,
                                                   std::string* log) {
  log->clear();
  if (failures_ == 0) {
    first_failure_ = now;
    delay_ = kFirstDelay;
    *log = "accept failed: " + std::string(error) + "; retrying with backoff up to " +
           std::to_string(kMaxDelay.count()) + " ms (logged once until an accept succeeds)";
  } else {
    delay_ = std::min(delay_ * 2, kMaxDelay);
  }
  ++failures_;
  last_error_ = std::string(error);
  return delay_;
}

void AcceptBackoff::OnSuccess(Clock::time_point now, std::string* log) {
  log->clear();
  if (failures_ == 0) return;
  const auto lasted = std::chrono::duration_cast<std::chrono::milliseconds>(now - first_failure_);
  *log = "accepting again after " + std::to_string(failures_) + " failed accepts over " +
         std::to_string(lasted.count()) + " ms (last: " + last_error_ + ")";
  failures_ = 0;
  delay_ = std::chrono::milliseconds(0);
}

}  // namespace idem
