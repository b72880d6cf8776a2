// The operator log: what the engine and the server tell whoever runs them (start and stop, failed
// writes and their recovery, clock steps, misbehaving peers), as records that a sink renders.
//
// A record is one event: a level, a stable event name (snake_case: what alerts and greps match),
// a message for people, and fields (key = string or integer) for what a program would want
// without parsing the message: a peer, an error code, a count, a duration. The message may hold
// any bytes (a peer's, a path's); the renderers escape them, so one record is always one line.
//
// Two line formats, rendered by FormatLogLine:
//   text: 2026-12-02T04:40:01.123Z warn  event=bad_frame closing: ... peer=1.2.3.4:5
//         The time (UTC, ms), the level padded to 5, the event, the message, then the fields as
//         key=value; a value with a space, '"', '=', '\' or an escaped byte is quoted. In the
//         message and in values, control characters and bytes that are not valid UTF-8 are
//         written \n, \r, \t or \xHH.
//   json: {"ts":"2026-12-02T04:40:01.123Z","level":"warn","event":"bad_frame","msg":"...",...}
//         One object per line (JSON Lines): ts (RFC 3339, UTC, ms), level, event, msg, then the
//         fields in order, integers as numbers. Always valid JSON: control characters and bytes
//         that are not valid UTF-8 become \u00XX.
//
// A sink (EngineOptions::log, ServerOptions::log) takes records. For a sink that wants lines,
// LogLinesTo renders each record and hands over the line:
//   options.log = idem::LogLinesTo([](std::string_view line) { MyLogger(line); });
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "idem/clock.h"

namespace idem {

// info: the start and stop, and a condition that has ended (writes resumed). warn: something
// went wrong that the process works around (a peer's malformed frame, a clock step). error:
// something the operator must look at (writes stopped, accepts failing, a refused start).
enum class LogLevel : uint8_t { kInfo, kWarn, kError };

// "info", "warn", "error".
std::string_view LogLevelName(LogLevel level);

struct LogField {
  std::string key;  // [a-z0-9_]; not "ts", "level", "event" or "msg"
  std::variant<std::string, int64_t> value;
};

struct LogRecord {
  LogRecord(LogLevel level_in, std::string event_in, std::string message_in)
      : level(level_in), event(std::move(event_in)), message(std::move(message_in)) {}

  // Appends a field; returns *this, so that fields chain on a temporary.
  LogRecord& With(std::string key, std::string value) {
    fields.push_back(LogField{std::move(key), std::move(value)});
    return *this;
  }
  LogRecord& With(std::string key, const char* value) {
    return With(std::move(key), std::string(value));
  }
  template <std::integral Int>
  requires(!std::same_as<Int, bool>) LogRecord& With(std::string key, Int value) {
    fields.push_back(LogField{std::move(key), static_cast<int64_t>(value)});
    return *this;
  }

  LogLevel level;
  std::string event;  // [a-z0-9_]
  std::string message;
  std::vector<LogField> fields;
};

// Receives every record. Called from whichever thread logs (engine threads, the server's I/O
// threads): must be thread-safe and must not call into the engine or the server.
using LogSink = std::function<void(const LogRecord& record)>;

enum class LogFormat : uint8_t { kText, kJson };

// "text", "json".
std::string_view LogFormatName(LogFormat format);

// `record` as one line in `format` (no newline), stamped `unix_ms` (ms since the Unix epoch).
std::string FormatLogLine(const LogRecord& record, LogFormat format, int64_t unix_ms);

// "2026-12-02T04:40:01.123Z": `unix_ms` in RFC 3339, UTC, with milliseconds.
std::string FormatUtcMillis(int64_t unix_ms);

// A sink that renders each record in `format`, stamped with `clock`'s time (null: the system's
// wall clock), and passes the line (no newline) to `write`. Thread-safe if `write` is.
LogSink LogLinesTo(std::function<void(std::string_view line)> write,
                   LogFormat format = LogFormat::kText, std::shared_ptr<Clock> clock = nullptr);

// A sink that writes each record to stderr as one line in `format`, each with a single write,
// so that lines from several threads never interleave.
LogSink StderrLogSink(LogFormat format = LogFormat::kText);

}  // namespace idem
