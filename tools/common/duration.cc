#include "duration.h"

#include <array>
#include <limits>
#include <utility>

namespace idem {
namespace {

// Longest suffix first, so "ms" is not read as "m" followed by garbage.
constexpr std::array<std::pair<std::string_view, int64_t>, 5> kUnits{
    {{"ms", 1}, {"s", kSecond}, {"m", kMinute}, {"h", kHour}, {"d", kDay}}};

Status Invalid(std::string_view text, std::string_view why) {
  return Status::InvalidArgument("duration \"" + std::string(text) + "\": " + std::string(why) +
                                 " (expected e.g. 500ms, 30s, 15m, 24h, 7d, 1h30m)");
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLower(char c) { return c >= 'a' && c <= 'z'; }

}  // namespace

Result<int64_t> ParseDurationMs(std::string_view text) {
  if (text.empty()) return Invalid(text, "empty");
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    int64_t value = 0;
    for (; i < text.size() && IsDigit(text[i]); ++i) {
      const int digit = text[i] - '0';
      if (value > (kMax - digit) / 10) return Invalid(text, "too large");
      value = value * 10 + digit;
    }
    if (i == start) return Invalid(text, "expected a number");
    size_t unit_start = i;
    while (i < text.size() && IsLower(text[i])) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    int64_t scale = 0;
    for (const auto& [name, ms] : kUnits) {
      if (unit == name) scale = ms;
    }
    if (scale == 0) return Invalid(text, unit.empty() ? "a number needs a unit" : "unknown unit");
    if (value > kMax / scale || total > kMax - value * scale) return Invalid(text, "too large");
    total += value * scale;
  }
  return total;
}

Result<int64_t> ParsePositiveDurationMs(std::string_view text) {
  Result<int64_t> ms = ParseDurationMs(text);
  if (ms.ok() && *ms == 0) return Invalid(text, "must be positive");
  return ms;
}

std::string FormatDurationMs(int64_t ms) {
  if (ms == 0) return "0s";
  std::string out;
  uint64_t left = static_cast<uint64_t>(ms);
  if (ms < 0) {
    out = "-";
    left = 0 - left;
  }
  for (size_t u = kUnits.size(); u-- > 0;) {
    const uint64_t size = static_cast<uint64_t>(kUnits[u].second);
    if (left >= size) {
      out += std::to_string(left / size) + std::string(kUnits[u].first);
      left %= size;
    }
  }
  return out;
}

std::string FormatDurationRoundedMs(int64_t ms) {
  if (ms > -kSecond && ms < kSecond) return FormatDurationMs(ms);
  return FormatDurationMs((ms + (ms < 0 ? -kSecond : kSecond) / 2) / kSecond * kSecond);
}

}  // namespace idem
