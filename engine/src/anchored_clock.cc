#include "anchored_clock.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace idem {
namespace {

// "+3600.000 s"
std::string FormatSigned(int64_t ms) {
  char buf[48];
  const uint64_t magnitude = ms < 0 ? 0 - static_cast<uint64_t>(ms) : static_cast<uint64_t>(ms);
  std::snprintf(buf, sizeof buf, "%c%" PRIu64 ".%03u s", ms < 0 ? '-' : '+', magnitude / 1000,
                static_cast<unsigned>(magnitude % 1000));
  return buf;
}

// How long slewing at `ppm` takes to absorb `offset_ms`: "40 s", "17 min", "20.0 h", "20.0 days".
std::string TimeToConverge(int64_t offset_ms, int64_t ppm) {
  const double seconds =
      static_cast<double>(std::llabs(offset_ms)) / 1000.0 * 1e6 / static_cast<double>(ppm);
  char buf[48];
  if (seconds < 120) {
    std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  } else if (seconds < 2 * 3600) {
    std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
  } else if (seconds < 48 * 3600) {
    std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f days", seconds / 86400);
  }
  return buf;
}

}  // namespace

AnchoredClock::AnchoredClock(std::shared_ptr<Clock> wall, std::shared_ptr<Clock> monotonic, Log log,
                             Tuning tuning)
    : wall_(std::move(wall)),
      monotonic_(std::move(monotonic)),
      log_(std::move(log)),
      tuning_(tuning),
      max_correction_ms_(tuning.check_interval_ms * tuning.max_slew_ppm / 1'000'000) {
  std::lock_guard<std::mutex> lock(write_mu_);
  const int64_t mono = monotonic_->NowMillis();
  Publish(Segment{mono, wall_->NowMillis(), 0});
  next_check_mono_.store(mono + tuning_.check_interval_ms, std::memory_order_relaxed);
}

int64_t AnchoredClock::EngineAt(const Segment& s, int64_t mono) const {
  const int64_t elapsed = std::max<int64_t>(0, mono - s.mono);
  if (s.correction == 0) return s.engine + elapsed;  // the usual case: no division
  // |correction| < interval, so engine time never decreases, not even by integer rounding.
  return s.engine + elapsed +
         s.correction * std::min(elapsed, tuning_.check_interval_ms) / tuning_.check_interval_ms;
}

AnchoredClock::Segment AnchoredClock::LoadSegment() const {
  return Segment{seg_mono_.load(std::memory_order_relaxed),
                 seg_engine_.load(std::memory_order_relaxed),
                 seg_correction_.load(std::memory_order_relaxed)};
}

void AnchoredClock::Publish(const Segment& s) const {
  seq_.fetch_add(1, std::memory_order_relaxed);  // odd: readers retry
  std::atomic_thread_fence(std::memory_order_release);
  seg_mono_.store(s.mono, std::memory_order_relaxed);
  seg_engine_.store(s.engine, std::memory_order_relaxed);
  seg_correction_.store(s.correction, std::memory_order_relaxed);
  seq_.fetch_add(1, std::memory_order_release);  // even again
}

int64_t AnchoredClock::NowMillis() const {
  Segment s;
  int64_t mono;
  while (true) {
    const uint64_t before = seq_.load(std::memory_order_acquire);
    s = LoadSegment();
    // Read after the segment: a segment published before this read starts at or before it.
    mono = monotonic_->NowMillis();
    std::atomic_thread_fence(std::memory_order_acquire);
    if ((before & 1) == 0 && seq_.load(std::memory_order_relaxed) == before) break;
    std::this_thread::yield();  // a writer is publishing (a few stores, once per interval)
  }
  const int64_t now = EngineAt(s, mono);
  // A check publishes a segment that starts at or after this reading, on the old segment's
  // line: returning `now` stays consistent with it.
  if (mono >= next_check_mono_.load(std::memory_order_relaxed)) Check(mono);
  return now;
}

void AnchoredClock::Check(int64_t due_mono) const {
  std::unique_lock<std::mutex> lock(write_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another caller is checking
  if (due_mono < next_check_mono_.load(std::memory_order_relaxed)) return;  // one just did
  const int64_t wall = wall_->NowMillis();
  // The new segment starts at a monotonic reading taken after readers are held off (seq_ odd),
  // not at `due_mono`: a reader still on the old segment may have read the monotonic clock
  // after `due_mono`, and had the new segment started earlier, the same instant would read
  // lower through it whenever it runs slower than the old one (engine time going back).
  seq_.fetch_add(1, std::memory_order_relaxed);  // odd: readers retry
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const int64_t mono = monotonic_->NowMillis();
  const Segment s = LoadSegment();
  const int64_t now = EngineAt(s, mono);
  const int64_t offset = wall - now;  // > 0: the engine is behind the wall clock
  const int64_t correction = std::clamp(offset, -max_correction_ms_, max_correction_ms_);
  seg_mono_.store(mono, std::memory_order_relaxed);
  seg_engine_.store(now, std::memory_order_relaxed);
  seg_correction_.store(correction, std::memory_order_relaxed);
  seq_.fetch_add(1, std::memory_order_release);  // even again
  next_check_mono_.store(mono + tuning_.check_interval_ms, std::memory_order_relaxed);
  const int64_t step = offset - expected_offset_;
  expected_offset_ = offset - correction;
  // Logged after publishing: readers do not wait for the log.
  if (std::llabs(step) > tuning_.step_threshold_ms) {
    diverged_ = true;
    steps_detected_.fetch_add(1, std::memory_order_relaxed);
    const double slew_percent = static_cast<double>(tuning_.max_slew_ppm) / 1e4;
    char tail[256];
    if (offset > 0) {
      std::snprintf(tail, sizeof tail,
                    "engine time (expiry, leases, compaction) does not jump: it runs up to %.1f %% "
                    "fast until it meets the wall clock, %s behind it now (about %s)",
                    slew_percent, FormatSigned(offset).c_str() + 1,
                    TimeToConverge(offset, tuning_.max_slew_ppm).c_str());
    } else {
      std::snprintf(tail, sizeof tail,
                    "engine time (expiry, leases, compaction) does not go back: it runs up to "
                    "%.1f %% slow until the wall clock meets it, %s ahead of it now (about %s)",
                    slew_percent, FormatSigned(offset).c_str() + 1,
                    TimeToConverge(offset, tuning_.max_slew_ppm).c_str());
    }
    log_(LogRecord(LogLevel::kWarn, "clock_stepped",
                   "wall clock stepped by " + FormatSigned(step) + " (it reads " +
                       FormatUtcMillis(wall) + ", engine time is " + FormatUtcMillis(now) + "); " +
                       tail)
             .With("step_ms", step)
             .With("offset_ms", offset));
  } else if (diverged_ && std::llabs(offset) <= max_correction_ms_) {
    diverged_ = false;  // this check's correction closes the gap
    log_(LogRecord(LogLevel::kInfo, "clock_agrees",
                   "engine time and the wall clock agree again (" + FormatUtcMillis(wall) + ")"));
  }
}

void AnchoredClock::ContinueFrom(int64_t floor_ms) {
  std::lock_guard<std::mutex> lock(write_mu_);
  const int64_t mono = monotonic_->NowMillis();
  const int64_t now = EngineAt(LoadSegment(), mono);
  if (now >= floor_ms) return;
  const int64_t wall = wall_->NowMillis();
  expected_offset_ = wall - floor_ms;
  Publish(Segment{mono, floor_ms, 0});
  next_check_mono_.store(mono + tuning_.check_interval_ms, std::memory_order_relaxed);
  if (floor_ms - wall <= tuning_.step_threshold_ms) return;  // a quick restart, NTP slewing
  diverged_ = true;
  char line[512];
  std::snprintf(line, sizeof line,
                "the wall clock (%s) is %s behind the time this database has already reached "
                "(%s, its high-water mark): engine time continues from the mark and runs up to "
                "%.1f %% slow until the wall clock meets it (about %s)",
                FormatUtcMillis(wall).c_str(), FormatSigned(floor_ms - wall).c_str() + 1,
                FormatUtcMillis(floor_ms).c_str(), static_cast<double>(tuning_.max_slew_ppm) / 1e4,
                TimeToConverge(floor_ms - wall, tuning_.max_slew_ppm).c_str());
  log_(LogRecord(LogLevel::kWarn, "clock_behind_mark", line).With("behind_ms", floor_ms - wall));
}

}  // namespace idem
