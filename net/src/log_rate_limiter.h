// LogRateLimiter: at most one log line per event and interval, for the events a peer can cause
// as often as it likes: a malformed frame, a bad request, an idle connection. Without it a
// misbehaving client that reconnects in a loop writes a line per connection, floods the log and
// buries the lines that matter (the same reason AcceptBackoff logs once per episode).
//
// The first record of an event is passed on; later ones within `interval_ms` of the last one
// passed are counted instead. The next one passed carries the field "suppressed" (how many were
// counted since the line before it), and Flush() (the server's stop) writes one line per event
// whose count has not been reported yet, so no occurrence goes unaccounted for. The metrics
// count every occurrence regardless (server_metrics.h).
//
// Thread-safe; the sink is called without the lock held.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "idem/clock.h"
#include "idem/log.h"

namespace idem {

class LogRateLimiter {
 public:
  static constexpr int64_t kDefaultIntervalMs = 10'000;

  // `clock`: any clock whose differences are milliseconds (the server: MonotonicClock).
  LogRateLimiter(LogSink sink, std::shared_ptr<Clock> clock,
                 int64_t interval_ms = kDefaultIntervalMs);

  void Log(LogRecord record);
  void Flush();

 private:
  struct EventState {
    int64_t last_passed_ms = 0;
    uint64_t suppressed = 0;  // since the last line of this event
    LogLevel level = LogLevel::kInfo;
  };

  const LogSink sink_;
  const std::shared_ptr<Clock> clock_;
  const int64_t interval_ms_;
  std::mutex mu_;
  std::map<std::string, EventState, std::less<>> events_;  // guarded by mu_
};

}  // namespace idem
