#include "byte_size.h"

#include <cstdio>
#include <iterator>

namespace idem::retention {
namespace {

std::string Number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, value < 10 ? "%.2f" : value < 100 ? "%.1f" : "%.0f", value);
  return buf;
}

}  // namespace

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return std::to_string(bytes) + " B";
  return Number(value) + " " + kUnits[unit];
}

}  // namespace idem::retention
