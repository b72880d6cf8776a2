// Trace files: the documented CSV is read, replayed in time order with duplicates marked, and
// every malformed line is rejected with its file and line number.
#include "trace_reader.h"

#include <sstream>

#include <gtest/gtest.h>

namespace idem::retention {
namespace {

Result<Workload> Read(const std::string& text) {
  std::istringstream in(text);
  return ReadTrace(in, "trace.csv");
}

TEST(RetentionTraceReaderTest, ReadsTheDocumentedFormat) {
  auto w = Read(
      "time_s,namespace,key\n"
      "# a comment\n"
      "100.000,payments,evt_1\r\n"
      "\n"
      "160.5,orders,o-1\n"
      "115.25,payments,evt_1\n"
      "100,orders,evt_1\n");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(4u, w->events.size());
  EXPECT_EQ((std::vector<std::string>{"payments", "orders"}), w->namespaces);
  // Sorted by time, ties in file order; time starts at 0.
  EXPECT_EQ(0, w->events[0].t_ms);
  EXPECT_EQ("payments", w->namespaces[w->events[0].ns]);
  EXPECT_EQ(0, w->events[1].t_ms);
  EXPECT_EQ("orders", w->namespaces[w->events[1].ns]);
  EXPECT_EQ(15'250, w->events[2].t_ms);
  EXPECT_EQ(60'500, w->events[3].t_ms);
  // Same key in another namespace is another request; CRLF was stripped from the key.
  EXPECT_FALSE(w->events[0].duplicate);
  EXPECT_FALSE(w->events[1].duplicate);
  EXPECT_TRUE(w->events[2].duplicate);
  EXPECT_EQ(w->events[0].key_id, w->events[2].key_id);
  EXPECT_EQ("evt_1", w->KeyName(w->events[2].key_id));
  EXPECT_FALSE(w->events[3].duplicate);
  EXPECT_EQ(60'501, w->first_requests_end_ms);
}

TEST(RetentionTraceReaderTest, UnsortedLinesAreJudgedInTimeOrder) {
  auto w = Read("20,ns,k\n10,ns,k\n");
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->events[0].duplicate);
  EXPECT_TRUE(w->events[1].duplicate);
  EXPECT_EQ(10'000, w->events[1].t_ms);
}

TEST(RetentionTraceReaderTest, MalformedLinesNameFileLineAndProblem) {
  const struct {
    const char* line;
    const char* message;
  } cases[] = {
      {"12,payments", "expected 3 comma-separated fields"},
      {"12", "expected 3 comma-separated fields"},
      {"abc,payments,k", "not a non-negative number"},
      {"-1,payments,k", "not a non-negative number"},
      {"1e400,payments,k", "not a non-negative number"},
      {",payments,k", "not a non-negative number"},
      {"1,,k", "namespace"},
      {"1,pay ments,k", "namespace"},
      {"1,payments,", "key must be 1..512 bytes"},
      {"1,payments,a,b", "comma"},
  };
  for (const auto& c : cases) {
    auto w = Read(std::string("time_s,namespace,key\n1,ok,k\n") + c.line + "\n");
    ASSERT_FALSE(w.ok()) << c.line;
    EXPECT_TRUE(w.status().IsInvalidArgument());
    EXPECT_NE(std::string::npos, w.status().message().find("trace.csv:3: "))
        << w.status().message();
    EXPECT_NE(std::string::npos, w.status().message().find(c.message)) << w.status().message();
  }
  EXPECT_FALSE(Read(std::string("1,ns,") + std::string(513, 'k') + "\n").ok());
}

TEST(RetentionTraceReaderTest, EmptyTraceAndMissingFileAreErrors) {
  auto empty = Read("time_s,namespace,key\n# nothing\n");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(std::string::npos, empty.status().message().find("no arrivals"));
  auto missing = ReadTraceFile("/nonexistent/trace.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound());
}

}  // namespace
}  // namespace idem::retention
