// The delay models draw what docs/retention.md says they draw: counts, means and quantiles
// checked over many samples from a fixed seed, the callback schedule exactly, and seeds
// reproduce.
#include "delay_models.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "random.h"

namespace idem::retention {
namespace {

constexpr int kDraws = 200'000;

// Every parameter from the defaults, with the count forced to exactly `n` duplicates.
ModelParams Exactly(DelayModel model, int n) {
  ModelParams p = ModelParams::Defaults(model);
  p.dup_prob = 1;
  p.again_prob = 1;
  p.max_dups = n;
  return p;
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

TEST(RetentionRandomTest, SameSeedSameStreamDifferentSeedDifferentStream) {
  Random a(7), b(7), c(8);
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.NextU64();
    EXPECT_EQ(x, b.NextU64());
    EXPECT_NE(x, c.NextU64());
  }
}

TEST(RetentionRandomTest, DistributionsHaveTheirMoments) {
  Random r(1);
  std::vector<double> u, e, n;
  for (int i = 0; i < kDraws; ++i) {
    u.push_back(r.Uniform());
    e.push_back(r.Exponential(3.0));
    n.push_back(r.Normal());
  }
  EXPECT_NEAR(0.5, Mean(u), 0.005);
  EXPECT_GE(*std::min_element(u.begin(), u.end()), 0.0);
  EXPECT_LT(*std::max_element(u.begin(), u.end()), 1.0);
  EXPECT_NEAR(3.0, Mean(e), 0.05);
  EXPECT_NEAR(3.0 * std::log(2.0), Quantile(e, 0.5), 0.05);
  EXPECT_NEAR(0.0, Mean(n), 0.01);
  double var = 0;
  for (double x : n) var += x * x;
  EXPECT_NEAR(1.0, var / kDraws, 0.02);
  EXPECT_NEAR(1.2816, Quantile(n, 0.9), 0.02);
}

TEST(RetentionDelayModelTest, CallbackScheduleIsTheCumulativeSumOfPerStepIntervals) {
  Random r(1);
  std::vector<int64_t> delays;
  DrawDuplicateDelays(DelayModel::kCallbacks, Exactly(DelayModel::kCallbacks, 11), r, &delays);
  const int64_t s = 1000, m = 60 * s, h = 60 * m;
  const std::vector<int64_t> expected = {
      15 * s,    30 * s,        1 * m,         4 * m,          14 * m,        34 * m,
      h + 4 * m, 2 * h + 4 * m, 4 * h + 4 * m, 10 * h + 4 * m, 25 * h + 4 * m};
  EXPECT_EQ(expected, delays);
  DrawDuplicateDelays(DelayModel::kCallbacks, Exactly(DelayModel::kCallbacks, 3), r, &delays);
  EXPECT_EQ(std::vector<int64_t>(expected.begin(), expected.begin() + 3), delays);
}

TEST(RetentionDelayModelTest, CountIsATruncatedGeometric) {
  ModelParams p = ModelParams::Defaults(DelayModel::kCallbacks);  // 0.3, 0.7, max 11
  Random r(2);
  std::vector<int64_t> delays;
  int with_any = 0;
  double total = 0;
  int at_max = 0;
  for (int i = 0; i < kDraws; ++i) {
    DrawDuplicateDelays(DelayModel::kCallbacks, p, r, &delays);
    with_any += delays.empty() ? 0 : 1;
    total += static_cast<double>(delays.size());
    at_max += delays.size() == 11 ? 1 : 0;
    ASSERT_LE(delays.size(), 11u);
  }
  EXPECT_NEAR(0.3, static_cast<double>(with_any) / kDraws, 0.005);
  // E[N | N >= 1] = (1 - a^max) / (1 - a), P(N = max | N >= 1) = a^(max-1).
  EXPECT_NEAR((1 - std::pow(0.7, 11)) / 0.3, total / with_any, 0.05);
  EXPECT_NEAR(std::pow(0.7, 10), static_cast<double>(at_max) / with_any, 0.004);
}

TEST(RetentionDelayModelTest, RetryWaitsAreFullJitterExponentialBackoff) {
  ModelParams p = Exactly(DelayModel::kRetry, 4);
  p.base_ms = 1000;
  p.factor = 3;
  p.cap_ms = 5000;  // the 3rd and 4th backoffs (9s, 27s) are capped
  Random r(3);
  std::vector<int64_t> delays;
  std::vector<std::vector<double>> waits(4);
  for (int i = 0; i < kDraws / 4; ++i) {
    DrawDuplicateDelays(DelayModel::kRetry, p, r, &delays);
    ASSERT_EQ(4u, delays.size());
    int64_t previous = 0;
    for (size_t k = 0; k < 4; ++k) {
      ASSERT_GT(delays[k], previous);
      waits[k].push_back(static_cast<double>(delays[k] - previous));
      previous = delays[k];
    }
  }
  // Wait k ~ U(0, min(cap, base * factor^(k-1))): mean is half the backoff.
  const double backoff[] = {1000, 3000, 5000, 5000};
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_NEAR(backoff[k] / 2, Mean(waits[k]), backoff[k] * 0.01) << "retry " << k + 1;
    EXPECT_LE(*std::max_element(waits[k].begin(), waits[k].end()), backoff[k] + 1);
    EXPECT_NEAR(backoff[k] * 0.9, Quantile(waits[k], 0.9), backoff[k] * 0.01);
  }
}

TEST(RetentionDelayModelTest, RedeliveryFollowsVisibilityTimeoutsThenARedrive) {
  ModelParams p = Exactly(DelayModel::kRedelivery, 2);
  const double v = p.visibility_ms, poll = p.poll_ms;
  Random r(4);
  std::vector<int64_t> delays;
  std::vector<double> first, redrive;
  for (int i = 0; i < kDraws / 4; ++i) {
    DrawDuplicateDelays(DelayModel::kRedelivery, p, r, &delays);
    ASSERT_GE(delays.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      ASSERT_GE(delays[k], (k + 1) * v);
      ASSERT_LE(delays[k], (k + 1) * v + poll);
    }
    first.push_back(static_cast<double>(delays[0]));
    if (delays.size() == 3) redrive.push_back(static_cast<double>(delays[2]) - 2 * v);
  }
  EXPECT_NEAR(v + poll / 2, Mean(first), poll * 0.02);
  // Dead-lettered after max_dups receives, redriven with probability redrive_prob (0.5).
  EXPECT_NEAR(0.5, static_cast<double>(redrive.size()) / static_cast<double>(first.size()), 0.01);
  EXPECT_NEAR((p.redrive_min_ms + p.redrive_max_ms) / 2, Mean(redrive), p.redrive_max_ms * 0.01);
  EXPECT_GE(*std::min_element(redrive.begin(), redrive.end()), p.redrive_min_ms);
  EXPECT_LE(*std::max_element(redrive.begin(), redrive.end()), p.redrive_max_ms + 1);
}

TEST(RetentionDelayModelTest, HumanRetriesAreLogNormal) {
  ModelParams p = Exactly(DelayModel::kHuman, 1);  // median 20 min, sigma 1.5
  Random r(5);
  std::vector<int64_t> delays;
  std::vector<double> d;
  for (int i = 0; i < kDraws; ++i) {
    DrawDuplicateDelays(DelayModel::kHuman, p, r, &delays);
    ASSERT_EQ(1u, delays.size());
    d.push_back(static_cast<double>(delays[0]));
  }
  const double median = p.median_ms, sigma = p.sigma;
  EXPECT_NEAR(median, Quantile(d, 0.5), median * 0.02);
  EXPECT_NEAR(median * std::exp(sigma * 1.2816), Quantile(d, 0.9),
              median * std::exp(sigma * 1.2816) * 0.03);
  EXPECT_NEAR(median * std::exp(sigma * 2.3263), Quantile(d, 0.99),
              median * std::exp(sigma * 2.3263) * 0.06);
  EXPECT_NEAR(median * std::exp(sigma * sigma / 2), Mean(d),
              median * std::exp(sigma * sigma / 2) * 0.05);
}

TEST(RetentionDelayModelTest, SeveralHumanRetriesComeSorted) {
  ModelParams p = Exactly(DelayModel::kHuman, 5);
  Random r(6);
  std::vector<int64_t> delays;
  for (int i = 0; i < 1000; ++i) {
    DrawDuplicateDelays(DelayModel::kHuman, p, r, &delays);
    ASSERT_EQ(5u, delays.size());
    ASSERT_TRUE(std::is_sorted(delays.begin(), delays.end()));
    ASSERT_GT(delays.front(), 0);
  }
}

TEST(RetentionDelayModelTest, SameSeedSameDelays) {
  for (DelayModel m : kAllModels) {
    Random a(9), b(9);
    std::vector<int64_t> x, y;
    for (int i = 0; i < 1000; ++i) {
      DrawDuplicateDelays(m, ModelParams::Defaults(m), a, &x);
      DrawDuplicateDelays(m, ModelParams::Defaults(m), b, &y);
      ASSERT_EQ(x, y) << ModelName(m);
    }
  }
}

TEST(RetentionModelParamSetTest, SetsKnownParametersAndNamesWhatIsWrong) {
  ModelParamSet set;
  ASSERT_TRUE(set.Set("callbacks.again_prob=0.5").ok());
  EXPECT_EQ(0.5, set.Get(DelayModel::kCallbacks).again_prob);
  EXPECT_EQ(0.7, ModelParamSet().Get(DelayModel::kCallbacks).again_prob);
  ASSERT_TRUE(set.Set("human.median_ms=60000").ok());
  EXPECT_EQ(60000, set.Get(DelayModel::kHuman).median_ms);

  EXPECT_NE(std::string::npos, set.Set("nope.dup_prob=1").message().find("unknown model"));
  EXPECT_NE(std::string::npos, set.Set("retry.median_ms=1").message().find("unknown parameter"));
  EXPECT_NE(std::string::npos, set.Set("retry.dup_prob=1.5").message().find("probability"));
  EXPECT_NE(std::string::npos, set.Set("retry.factor=x").message().find("bad value"));
  EXPECT_NE(std::string::npos, set.Set("callbacks.max_dups=12").message().find("max_dups"));
  EXPECT_NE(std::string::npos, set.Set("retry").message().find("MODEL.NAME=VALUE"));
}

}  // namespace
}  // namespace idem::retention
