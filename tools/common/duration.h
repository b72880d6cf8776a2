// Durations as people type them in flags and read them in reports: "500ms", "30s", "15m",
// "24h", "7d", or a sum such as "1h30m". Every term carries a unit (a bare "15" is rejected:
// seconds or milliseconds would be a guess), and values are whole numbers of their unit.
// Shared by idemstored, idemctl and every tool.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "idem/result.h"

namespace idem {

// Milliseconds per unit.
inline constexpr int64_t kSecond = 1000;
inline constexpr int64_t kMinute = 60 * kSecond;
inline constexpr int64_t kHour = 60 * kMinute;
inline constexpr int64_t kDay = 24 * kHour;

// Milliseconds, >= 0. InvalidArgument (quoting the text and giving examples) for an empty text,
// a term without a number or unit, an unknown unit, a sign, spaces, a fraction, or overflow.
Result<int64_t> ParseDurationMs(std::string_view text);
// The same, but 0 is InvalidArgument too ("must be positive").
Result<int64_t> ParsePositiveDurationMs(std::string_view text);

// The exact spelling with the largest units: 90000 -> "1m30s", 86400000 -> "1d", 0 -> "0s".
// ParseDurationMs(FormatDurationMs(x)) == x for every x >= 0.
std::string FormatDurationMs(int64_t ms);
// Rounded to the second (to the millisecond below one second): for measured times, where
// "2d1h1m57s18ms" has more digits than meaning.
std::string FormatDurationRoundedMs(int64_t ms);

}  // namespace idem
