// Per-table-file expiry statistics, so the reclaimer can tell which files hold mostly expired
// records without reading them.
//
// When RocksDB writes a table file (flush or compaction), ExpiryStatsCollector sees every entry
// and stores a user property "idem.expiry":
//   varint64 records            record values in the file (meta keys and deletions excluded)
//   varint64 records_expiring   of those, records with an expiry
//   varint64 n                  number of samples (<= kExpirySamples)
//   n x fixed64                 expiry times, sorted: a uniform reservoir sample of the expiring
//                               records' expiries (deterministic seed, so runs reproduce)
// The expired fraction of a file at time T is estimated as
//   records_expiring / records * (samples <= T) / n.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <rocksdb/table_properties.h>

namespace idem {

inline constexpr const char* kExpiryStatsProperty = "idem.expiry";
inline constexpr size_t kExpirySamples = 64;

struct ExpiryStats {
  uint64_t records = 0;
  uint64_t records_expiring = 0;
  std::vector<int64_t> samples;  // sorted

  // Estimated fraction (0..1) of the file's records that have expired at `now_ms`.
  double ExpiredFraction(int64_t now_ms) const;
  std::string Encode() const;
  static std::optional<ExpiryStats> Decode(const std::string& encoded);
};

class ExpiryStatsCollectorFactory final : public rocksdb::TablePropertiesCollectorFactory {
 public:
  rocksdb::TablePropertiesCollector* CreateTablePropertiesCollector(
      rocksdb::TablePropertiesCollectorFactory::Context context) override;
  const char* Name() const override { return "idem.ExpiryStatsCollectorFactory"; }
};

}  // namespace idem
