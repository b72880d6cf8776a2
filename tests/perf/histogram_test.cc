#include "histogram.h"

#include <cstdint>
#include <random>

#include <gtest/gtest.h>

namespace idem::bench {
namespace {

TEST(LatencyHistogram, EmptyReportsZeros) {
  LatencyHistogram h;
  EXPECT_EQ(0u, h.count());
  EXPECT_EQ(0u, h.Percentile(0.5));
  EXPECT_EQ(0u, h.max());
  EXPECT_EQ(0u, h.min());
}

TEST(LatencyHistogram, SmallValuesAreExact) {
  for (uint64_t v = 0; v < 256; ++v) {
    EXPECT_EQ(v, LatencyHistogram::BucketOf(v));
    EXPECT_EQ(v, LatencyHistogram::BucketLowest(v));
    EXPECT_EQ(v, LatencyHistogram::BucketHighest(v));
  }
}

TEST(LatencyHistogram, BucketsAreContiguousAndWithinOnePercent) {
  // Every bucket starts right after the previous one ends, and is at most 1/128 of its value wide.
  for (size_t b = 1; b < LatencyHistogram::kBucketCount; ++b) {
    ASSERT_EQ(LatencyHistogram::BucketHighest(b - 1) + 1, LatencyHistogram::BucketLowest(b)) << b;
    const uint64_t lo = LatencyHistogram::BucketLowest(b);
    const uint64_t width = LatencyHistogram::BucketHighest(b) - lo + 1;
    if (lo < 256) {
      ASSERT_EQ(1u, width) << b;  // exact
    } else {
      ASSERT_LE(width * 128, lo) << b;
    }
  }
  EXPECT_EQ(UINT64_MAX, LatencyHistogram::BucketHighest(LatencyHistogram::kBucketCount - 1));
}

TEST(LatencyHistogram, ValuesLandInTheirBucket) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 100'000; ++i) {
    const uint64_t v = rng() >> (rng() % 64);
    const size_t b = LatencyHistogram::BucketOf(v);
    ASSERT_LT(b, LatencyHistogram::kBucketCount);
    ASSERT_LE(LatencyHistogram::BucketLowest(b), v);
    ASSERT_GE(LatencyHistogram::BucketHighest(b), v);
  }
}

TEST(LatencyHistogram, PercentilesOfOneToTenThousand) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 10'000; ++v) h.Record(v);
  EXPECT_EQ(10'000u, h.count());
  EXPECT_EQ(1u, h.min());
  EXPECT_EQ(10'000u, h.max());
  EXPECT_DOUBLE_EQ(5000.5, h.mean());
  // Upper bound of the bucket holding the exact percentile: within 1/128 above it.
  auto near = [](uint64_t got, uint64_t exact) {
    return got >= exact && got <= exact + exact / 128;
  };
  EXPECT_PRED2(near, h.Percentile(0.5), 5'000u);
  EXPECT_PRED2(near, h.Percentile(0.9), 9'000u);
  EXPECT_PRED2(near, h.Percentile(0.99), 9'900u);
  EXPECT_PRED2(near, h.Percentile(0.999), 9'990u);
  EXPECT_EQ(10'000u, h.Percentile(1.0));
  EXPECT_EQ(1u, h.Percentile(0.0));
}

TEST(LatencyHistogram, OneOutlierIsTheMaxAndOnlyTheTopPercentiles) {
  LatencyHistogram h;
  for (int i = 0; i < 999; ++i) h.Record(100);
  h.Record(5'000'000);  // a 5 s stall
  EXPECT_EQ(100u, h.Percentile(0.5));
  EXPECT_EQ(100u, h.Percentile(0.999));
  EXPECT_EQ(5'000'000u, h.Percentile(1.0));
  EXPECT_EQ(5'000'000u, h.max());
}

TEST(LatencyHistogram, MergeEqualsRecordingEverything) {
  LatencyHistogram a, b, all;
  for (uint64_t v = 0; v < 5'000; ++v) {
    (v % 3 ? a : b).Record(v * 37);
    all.Record(v * 37);
  }
  a.Merge(b);
  EXPECT_EQ(all.count(), a.count());
  EXPECT_EQ(all.max(), a.max());
  EXPECT_EQ(all.min(), a.min());
  for (double q : {0.1, 0.5, 0.9, 0.99, 0.999}) EXPECT_EQ(all.Percentile(q), a.Percentile(q));
  a.Reset();
  EXPECT_EQ(0u, a.count());
}

}  // namespace
}  // namespace idem::bench
