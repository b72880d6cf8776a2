// LatencyHistogram: HDR-style log-linear buckets over microseconds.
//
// Values 0..2*kSubBuckets-1 get one bucket each (exact); above that, every power-of-two range
// [2^k, 2^(k+1)) is split into kSubBuckets equal buckets, so a recorded value is known to within
// 1/kSubBuckets (< 0.8 %) of itself at any magnitude, from 1 us to hours, in a fixed 7.4k-entry
// array. Recording is a couple of bit operations and one increment: cheap enough for the load
// generator's hot loop. Percentiles report the highest value of the bucket they fall in (an upper
// bound, as HdrHistogram does), clamped to the exact maximum.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace idem::bench {

class LatencyHistogram {
 public:
  static constexpr int kSubBucketBits = 7;
  static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;  // 128
  // 256 exact buckets below 2^8, then 128 per magnitude 2^8 .. 2^63.
  static constexpr size_t kBucketCount = (64 - kSubBucketBits + 1) * kSubBuckets;

  void Record(uint64_t micros);
  void Merge(const LatencyHistogram& other);
  void Reset();

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }
  // The smallest recorded bucket's upper bound below which at least `q` (0..1] of the values
  // lie. 0 when empty; Percentile(1.0) == max().
  uint64_t Percentile(double q) const;

  // Bucket arithmetic, exposed for tests.
  static size_t BucketOf(uint64_t micros);
  static uint64_t BucketLowest(size_t bucket);
  static uint64_t BucketHighest(size_t bucket);

 private:
  std::array<uint64_t, kBucketCount> counts_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace idem::bench
