// Physically removes expired records during compaction.
//
// RocksDB's TTL contract holds here too: expired values are dropped in compaction ONLY, so every
// read checks expiry itself (LiveRecord in rocks_engine.cc) and this filter is purely about
// reclaiming space. It reads the same Clock as the reads, so "expired" means the same thing to
// both, and a test or simulation that advances a ManualClock sees the filter act without sleeping.
//
// Physical removal lags logical expiry by a grace (EngineOptions::expiry_grace_ms): a record is
// removed once it has been expired for the grace, so a clock that ran ahead for a moment (a step
// the engine's own time did not follow, a restart that continues a little behind the last run)
// cannot cost a record that is live again at the time the engine goes on from. With the
// engine's own time the bound is also the clock's persisted high-water mark: whatever the filter
// removed has been expired for the grace at any time a restart can continue from
// (clock_mark.h). A filter reads the clock once, when RocksDB creates it for a compaction: a
// record that expires during a long compaction is simply left for the next one.
//
// In a namespace that remembers keys (RetentionPolicy::remember_ms), an expired finished record
// is not removed but rewritten into its marker, which is removed in turn once the remember
// period has ended, with the same grace (remembered_key.h).
//
// A record whose value does not decode is kept: reads report it as Corruption, and deleting it
// here would destroy the evidence. Meta keys (fence reservation, clock mark) are never touched.
#pragma once

#include <memory>

#include <rocksdb/compaction_filter.h>

#include "clock_mark.h"
#include "idem/clock.h"
#include "remembered_key.h"

namespace idem {

// Records whose expiry is at or before this may be physically removed: `grace_ms` before the
// earlier of `now_ms` and the persisted mark (`mark` null: no mark, only now_ms counts).
int64_t RemovableUntil(int64_t now_ms, int64_t grace_ms, const ClockMark* mark);

class ExpiryCompactionFilterFactory final : public rocksdb::CompactionFilterFactory {
 public:
  // `mark` may be null (a clock supplied by the caller: no high-water mark).
  ExpiryCompactionFilterFactory(std::shared_ptr<Clock> clock, int64_t grace_ms,
                                std::shared_ptr<const ClockMark> mark, RememberPeriods remember)
      : clock_(std::move(clock)),
        grace_ms_(grace_ms),
        mark_(std::move(mark)),
        remember_(std::move(remember)) {}
  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context& context) override;
  const char* Name() const override { return "idem.ExpiryCompactionFilterFactory"; }

 private:
  std::shared_ptr<Clock> clock_;
  const int64_t grace_ms_;
  std::shared_ptr<const ClockMark> mark_;
  const RememberPeriods remember_;
};

}  // namespace idem
