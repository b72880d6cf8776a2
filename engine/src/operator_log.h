// The engine's operator log (EngineOptions::log): one place that says where a record goes when no
// sink was given.
#pragma once

#include "idem/log.h"

namespace idem {

// Passes `record` to `log`, or writes it to stderr as a text line when `log` is null.
inline void LogToOperator(const LogSink& log, const LogRecord& record) {
  if (log) {
    log(record);
  } else {
    StderrLogSink()(record);
  }
}

}  // namespace idem
