// Clock: the only source of "now" for the engine. Expiry on read, leases and the compaction
// filter all read the same Clock, so tests and simulations drive time with ManualClock instead
// of sleeping. The same interface feeds the engine's own time (EngineOptions::clock left null)
// with its two sources, the wall clock and the monotonic clock, so tests drive those with
// ManualClocks too.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace idem {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch. Record expiry is stored as an absolute time in this unit,
  // so the engine's clock must mean the same across restarts: calendar time, not a monotonic
  // clock's. (MonotonicClock, a source only, counts from an arbitrary point instead.)
  virtual int64_t NowMillis() const = 0;
};

// The system's wall clock (CLOCK_REALTIME). It can be stepped at any time, forwards or back.
class SystemClock final : public Clock {
 public:
  int64_t NowMillis() const override;
  static std::shared_ptr<Clock> Default();
};

// The system's monotonic clock (CLOCK_MONOTONIC): milliseconds since an arbitrary point (the
// boot), never stepped, so only differences between two readings mean anything. A source for
// the engine's time, not a Clock to hand the engine as EngineOptions::clock.
class MonotonicClock final : public Clock {
 public:
  int64_t NowMillis() const override;
  static std::shared_ptr<Clock> Default();
};

// A clock that only moves when told to. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'700'000'000'000) : now_ms_(start_ms) {}
  int64_t NowMillis() const override { return now_ms_.load(std::memory_order_acquire); }
  void Advance(int64_t delta_ms) { now_ms_.fetch_add(delta_ms, std::memory_order_acq_rel); }
  void Set(int64_t now_ms) { now_ms_.store(now_ms, std::memory_order_release); }

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace idem
