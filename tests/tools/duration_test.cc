#include "duration.h"

#include <gtest/gtest.h>

namespace idem {
namespace {

TEST(Duration, ParsesEveryUnitAndSums) {
  EXPECT_EQ(500, *ParseDurationMs("500ms"));
  EXPECT_EQ(30 * kSecond, *ParseDurationMs("30s"));
  EXPECT_EQ(15 * kMinute, *ParseDurationMs("15m"));
  EXPECT_EQ(24 * kHour, *ParseDurationMs("24h"));
  EXPECT_EQ(7 * kDay, *ParseDurationMs("7d"));
  EXPECT_EQ(90 * kMinute, *ParseDurationMs("1h30m"));
  EXPECT_EQ(kDay + 2 * kHour + 250, *ParseDurationMs("1d2h250ms"));
  EXPECT_EQ(0, *ParseDurationMs("0s"));
}

TEST(Duration, PositiveRejectsZero) {
  EXPECT_EQ(kSecond, *ParsePositiveDurationMs("1s"));
  Result<int64_t> zero = ParsePositiveDurationMs("0ms");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(std::string::npos, zero.status().message().find("positive"));
}

TEST(Duration, RejectsMalformedInputNamingIt) {
  for (std::string_view bad :
       {"", "10", "ms", "-5s", "5 s", "5sec", "1.5h", "5S", "s5", "1h-", "1hh",
        "99999999999999999999d", "106751991168d", "9223372036854775807ms1ms"}) {
    Result<int64_t> r = ParseDurationMs(bad);
    ASSERT_TRUE(r.status().IsInvalidArgument()) << bad;
    EXPECT_NE(std::string::npos, r.status().message().find("\"" + std::string(bad) + "\"")) << bad;
  }
}

TEST(Duration, FormatsExactlyWithTheLargestUnits) {
  EXPECT_EQ("1m30s", FormatDurationMs(90 * kSecond));
  EXPECT_EQ("15m", FormatDurationMs(15 * kMinute));
  EXPECT_EQ("7d", FormatDurationMs(7 * kDay));
  EXPECT_EQ("250ms", FormatDurationMs(250));
  EXPECT_EQ("0s", FormatDurationMs(0));
  EXPECT_EQ("-1h", FormatDurationMs(-kHour));
  for (int64_t ms : {int64_t{1}, int64_t{999}, 61 * kSecond + 1, 3 * kDay + 4 * kHour + 5,
                     std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(ms, *ParseDurationMs(FormatDurationMs(ms))) << ms;
  }
}

TEST(Duration, RoundedFormatDropsNoiseBelowASecond) {
  EXPECT_EQ("2d1h1m57s", FormatDurationRoundedMs(2 * kDay + kHour + kMinute + 57 * kSecond + 18));
  EXPECT_EQ("1m58s", FormatDurationRoundedMs(kMinute + 57 * kSecond + 500));
  EXPECT_EQ("430ms", FormatDurationRoundedMs(430));
}

}  // namespace
}  // namespace idem
