#include "key_distribution.h"

#include <algorithm>
#include <map>
#include <vector>

#include <gtest/gtest.h>

namespace idem::bench {
namespace {

TEST(Rng, SameSeedSameSequenceAndBelowStaysInRange) {
  Rng a(7), b(7), c(8);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.Next(), b.Next());
  EXPECT_NE(Rng(7).Next(), c.Next());
  Rng r(1);
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_LT(r.Below(10), 10u);
    const double d = r.NextDouble();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
  }
}

TEST(KeyChooser, UniformCoversTheKeySpaceEvenly) {
  auto chooser = MakeKeyChooser(Distribution::kUniform, 100);
  Rng rng(3);
  std::vector<int> counts(100);
  for (int i = 0; i < 100'000; ++i) {
    const uint64_t k = chooser->Next(rng);
    ASSERT_LT(k, 100u);
    ++counts[k];
  }
  // Each key expects 1000 draws; sd ~ 31.
  for (int c : counts) {
    EXPECT_GT(c, 850);
    EXPECT_LT(c, 1150);
  }
}

TEST(KeyChooser, ZipfianIsSkewedAndStaysInRange) {
  const uint64_t n = 10'000;
  auto chooser = MakeKeyChooser(Distribution::kZipfian, n, 0.99);
  Rng rng(5);
  std::map<uint64_t, int> counts;
  const int draws = 200'000;
  for (int i = 0; i < draws; ++i) {
    const uint64_t k = chooser->Next(rng);
    ASSERT_LT(k, n);
    ++counts[k];
  }
  std::vector<int> sorted;
  for (auto& [k, c] : counts) sorted.push_back(c);
  std::sort(sorted.rbegin(), sorted.rend());
  // With theta 0.99 over 10k keys, P(rank 1) = 1/zeta(10k) ~ 0.10; the top 1% of keys take
  // well over a third of the draws, while uniform would give them 1%.
  EXPECT_GT(sorted[0], draws / 20);
  int top = 0;
  for (size_t i = 0; i < n / 100 && i < sorted.size(); ++i) top += sorted[i];
  EXPECT_GT(top, draws / 3);
  // The hottest key is not simply key 0: ranks are scrambled.
  EXPECT_NE(counts.begin()->second, sorted[0]);
}

TEST(KeyChooser, DegenerateSizes) {
  Rng rng(1);
  EXPECT_EQ(0u, MakeKeyChooser(Distribution::kZipfian, 1)->Next(rng));
  EXPECT_EQ(0u, MakeKeyChooser(Distribution::kUniform, 0)->Next(rng));
}

TEST(Distribution, ParsesNames) {
  EXPECT_EQ(Distribution::kUniform, *ParseDistribution("uniform"));
  EXPECT_EQ(Distribution::kZipfian, *ParseDistribution("zipfian"));
  EXPECT_FALSE(ParseDistribution("gaussian").ok());
}

}  // namespace
}  // namespace idem::bench
