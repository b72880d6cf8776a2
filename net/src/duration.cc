#include "idem/duration.h"

#include <array>
#include <limits>
#include <utility>

namespace idem {
namespace {

// Longest suffix first, so "ms" is not read as "m" followed by garbage.
constexpr std::array<std::pair<std::string_view, int64_t>, 5> kUnits{{
    {"ms", 1},
    {"s", 1'000},
    {"m", 60'000},
    {"h", 3'600'000},
    {"d", 86'400'000},
}};

}  // namespace

Result<int64_t> ParseDurationMs(std::string_view text) {
  auto invalid = [&](std::string_view why) {
    return Status::InvalidArgument("duration \"" + std::string(text) + "\": " + std::string(why) +
                                   " (expected e.g. 500ms, 30s, 15m, 24h, 7d)");
  };
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return invalid("no number");
  std::string_view unit = text.substr(digits);
  int64_t scale = 0;
  for (const auto& [name, ms] : kUnits) {
    if (unit == name) scale = ms;
  }
  if (scale == 0) return invalid(unit.empty() ? "no unit" : "unknown unit");
  int64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    int digit = text[i] - '0';
    if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) return invalid("too large");
    value = value * 10 + digit;
  }
  if (value > std::numeric_limits<int64_t>::max() / scale) return invalid("too large");
  return value * scale;
}

std::string FormatDurationMs(int64_t ms) {
  for (size_t i = kUnits.size(); i-- > 1;) {
    if (ms != 0 && ms % kUnits[i].second == 0) {
      return std::to_string(ms / kUnits[i].second) + std::string(kUnits[i].first);
    }
  }
  return std::to_string(ms) + "ms";
}

}  // namespace idem
