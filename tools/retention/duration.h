// Durations on the command line and in reports: "250ms", "15s", "3m", "1h", "7d", or a sum
// such as "1h30m". A bare number is seconds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "idem/result.h"

namespace idem::retention {

inline constexpr int64_t kSecond = 1000;
inline constexpr int64_t kMinute = 60 * kSecond;
inline constexpr int64_t kHour = 60 * kMinute;
inline constexpr int64_t kDay = 24 * kHour;

// Milliseconds, > 0 unless `allow_zero`. InvalidArgument names the bad text.
Result<int64_t> ParseDuration(std::string_view text, bool allow_zero = false);

// The shortest exact spelling with the largest units: 90000 -> "1m30s", 86400000 -> "1d".
std::string FormatDuration(int64_t ms);
// FormatDuration rounded to the second (to the millisecond below one second): for measured
// times, where "2d1h1m57s18ms" is more digits than meaning.
std::string FormatDurationRounded(int64_t ms);

}  // namespace idem::retention
