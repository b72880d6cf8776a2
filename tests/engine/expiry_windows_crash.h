// What expiry_windows_test's crash test and its child process (expiry_windows_crash_child.cc)
// agree on: the engine's options, the records of the database and the clock the child runs on.
//
// The test writes every record at kCrashStartMs into a database under the expiry-window layout,
// once, and gives each run a copy. The child opens the copy, reports kCrashStartMs, then moves the
// clock kCrashStepMs at a time, reporting each value BEFORE it calls ReclaimExpired at it, so one
// window becomes droppable per step. The test kills it during one of those drops, and knows the
// latest clock any drop ran at.
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
inline constexpr int kCrashSteps = 30;  // the last window can be dropped from step 27 on
inline constexpr int kCrashRecords = 250;
inline constexpr int kCrashForeverRecords = 10;
inline constexpr const char* kCrashNs = "crash";

inline EngineOptions CrashEngineOptions(std::shared_ptr<Clock> clock) {
  EngineOptions options;
  options.clock = std::move(clock);
  options.layout = EngineOptions::Layout::kExpiryWindows;
  options.expiry_window_ms = kCrashWidthMs;
  options.expiry_grace_ms = kCrashGraceMs;
  options.reclaim_interval_ms = 0;
  options.durability = Durability::kAsync;  // the records are written before the child starts
  options.retention[kCrashNs] = RetentionPolicy{60'000, 3600'000, /*allow_forever=*/true};
  return options;
}

// Record i (0 <= i < kCrashRecords) lives 1..26 s from kCrashStartMs: about ten per window.
inline int64_t CrashTtlMs(int i) { return 1000 + (static_cast<int64_t>(i) * 97) % 25'000; }
inline std::string CrashKey(int i) { return "k" + std::to_string(i); }
inline std::string CrashForeverKey(int i) { return "f" + std::to_string(i); }
inline std::string CrashPayload(const std::string& key) { return "payload-of-" + key; }

}  // namespace idem::testing
