// AnchoredClock: the engine's own time, which does not jump while the process lives.
//
// The problem: the wall clock can be stepped at any moment (`date -s`, an NTP step, a VM resumed
// from a snapshot). Expiry, leases and the compaction filter all compare stored absolute times
// with "now", so a step forward ends leases whose holders are still working and lets compaction
// physically delete records that were live a moment before; a step back revives expired records
// and stretches leases.
//
// The mechanism: read the wall clock once, at start, and from then on advance with the monotonic
// clock, which is never stepped:
//   now = wall_at_start + (monotonic - monotonic_at_start)
// Engine time must still mean calendar time: expiries are stored as absolute times, compared
// after a restart against a freshly anchored clock, and shown to clients. So every
// `check_interval_ms` (of monotonic time; checked by whichever NowMillis call finds it due) the
// clock compares itself with the wall clock and slews towards it: over the next interval it runs
// up to `max_slew` faster or slower than the monotonic clock, as much as closes the gap.
//
// Why slew rather than re-anchor (or never converge):
// - Re-anchoring at once is a jump: the defect itself.
// - Never converging (until a restart) only defers the jump to the restart, an arbitrary moment
//   (a crash), where a forward difference applies all at once; and a backward difference would
//   become permanent, since a restart continues from the persisted high-water mark, never below.
// - Slewing bounds the damage by a rate: while converging, a lease of L ms granted by the engine
//   lasts at least L / (1 + max_slew) of real time (5 %: 30 s → 28.6 s, inside the usual
//   heartbeat margin of a third of the lease), a TTL is shortened or stretched by at most 5 %,
//   and engine time never goes back. chrony slews by up to 8.3 % (maxslewrate 83333 ppm) for
//   the same reason. A 1-hour step takes 20 hours to absorb; the log says so.
// A change of (wall - engine) between two checks larger than `step_threshold_ms` is a step: the
// log says which way, by how much, and that engine time keeps its own course; once the two agree
// again, the log says that too. Smaller differences (NTP's own slewing,
// the two clocks' drift) are absorbed silently.
//
// Cost: NowMillis() is one monotonic-clock read (a vDSO clock_gettime, no syscall) plus a few
// atomic loads (a seqlock, no read-modify-write); once per check interval one caller also reads
// the wall clock. Thread-safe; never blocks a caller except ContinueFrom's.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>

#include "idem/clock.h"
#include "idem/log.h"

namespace idem {

class AnchoredClock final : public Clock {
 public:
  struct Tuning {
    int64_t check_interval_ms = 1000;
    int64_t step_threshold_ms = 1000;
    int64_t max_slew_ppm = 50'000;  // 5 %
  };
  using Log = LogSink;

  // Anchors to `wall` now. `log` (required) receives the step reports.
  AnchoredClock(std::shared_ptr<Clock> wall, std::shared_ptr<Clock> monotonic, Log log,
                Tuning tuning);
  AnchoredClock(std::shared_ptr<Clock> wall, std::shared_ptr<Clock> monotonic, Log log)
      : AnchoredClock(std::move(wall), std::move(monotonic), std::move(log), Tuning()) {}

  int64_t NowMillis() const override;

  // From now on NowMillis() >= floor_ms: the high-water mark an earlier run persisted. When the
  // clock is behind it (the wall clock was set back, or the machine booted with a wrong clock),
  // engine time continues from the mark, logs so, and converges on the wall clock by slewing.
  void ContinueFrom(int64_t floor_ms);

  // Wall-clock steps detected (and logged) so far.
  uint64_t steps_detected() const { return steps_detected_.load(std::memory_order_relaxed); }

 private:
  // Engine time is piecewise linear in monotonic time: from (mono, engine) on, it advances with
  // the monotonic clock plus `correction` ms spread evenly over the next check interval.
  struct Segment {
    int64_t mono = 0;
    int64_t engine = 0;
    int64_t correction = 0;
  };
  int64_t EngineAt(const Segment& s, int64_t mono) const;
  Segment LoadSegment() const;           // only under write_mu_
  void Publish(const Segment& s) const;  // only under write_mu_
  void Check(int64_t due_mono) const;    // due_mono: a reading that found the check due

  const std::shared_ptr<Clock> wall_;
  const std::shared_ptr<Clock> monotonic_;
  const Log log_;
  const Tuning tuning_;
  const int64_t max_correction_ms_;  // per check interval

  // The current segment, behind a seqlock: readers retry while `seq_` is odd or changed.
  mutable std::atomic<uint64_t> seq_{0};
  mutable std::atomic<int64_t> seg_mono_{0};
  mutable std::atomic<int64_t> seg_engine_{0};
  mutable std::atomic<int64_t> seg_correction_{0};
  mutable std::atomic<int64_t> next_check_mono_{0};
  mutable std::atomic<uint64_t> steps_detected_{0};

  mutable std::mutex write_mu_;          // serializes writers of the segment (Check, ContinueFrom)
  mutable int64_t expected_offset_ = 0;  // guarded by write_mu_: wall - engine expected next check
  mutable bool diverged_ = false;        // guarded by write_mu_: a step was logged, not yet met
};

}  // namespace idem
