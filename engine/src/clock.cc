#include "idem/clock.h"

#include <chrono>

namespace idem {

int64_t SystemClock::NowMillis() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::shared_ptr<Clock> SystemClock::Default() {
  static const std::shared_ptr<Clock> clock = std::make_shared<SystemClock>();
  return clock;
}

int64_t MonotonicClock::NowMillis() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::shared_ptr<Clock> MonotonicClock::Default() {
  static const std::shared_ptr<Clock> clock = std::make_shared<MonotonicClock>();
  return clock;
}

}  // namespace idem
