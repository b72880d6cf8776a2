// The operator log's two line formats (idem/log.h): golden lines at a fixed time, and escaping
// that keeps one record one line, and every JSON line valid, whatever bytes a message holds.
#include "idem/log.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace idem {
namespace {

constexpr int64_t kAt = 1'796'186'401'123;  // 2026-12-02T04:40:01.123Z

LogRecord BadFrame() {
  return LogRecord(LogLevel::kWarn, "bad_frame", "peer 127.0.0.1:5555: closing: frame too long")
      .With("peer", "127.0.0.1:5555")
      .With("max_frame_bytes", 4194304);
}

std::string Text(const LogRecord& record) { return FormatLogLine(record, LogFormat::kText, kAt); }
std::string Json(const LogRecord& record) { return FormatLogLine(record, LogFormat::kJson, kAt); }

TEST(LogTest, TextLine) {
  EXPECT_EQ(
      "2026-12-02T04:40:01.123Z warn  event=bad_frame peer 127.0.0.1:5555: closing: frame too "
      "long peer=127.0.0.1:5555 max_frame_bytes=4194304",
      Text(BadFrame()));
  EXPECT_EQ("2026-12-02T04:40:01.123Z info  event=stop stopped",
            Text(LogRecord(LogLevel::kInfo, "stop", "stopped")));
  EXPECT_EQ("2026-12-02T04:40:01.123Z error event=writes_stopped writes stopped",
            Text(LogRecord(LogLevel::kError, "writes_stopped", "writes stopped")));
}

TEST(LogTest, JsonLine) {
  EXPECT_EQ(R"({"ts":"2026-12-02T04:40:01.123Z","level":"warn","event":"bad_frame",)"
            R"("msg":"peer 127.0.0.1:5555: closing: frame too long","peer":"127.0.0.1:5555",)"
            R"("max_frame_bytes":4194304})",
            Json(BadFrame()));
  EXPECT_EQ(R"({"ts":"2026-12-02T04:40:01.123Z","level":"error","event":"e","msg":"","n":-7})",
            Json(LogRecord(LogLevel::kError, "e", "").With("n", -7)));
}

TEST(LogTest, TimestampsAreUtcWithMilliseconds) {
  EXPECT_EQ("1970-01-01T00:00:00.000Z", FormatUtcMillis(0));
  EXPECT_EQ("1969-12-31T23:59:59.999Z", FormatUtcMillis(-1));
  EXPECT_EQ("2026-12-02T04:40:01.123Z", FormatUtcMillis(kAt));
}

TEST(LogTest, JsonEscapesEveryByteThatIsNotPlainText) {
  const LogRecord record(LogLevel::kInfo, "e",
                         std::string("q\" b\\ nl\n cr\r tab\t nul") + '\0' + " esc\x1b del\x7f");
  EXPECT_EQ(R"({"ts":"2026-12-02T04:40:01.123Z","level":"info","event":"e",)"
            R"("msg":"q\" b\\ nl\n cr\r tab\t nul\u0000 esc\u001b del\u007f"})",
            Json(record));
}

TEST(LogTest, JsonKeepsValidUtf8AndEscapesInvalidBytes) {
  // é (2 bytes), € (3), 😀 (4) are kept; a lone continuation byte, a truncated sequence, an
  // overlong '/', a surrogate and 0xff are not UTF-8: each of their bytes becomes \u00XX.
  const LogRecord record(LogLevel::kInfo, "e",
                         "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 | \x80 | \xe2\x82 | \xc0\xaf | "
                         "\xed\xa0\x80 | \xff");
  EXPECT_EQ(
      "{\"ts\":\"2026-12-02T04:40:01.123Z\",\"level\":\"info\",\"event\":\"e\",\"msg\":"
      "\"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 | \\u0080 | \\u00e2\\u0082 | \\u00c0\\u00af | "
      "\\u00ed\\u00a0\\u0080 | \\u00ff\"}",
      Json(record));
}

TEST(LogTest, FieldValuesAreEscapedLikeTheMessage) {
  const LogRecord record =
      LogRecord(LogLevel::kWarn, "e", "m").With("path", "/tmp/a \"b\"\n\xff").With("empty", "");
  EXPECT_EQ(
      "{\"ts\":\"2026-12-02T04:40:01.123Z\",\"level\":\"warn\",\"event\":\"e\",\"msg\":\"m\","
      "\"path\":\"/tmp/a \\\"b\\\"\\n\\u00ff\",\"empty\":\"\"}",
      Json(record));
  EXPECT_EQ("2026-12-02T04:40:01.123Z warn  event=e m path=\"/tmp/a \\\"b\\\"\\n\\xff\" empty=\"\"",
            Text(record));
}

TEST(LogTest, TextKeepsOneRecordOnOneLine) {
  const LogRecord record(LogLevel::kWarn, "e", "line one\nline two\r\x01\xfe end \\ \"kept\"");
  const std::string line = Text(record);
  EXPECT_EQ(
      "2026-12-02T04:40:01.123Z warn  event=e line one\\nline two\\r\\x01\\xfe end \\ \"kept\"",
      line);
  EXPECT_EQ(std::string::npos, line.find('\n'));
}

TEST(LogTest, TextQuotesOnlyValuesThatNeedIt) {
  const LogRecord record = LogRecord(LogLevel::kInfo, "e", "m")
                               .With("plain", "127.0.0.1:7878")
                               .With("spaced", "a b")
                               .With("eq", "a=b")
                               .With("utf8", "\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(
      "2026-12-02T04:40:01.123Z info  event=e m plain=127.0.0.1:7878 spaced=\"a b\" eq=\"a=b\" "
      "utf8=\xc3\xa9t\xc3\xa9",
      Text(record));
}

TEST(LogTest, LogLinesToStampsWithTheGivenClock) {
  auto clock = std::make_shared<ManualClock>(kAt);
  std::vector<std::string> lines;
  const LogSink text =
      LogLinesTo([&](std::string_view line) { lines.emplace_back(line); }, LogFormat::kText, clock);
  const LogSink json =
      LogLinesTo([&](std::string_view line) { lines.emplace_back(line); }, LogFormat::kJson, clock);
  text(LogRecord(LogLevel::kInfo, "start", "up"));
  clock->Advance(1'000);
  json(LogRecord(LogLevel::kInfo, "stop", "down"));
  ASSERT_EQ(2u, lines.size());
  EXPECT_EQ("2026-12-02T04:40:01.123Z info  event=start up", lines[0]);
  EXPECT_EQ(R"({"ts":"2026-12-02T04:40:02.123Z","level":"info","event":"stop","msg":"down"})",
            lines[1]);
}

}  // namespace
}  // namespace idem
