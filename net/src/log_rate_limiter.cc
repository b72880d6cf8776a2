#include "log_rate_limiter.h"

#include <utility>
#include <vector>

namespace idem {

LogRateLimiter::LogRateLimiter(LogSink sink, std::shared_ptr<Clock> clock, int64_t interval_ms)
    : sink_(std::move(sink)), clock_(std::move(clock)), interval_ms_(interval_ms) {}

void LogRateLimiter::Log(LogRecord record) {
  const int64_t now = clock_->NowMillis();
  uint64_t suppressed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, first] = events_.try_emplace(record.event);
    EventState& state = it->second;
    if (!first && now - state.last_passed_ms < interval_ms_) {
      ++state.suppressed;
      state.level = record.level;
      return;
    }
    state.last_passed_ms = now;
    suppressed = std::exchange(state.suppressed, 0);
  }
  if (suppressed > 0) record.With("suppressed", suppressed);
  sink_(record);
}

void LogRateLimiter::Flush() {
  std::vector<LogRecord> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [event, state] : events_) {
      if (state.suppressed == 0) continue;
      pending.push_back(LogRecord(state.level, event,
                                  std::to_string(state.suppressed) + " more " + event +
                                      " not logged one by one since the last such line")
                            .With("suppressed", state.suppressed));
      state.suppressed = 0;
    }
  }
  for (const LogRecord& record : pending) sink_(record);
}

}  // namespace idem
