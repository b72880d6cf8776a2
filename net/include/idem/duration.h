// Durations as people type them on command lines and in config: "500ms", "30s", "15m", "24h",
// "7d". Shared by idemstored's flags and the tools.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "idem/result.h"

namespace idem {

// A non-negative integer followed by one unit (ms, s, m, h, d) -> milliseconds. No unit, an
// unknown unit, a sign, spaces or a value that overflows int64 milliseconds: InvalidArgument.
Result<int64_t> ParseDurationMs(std::string_view text);

// The inverse, for logs: the largest unit that represents `ms` exactly ("90s", "15m", "250ms").
std::string FormatDurationMs(int64_t ms);

}  // namespace idem
