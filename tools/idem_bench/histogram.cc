#include "histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace idem::bench {

// Bucket layout: values below 2*kSubBuckets (256) map to themselves. A larger value v with its
// highest set bit at position m (m >= 8) keeps its top kSubBucketBits+1 bits: shift = m - 7,
// sub = v >> shift (in [128, 256)), bucket = (shift + 1) * 128 + (sub - 128). Each magnitude
// thus adds 128 buckets of width 2^shift.
size_t LatencyHistogram::BucketOf(uint64_t micros) {
  if (micros < 2 * kSubBuckets) return static_cast<size_t>(micros);
  const int magnitude = 63 - std::countl_zero(micros);  // >= 8
  const int shift = magnitude - kSubBucketBits;         // >= 1
  const uint64_t sub = micros >> shift;                 // in [128, 256)
  return static_cast<size_t>((shift + 1) * kSubBuckets + (sub - kSubBuckets));
}

uint64_t LatencyHistogram::BucketLowest(size_t bucket) {
  if (bucket < 2 * kSubBuckets) return bucket;
  const uint64_t shift = bucket / kSubBuckets - 1;
  const uint64_t sub = bucket % kSubBuckets + kSubBuckets;
  return sub << shift;
}

uint64_t LatencyHistogram::BucketHighest(size_t bucket) {
  if (bucket < 2 * kSubBuckets) return bucket;
  const uint64_t shift = bucket / kSubBuckets - 1;
  return BucketLowest(bucket) + ((uint64_t{1} << shift) - 1);
}

void LatencyHistogram::Record(uint64_t micros) {
  ++counts_[BucketOf(micros)];
  ++count_;
  sum_ += micros;
  min_ = std::min(min_, micros);
  max_ = std::max(max_, micros);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < kBucketCount; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void LatencyHistogram::Reset() { *this = LatencyHistogram(); }

uint64_t LatencyHistogram::Percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The rank of the value asked for, 1-based: at least one value.
  const uint64_t rank =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (size_t i = 0; i < kBucketCount; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(BucketHighest(i), max_);
  }
  return max_;
}

}  // namespace idem::bench
