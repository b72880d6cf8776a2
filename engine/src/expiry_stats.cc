#include "expiry_stats.h"

#include <algorithm>

#include "coding.h"
#include "key_codec.h"
#include "record_codec.h"

namespace idem {

double ExpiryStats::ExpiredFraction(int64_t now_ms) const {
  if (records == 0 || samples.empty()) return 0.0;
  auto expired = std::upper_bound(samples.begin(), samples.end(), now_ms) - samples.begin();
  return static_cast<double>(records_expiring) / static_cast<double>(records) *
         static_cast<double>(expired) / static_cast<double>(samples.size());
}

std::string ExpiryStats::Encode() const {
  std::string out;
  coding::PutVarint64(&out, records);
  coding::PutVarint64(&out, records_expiring);
  coding::PutVarint64(&out, samples.size());
  for (int64_t s : samples) coding::PutFixed64(&out, static_cast<uint64_t>(s));
  return out;
}

std::optional<ExpiryStats> ExpiryStats::Decode(const std::string& encoded) {
  coding::Reader reader(encoded);
  ExpiryStats stats;
  uint64_t n = 0;
  if (!reader.GetVarint64(&stats.records) || !reader.GetVarint64(&stats.records_expiring) ||
      !reader.GetVarint64(&n) || n > kExpirySamples) {
    return std::nullopt;
  }
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t v = 0;
    if (!reader.GetFixed64(&v)) return std::nullopt;
    stats.samples.push_back(static_cast<int64_t>(v));
  }
  if (!std::is_sorted(stats.samples.begin(), stats.samples.end())) return std::nullopt;
  return stats;
}

namespace {

class ExpiryStatsCollector final : public rocksdb::TablePropertiesCollector {
 public:
  rocksdb::Status AddUserKey(const rocksdb::Slice& key, const rocksdb::Slice& value,
                             rocksdb::EntryType type, rocksdb::SequenceNumber /*seq*/,
                             uint64_t /*file_size*/) override {
    if (type != rocksdb::kEntryPut || IsMetaKey(std::string_view(key.data(), key.size()))) {
      return rocksdb::Status::OK();
    }
    stats_.records++;
    std::optional<int64_t> expiry = PeekExpiry(std::string_view(value.data(), value.size()));
    if (!expiry || *expiry == kNeverExpires) return rocksdb::Status::OK();
    // Reservoir sampling (Algorithm R) with a fixed-seed generator.
    uint64_t seen = ++stats_.records_expiring;
    if (stats_.samples.size() < kExpirySamples) {
      stats_.samples.push_back(*expiry);
    } else {
      uint64_t slot = NextRandom() % seen;
      if (slot < kExpirySamples) stats_.samples[slot] = *expiry;
    }
    return rocksdb::Status::OK();
  }

  rocksdb::Status Finish(rocksdb::UserCollectedProperties* properties) override {
    std::sort(stats_.samples.begin(), stats_.samples.end());
    properties->emplace(kExpiryStatsProperty, stats_.Encode());
    return rocksdb::Status::OK();
  }

  rocksdb::UserCollectedProperties GetReadableProperties() const override {
    return {{"idem.expiry.records", std::to_string(stats_.records)},
            {"idem.expiry.records_expiring", std::to_string(stats_.records_expiring)}};
  }
  const char* Name() const override { return "idem.ExpiryStatsCollector"; }

 private:
  uint64_t NextRandom() {  // splitmix64
    uint64_t z = (rng_state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  ExpiryStats stats_;
  uint64_t rng_state_ = 0x1d3e5;
};

}  // namespace

rocksdb::TablePropertiesCollector* ExpiryStatsCollectorFactory::CreateTablePropertiesCollector(
    rocksdb::TablePropertiesCollectorFactory::Context /*context*/) {
  return new ExpiryStatsCollector();
}

}  // namespace idem
