#include "idem/log.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

namespace idem {
namespace {

// The length of the valid UTF-8 sequence (RFC 3629: no overlong forms, surrogates or code
// points above U+10FFFF) that starts at s[i]; 0 if none does. 1 for ASCII.
size_t Utf8SequenceAt(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  size_t n;
  unsigned char min2 = 0x80, max2 = 0xbf;  // the allowed range of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    n = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    n = 3;
    if (lead == 0xe0) min2 = 0xa0;  // overlong
    if (lead == 0xed) max2 = 0x9f;  // surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    n = 4;
    if (lead == 0xf0) min2 = 0x90;  // overlong
    if (lead == 0xf4) max2 = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() - i < n || byte(i + 1) < min2 || byte(i + 1) > max2) return 0;
  for (size_t k = 2; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  }
  return n;
}

// Appends `bytes` with every control character, DEL and byte outside valid UTF-8 escaped by
// `escape_byte`, and with `quote` and '\' backslash-escaped when `quote` is set.
template <typename EscapeByte>
void AppendEscaped(std::string_view bytes, char quote, EscapeByte escape_byte, std::string* out) {
  for (size_t i = 0; i < bytes.size();) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    const size_t n = Utf8SequenceAt(bytes, i);
    if (n > 1) {
      out->append(bytes.substr(i, n));
      i += n;
      continue;
    }
    ++i;
    if (quote != 0 && (c == static_cast<unsigned char>(quote) || c == '\\')) {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\r') {
      out->append("\\r");
    } else if (c == '\t') {
      out->append("\\t");
    } else if (n == 0 || c < 0x20 || c == 0x7f) {
      escape_byte(c, out);
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
}

void AppendTextEscaped(std::string_view bytes, char quote, std::string* out) {
  AppendEscaped(
      bytes, quote,
      [](unsigned char c, std::string* o) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        o->append(buf);
      },
      out);
}

void AppendJsonString(std::string_view bytes, std::string* out) {
  out->push_back('"');
  AppendEscaped(
      bytes, '"',
      [](unsigned char c, std::string* o) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        o->append(buf);
      },
      out);
  out->push_back('"');
}

// Whether a text-format value must be quoted to read back as one value.
bool NeedsQuotes(std::string_view value) {
  if (value.empty()) return true;
  for (size_t i = 0; i < value.size();) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    const size_t n = Utf8SequenceAt(value, i);
    if (n == 0 || c <= 0x20 || c == 0x7f || c == '"' || c == '=' || c == '\\') return true;
    i += n;
  }
  return false;
}

std::string FormatText(const LogRecord& record, int64_t unix_ms) {
  std::string line = FormatUtcMillis(unix_ms);
  line += ' ';
  const std::string_view level = LogLevelName(record.level);
  line += level;
  line.append(6 - level.size(), ' ');  // the level padded to 5, then a space
  line += "event=";
  line += record.event;
  line += ' ';
  AppendTextEscaped(record.message, 0, &line);
  for (const LogField& field : record.fields) {
    line += ' ';
    line += field.key;
    line += '=';
    if (const int64_t* number = std::get_if<int64_t>(&field.value)) {
      line += std::to_string(*number);
    } else if (const std::string& value = std::get<std::string>(field.value); NeedsQuotes(value)) {
      line += '"';
      AppendTextEscaped(value, '"', &line);
      line += '"';
    } else {
      line += value;
    }
  }
  return line;
}

std::string FormatJson(const LogRecord& record, int64_t unix_ms) {
  std::string line = "{\"ts\":\"" + FormatUtcMillis(unix_ms) + "\",\"level\":\"";
  line += LogLevelName(record.level);
  line += "\",\"event\":";
  AppendJsonString(record.event, &line);
  line += ",\"msg\":";
  AppendJsonString(record.message, &line);
  for (const LogField& field : record.fields) {
    line += ',';
    AppendJsonString(field.key, &line);
    line += ':';
    if (const int64_t* number = std::get_if<int64_t>(&field.value)) {
      line += std::to_string(*number);
    } else {
      AppendJsonString(std::get<std::string>(field.value), &line);
    }
  }
  line += '}';
  return line;
}

// Writes all of `bytes` to stderr in as few write(2) calls as the kernel allows (one for a pipe
// and a line under PIPE_BUF, which is then never interleaved with another thread's).
void WriteStderr(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere left to report it
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "error";
}

std::string_view LogFormatName(LogFormat format) {
  return format == LogFormat::kJson ? "json" : "text";
}

std::string FormatUtcMillis(int64_t unix_ms) {
  const int64_t seconds = unix_ms >= 0 ? unix_ms / 1000 : (unix_ms - 999) / 1000;
  const time_t t_seconds = static_cast<time_t>(seconds);
  struct tm t {};
  gmtime_r(&t_seconds, &t);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", t.tm_year + 1900,
                t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                static_cast<int>(unix_ms - seconds * 1000));
  return buf;
}

std::string FormatLogLine(const LogRecord& record, LogFormat format, int64_t unix_ms) {
  return format == LogFormat::kJson ? FormatJson(record, unix_ms) : FormatText(record, unix_ms);
}

LogSink LogLinesTo(std::function<void(std::string_view line)> write, LogFormat format,
                   std::shared_ptr<Clock> clock) {
  if (!clock) clock = SystemClock::Default();
  return [write = std::move(write), format, clock = std::move(clock)](const LogRecord& record) {
    write(FormatLogLine(record, format, clock->NowMillis()));
  };
}

LogSink StderrLogSink(LogFormat format) {
  return LogLinesTo(
      [](std::string_view line) {
        std::string with_newline(line);
        with_newline += '\n';
        WriteStderr(with_newline);
      },
      format);
}

}  // namespace idem
