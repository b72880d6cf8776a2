// Trace files: a recorded workload to replay instead of a generated one.
//
// Format (CSV, one arrival per line, UTF-8 or plain bytes):
//   time_s,namespace,key
//   0.000,payments,evt_1MqD3k
//   15.250,payments,evt_1MqD3k
// - time_s: seconds (decimal fraction allowed, millisecond resolution) since any origin, >= 0.
// - namespace: 1..64 characters of [A-Za-z0-9_.:-].
// - key: 1..512 bytes, no comma, no quoting (the rest of the line after the second comma).
// - Empty lines and lines starting with '#' are skipped; a first line "time_s,namespace,key"
//   is a header and skipped. Trailing '\r' (CRLF files) is ignored.
// - Lines need not be sorted: arrivals are replayed in time order, ties in file order.
// An arrival is a duplicate when an earlier arrival (in replay order) had the same namespace
// and key. The whole trace is held in memory (each distinct key once).
#pragma once

#include <istream>
#include <string>
#include <string_view>

#include "idem/result.h"
#include "workload.h"

namespace idem::retention {

struct TraceLine {
  int64_t t_ms = 0;
  std::string_view ns;
  std::string_view key;
};

// Parses one data line (not a comment/header). InvalidArgument says what is wrong, without the
// position (ReadTrace adds "file:line: ").
Result<TraceLine> ParseTraceLine(std::string_view line);

// Reads a whole trace. `name` prefixes error messages ("trace.csv:17: ...").
Result<Workload> ReadTrace(std::istream& in, const std::string& name);
Result<Workload> ReadTraceFile(const std::string& path);

}  // namespace idem::retention
