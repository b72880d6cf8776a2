// What expiry_windows_test's crash test and its child process (expiry_windows_crash_child.cc)
// agree on: the engine's options, the records the child writes and the clock it runs on.
//
// The child opens a new database under the expiry-window layout, writes every record at
// kCrashStartMs, reports that clock value, then moves the clock kCrashStepMs at a time, reporting
// each value BEFORE it calls ReclaimExpired at it, so one window becomes droppable per step. The
// parent kills it during one of those drops, and knows the latest clock any drop ran at.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "idem/options.h"

namespace idem::testing {

inline constexpr int64_t kCrashStartMs = 1'700'000'000'000;  // a multiple of the width
inline constexpr int64_t kCrashWidthMs = EngineOptions::kMinExpiryWindowMs;
inline constexpr int64_t kCrashGraceMs = 1000;
inline constexpr int64_t kCrashStepMs = kCrashWidthMs;
inline constexpr int kCrashSteps = 70;  // the last window ends after 61 steps
inline constexpr int kCrashRecords = 600;
inline constexpr int kCrashForeverRecords = 10;
inline constexpr const char* kCrashNs = "crash";

inline EngineOptions CrashEngineOptions(std::shared_ptr<Clock> clock) {
  EngineOptions options;
  options.clock = std::move(clock);
  options.layout = EngineOptions::Layout::kExpiryWindows;
  options.expiry_window_ms = kCrashWidthMs;
  options.expiry_grace_ms = kCrashGraceMs;
  options.reclaim_interval_ms = 0;
  // Every record is written before the first drop: a killed process keeps what reached the OS.
  options.durability = Durability::kAsync;
  options.retention[kCrashNs] = RetentionPolicy{60'000, 3600'000, /*allow_forever=*/true};
  return options;
}

// Record i (0 <= i < kCrashRecords) lives 1..61 s from kCrashStartMs: about ten per window.
inline int64_t CrashTtlMs(int i) { return 1000 + (static_cast<int64_t>(i) * 97) % 60'000; }
inline std::string CrashKey(int i) { return "k" + std::to_string(i); }
inline std::string CrashForeverKey(int i) { return "f" + std::to_string(i); }
inline std::string CrashPayload(const std::string& key) { return "payload-of-" + key; }

}  // namespace idem::testing
