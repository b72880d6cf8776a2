#include "duration.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

namespace idem::retention {
namespace {

Status Bad(std::string_view text, std::string_view why) {
  return Status::InvalidArgument("bad duration '" + std::string(text) + "': " + std::string(why) +
                                 " (examples: 15s, 3m, 1h30m, 7d, 250ms)");
}

}  // namespace

Result<int64_t> ParseDuration(std::string_view text, bool allow_zero) {
  if (text.empty()) return Bad(text, "empty");
  double total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (start == i) return Bad(text, "expected a number");
    double value = 0;
    auto [end, ec] = std::from_chars(text.data() + start, text.data() + i, value);
    if (ec != std::errc() || end != text.data() + i) return Bad(text, "expected a number");
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit == "ms") scale = 1;
    else if (unit == "s" || unit.empty()) scale = kSecond;
    else if (unit == "m") scale = kMinute;
    else if (unit == "h") scale = kHour;
    else if (unit == "d") scale = kDay;
    else return Bad(text, "unknown unit '" + std::string(unit) + "'");
    if (unit.empty() && (start != 0 || i != text.size())) {
      return Bad(text, "a bare number (seconds) must stand alone");
    }
    total += value * scale;
  }
  if (!std::isfinite(total) || total > 1e15) return Bad(text, "too large");
  const auto ms = static_cast<int64_t>(std::llround(total));
  if (ms < 0 || (ms == 0 && !allow_zero)) return Bad(text, "must be positive");
  return ms;
}

std::string FormatDuration(int64_t ms) {
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  const struct {
    int64_t size;
    const char* name;
  } units[] = {{kDay, "d"}, {kHour, "h"}, {kMinute, "m"}, {kSecond, "s"}, {1, "ms"}};
  for (const auto& u : units) {
    if (ms >= u.size) {
      out += std::to_string(ms / u.size) + u.name;
      ms %= u.size;
    }
  }
  return out;
}

std::string FormatDurationRounded(int64_t ms) {
  if (ms > -kSecond && ms < kSecond) return FormatDuration(ms);
  return FormatDuration((ms + (ms < 0 ? -kSecond : kSecond) / 2) / kSecond * kSecond);
}

}  // namespace idem::retention
