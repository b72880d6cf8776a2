// The engine's operator log (EngineOptions::log): one place that says where a line goes when no
// sink was given.
#pragma once

#include <cstdio>
#include <functional>
#include <string_view>

namespace idem {

// Writes `line` to `log`, or to stderr prefixed "idem: " when `log` is null.
inline void LogToOperator(const std::function<void(std::string_view)>& log, std::string_view line) {
  if (log) {
    log(line);
  } else {
    std::fprintf(stderr, "idem: %.*s\n", static_cast<int>(line.size()), line.data());
  }
}

}  // namespace idem
