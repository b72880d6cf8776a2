// Reports: the JSON carries every documented field, the table one row per policy, the SVG
// files are well-formed documents with one line per series.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "byte_size.h"
#include "duration.h"
#include "json_report.h"
#include "json_writer.h"
#include "plots.h"
#include "report_table.h"
#include "support/temp_dir.h"

namespace idem::retention {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The cells of the table row of `policy`: columns are separated by two spaces or more, a cell
// holds at most single spaces ("5.00 MiB").
std::vector<std::string> RowOf(const std::string& table, const std::string& policy) {
  const size_t at = table.find("\n" + policy + " ");
  if (at == std::string::npos) return {};
  const std::string line = table.substr(at + 1, table.find('\n', at + 1) - at - 1);
  std::vector<std::string> cells;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t end = line.find("  ", i);
    if (end == std::string::npos) end = line.size();
    if (end > i) cells.push_back(line.substr(i, end - i));
    i = end;
  }
  return cells;
}

Study TwoPolicies() {
  Study study;
  study.settings = {{"seed", "1"}, {"mix", "pay:callbacks:1"}};
  study.namespaces = {"pay"};
  study.events = 30;
  study.first_requests = 20;
  study.duplicates = 10;
  study.first_requests_end_ms = kHour;
  study.last_arrival_ms = 2 * kHour;
  study.sim.drain_ms = 3 * kHour;
  for (int64_t ttl : {kHour, kDay}) {
    PolicyResult r;
    r.policy = Policy{FormatDurationMs(ttl) + "/reclaim", Strategy::kReclaim, ttl, {}};
    r.duplicates_caught = ttl == kHour ? 6 : 10;
    r.duplicates_missed = 10 - r.duplicates_caught;
    r.per_namespace = {{20, r.duplicates_caught, r.duplicates_missed}};
    r.disk_bytes_peak = 5 << 20;
    r.user_bytes_written = 100;
    r.flush_bytes_written = 150;
    r.compaction_bytes_written = 50;
    for (int64_t t = 0; t <= 5 * kHour; t += kHour) {
      r.samples.push_back({t, 10, 12, static_cast<uint64_t>(t / kHour) << 20, 0, 0});
    }
    study.results.push_back(r);
  }
  return study;
}

TEST(RetentionJsonWriterTest, EscapesAndSeparates) {
  JsonWriter j;
  j.BeginObject();
  j.Key("a\"b");
  j.String("line\nnext\x01");
  j.Key("list");
  j.BeginArray();
  j.Int(-1);
  j.Uint(2);
  j.Double(0.5);
  j.Double(1.0 / 0.0);
  j.Bool(true);
  j.Null();
  j.EndArray();
  j.EndObject();
  EXPECT_EQ("{\"a\\\"b\":\"line\\nnext\\u0001\",\"list\":[-1,2,0.5,null,true,null]}", j.Take());
}

TEST(RetentionJsonReportTest, HasEveryRequiredFieldPerPolicy) {
  const std::string json = FormatJson(TwoPolicies());
  EXPECT_EQ(1u, Count(json, "\"policies\":["));
  for (const char* field :
       {"\"name\":", "\"ttl_s\":", "\"duplicates_caught\":", "\"duplicates_missed\":",
        "\"peak_live_records\":", "\"disk_bytes_peak\":", "\"disk_bytes_final\":",
        "\"write_amplification\":", "\"expired_on_disk_final\":", "\"samples\":["}) {
    EXPECT_EQ(2u, Count(json, field)) << field;
  }
  EXPECT_NE(std::string::npos, json.find("\"ttl_s\":3600,"));
  EXPECT_NE(std::string::npos, json.find("\"duplicates_missed\":4,"));
  EXPECT_NE(std::string::npos, json.find("\"write_amplification\":2,"));
  EXPECT_NE(std::string::npos, json.find("\"reclaim_lag_s\":null"));
}

TEST(RetentionReportTableTest, OneRowPerPolicy) {
  const std::string table = FormatTable(TwoPolicies());
  EXPECT_EQ(1u, Count(table, "\n1h/reclaim "));
  EXPECT_EQ(1u, Count(table, "\n1d/reclaim "));
  EXPECT_NE(std::string::npos, table.find("40.000"));  // 1h misses 4 of 10
  EXPECT_NE(std::string::npos, table.find("5.00 MiB"));
}

// A windows policy's width is in its row and in its JSON; studies without one print the table
// and JSON they always did (no window column, no window_s).
TEST(RetentionReportTableTest, WindowsPoliciesShowTheirWindowAndOthersAreUnchanged) {
  Study plain = TwoPolicies();
  EXPECT_EQ(std::string::npos, FormatTable(plain).find("window"));
  EXPECT_EQ(std::string::npos, FormatJson(plain).find("window"));

  Study mixed = TwoPolicies();
  PolicyResult windows = mixed.results[1];
  windows.policy.name = "1d/windows";
  windows.policy.strategy = Strategy::kWindows;
  windows.policy.window_ms = 3 * kHour;
  mixed.results.push_back(windows);
  const std::string table = FormatTable(mixed);
  const size_t header = table.find("\npolicy ");
  ASSERT_NE(std::string::npos, header);
  EXPECT_LT(table.find("remember", header), table.find("window", header));
  const std::vector<std::string> row = RowOf(table, "1d/windows");
  ASSERT_EQ(18u, row.size());  // the 17 columns and the window
  EXPECT_EQ("-", row[2]);      // remember
  EXPECT_EQ("3h", row[3]);
  EXPECT_EQ("10", row[5]);     // caught
  EXPECT_EQ("2.00", row[15]);  // WA
  const std::vector<std::string> reclaim = RowOf(table, "1d/reclaim");
  ASSERT_EQ(18u, reclaim.size());
  EXPECT_EQ("-", reclaim[3]);  // no window
  EXPECT_EQ("10", reclaim[5]);
  EXPECT_EQ(17u, RowOf(FormatTable(plain), "1d/reclaim").size());
  const std::string json = FormatJson(mixed);
  EXPECT_EQ(1u, Count(json, "\"window_s\":"));
  EXPECT_EQ(1u, Count(json, "\"windows_dropped\":"));
  EXPECT_NE(std::string::npos, json.find("\"strategy\":\"windows\",\"ttl_s\":86400"));
  EXPECT_NE(std::string::npos, json.find("\"window_s\":10800,"));
}

TEST(RetentionPlotsTest, WritesTwoSvgDocumentsWithALinePerSeries) {
  ::idem::testing::TempDir dir;
  ASSERT_TRUE(WritePlots(TwoPolicies(), dir.Sub("plots")).ok());
  for (const char* name : {"ttl_tradeoff.svg", "disk_over_time.svg"}) {
    std::ifstream in(dir.Sub("plots") + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    const std::string svg = text.str();
    EXPECT_EQ(0u, svg.find("<?xml")) << name;
    EXPECT_EQ(1u, Count(svg, "<svg ")) << name;
    EXPECT_EQ(1u, Count(svg, "</svg>")) << name;
    EXPECT_EQ(Count(svg, "<g>"), Count(svg, "</g>")) << name;
    EXPECT_EQ(std::string::npos, svg.find("nan")) << name;
  }
  // One strategy: one missed line, a peak and an end line (3 paths); over time: two policies.
  EXPECT_EQ(3u, Count(TtlTradeoffSvg(TwoPolicies()), "<path "));
  EXPECT_EQ(2u, Count(DiskOverTimeSvg(TwoPolicies()), "<path "));
}

TEST(RetentionFormatTest, DurationsAndBytes) {
  EXPECT_EQ("1m30s", FormatDurationMs(90'000));
  EXPECT_EQ("1d", FormatDurationMs(kDay));
  EXPECT_EQ("1d1h4m", FormatDurationMs(kDay + kHour + 4 * kMinute));
  EXPECT_EQ("2s", FormatDurationRoundedMs(1'600));
  EXPECT_EQ("512 B", FormatBytes(512));
  EXPECT_EQ("1.50 KiB", FormatBytes(1536));
  EXPECT_EQ("13.2 MiB", FormatBytes(13'841'203));
}

}  // namespace
}  // namespace idem::retention
