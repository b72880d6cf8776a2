// Physically removes expired records during compaction.
//
// RocksDB's TTL contract holds here too: expired values are dropped in compaction ONLY, so every
// read checks expiry itself (engine.cc) and this filter is purely about reclaiming space. It
// reads the same Clock as the reads, so "expired" means the same thing to both, and a test or
// simulation that advances a ManualClock sees the filter act without sleeping.
//
// A record whose value does not decode is kept: reads report it as Corruption, and deleting it
// here would destroy the evidence. Meta keys (fence reservation) are never touched.
#pragma once

#include <memory>

#include <rocksdb/compaction_filter.h>

#include "idem/clock.h"

namespace idem {

class ExpiryCompactionFilterFactory final : public rocksdb::CompactionFilterFactory {
 public:
  explicit ExpiryCompactionFilterFactory(std::shared_ptr<Clock> clock) : clock_(std::move(clock)) {}
  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context& context) override;
  const char* Name() const override { return "idem.ExpiryCompactionFilterFactory"; }

 private:
  std::shared_ptr<Clock> clock_;
};

}  // namespace idem
