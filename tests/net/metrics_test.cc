// The metrics core without a server: sharded counters and histograms (metric_cells.h), the
// Prometheus text writer (prometheus_text.h), ServerMetrics' families, and the strict parser
// the server tests check /metrics with (exposition_parser.h), shown to reject what it must.
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "exposition_parser.h"
#include "metric_cells.h"
#include "prometheus_text.h"
#include "server_metrics.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
using testing::ParseExposition;

std::string Text(const std::vector<MetricFamily>& families) {
  std::string out;
  AppendPrometheusText(families, &out);
  return out;
}

MetricSample Sample(std::vector<std::pair<std::string, std::string>> labels, double value) {
  MetricSample s;
  s.labels = std::move(labels);
  s.value = value;
  return s;
}

TEST(CounterArrayTest, SumsAddsFromManyThreadsExactly) {
  CounterArray<3> counters;
  std::vector<std::thread> threads;
  for (int t = 0; t < 12; ++t) {  // more threads than shards: some share one
    threads.emplace_back([&] {
      for (int i = 0; i < 20'000; ++i) {
        counters.Add(1);
        counters.Add(2, 3);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(0u, counters.Value(0));
  EXPECT_EQ(240'000u, counters.Value(1));
  EXPECT_EQ(720'000u, counters.Value(2));
}

TEST(HistogramArrayTest, AValueOnABoundCountsInThatBucketAndAboveAllInInf) {
  HistogramArray<2, 2> h({10, 100});
  h.Observe(0, 10);    // <= 10
  h.Observe(0, 11);    // <= 100
  h.Observe(0, 1000);  // +Inf only
  h.Observe(1, 5);     // another series
  HistogramCounts<2> c = h.Read(0);
  EXPECT_EQ(1u, c.cumulative[0]);
  EXPECT_EQ(2u, c.cumulative[1]);
  EXPECT_EQ(3u, c.count);
  EXPECT_EQ(1021u, c.sum);
  EXPECT_EQ(1u, h.Read(1).count);
}

TEST(PrometheusTextTest, ValuesAreGoParseableFloats) {
  EXPECT_EQ("0", FormatPrometheusValue(0));
  EXPECT_EQ("42", FormatPrometheusValue(42));
  EXPECT_EQ("-3", FormatPrometheusValue(-3));
  EXPECT_EQ("0.5", FormatPrometheusValue(0.5));
  EXPECT_EQ("5e-05", FormatPrometheusValue(0.00005));
  EXPECT_EQ("+Inf", FormatPrometheusValue(std::numeric_limits<double>::infinity()));
  EXPECT_EQ("-Inf", FormatPrometheusValue(-std::numeric_limits<double>::infinity()));
  EXPECT_EQ("NaN", FormatPrometheusValue(std::nan("")));
  EXPECT_EQ("1e+20", FormatPrometheusValue(1e20));  // beyond int64: not printed as an integer
}

TEST(PrometheusTextTest, CounterWithEscapedHelpAndLabelValues) {
  MetricFamily f;
  f.name = "idem_x_total";
  f.help = "a \\ b\nc \"q\"";
  f.type = MetricType::kCounter;
  f.samples.push_back(Sample({{"a", "back\\slash"}, {"b", "quo\"te"}, {"c", "new\nline"}}, 7));
  f.samples.push_back(Sample({}, 1.5));
  EXPECT_EQ(
      "# HELP idem_x_total a \\\\ b\\nc \"q\"\n"
      "# TYPE idem_x_total counter\n"
      "idem_x_total{a=\"back\\\\slash\",b=\"quo\\\"te\",c=\"new\\nline\"} 7\n"
      "idem_x_total 1.5\n",
      Text({f}));
}

TEST(PrometheusTextTest, HistogramHasCumulativeBucketsInfSumAndCount) {
  MetricFamily f;
  f.name = "idem_h_seconds";
  f.help = "h";
  f.type = MetricType::kHistogram;
  MetricSample s;
  s.labels = {{"op", "get"}};
  s.buckets = {{0.001, 2}, {0.01, 5}, {std::numeric_limits<double>::infinity(), 6}};
  s.sum = 0.0305;
  s.count = 6;
  f.samples.push_back(s);
  EXPECT_EQ(
      "# HELP idem_h_seconds h\n"
      "# TYPE idem_h_seconds histogram\n"
      "idem_h_seconds_bucket{op=\"get\",le=\"0.001\"} 2\n"
      "idem_h_seconds_bucket{op=\"get\",le=\"0.01\"} 5\n"
      "idem_h_seconds_bucket{op=\"get\",le=\"+Inf\"} 6\n"
      "idem_h_seconds_sum{op=\"get\"} 0.0305\n"
      "idem_h_seconds_count{op=\"get\"} 6\n",
      Text({f}));
  auto parsed = ParseExposition(Text({f}));
  EXPECT_EQ("", parsed.error);
}

TEST(ExpositionParserTest, RejectsWhatTheFormatForbids) {
  const std::string head = "# HELP m h\n# TYPE m counter\n";
  EXPECT_EQ("", ParseExposition(head + "m{a=\"x\\\\y\\\"z\\n\"} 1\n").error);
  EXPECT_NE("", ParseExposition(head + "m 1").error);                     // no final newline
  EXPECT_NE("", ParseExposition(head + "m 1 1700000000\n").error);        // a timestamp
  EXPECT_NE("", ParseExposition(head + "m{a=\"x\\t\"} 1\n").error);       // bad escape
  EXPECT_NE("", ParseExposition(head + "m{a=\"x\",a=\"y\"} 1\n").error);  // label twice
  EXPECT_NE("", ParseExposition(head + "m 1\nm 2\n").error);              // series twice
  EXPECT_NE("", ParseExposition(head + "m  1\n").error);                  // two spaces
  EXPECT_NE("", ParseExposition(head + "m -1\n").error);                  // negative counter
  EXPECT_NE("", ParseExposition(head + "m 1x\n").error);                  // not a number
  EXPECT_NE("", ParseExposition(head + "n 1\n").error);                   // outside its family
  EXPECT_NE("", ParseExposition("m 1\n").error);                          // before HELP/TYPE
  EXPECT_NE("", ParseExposition(head + "# a comment\n").error);
  const std::string hist = "# HELP h h\n# TYPE h histogram\n";
  EXPECT_EQ("", ParseExposition(hist + "h_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\n"
                                       "h_sum 3\nh_count 2\n")
                    .error);
  EXPECT_NE("", ParseExposition(hist + "h_bucket{le=\"1\"} 1\nh_sum 3\nh_count 1\n").error);
  EXPECT_NE("", ParseExposition(hist + "h_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
                                       "h_sum 3\nh_count 1\n")
                    .error);  // not cumulative
  EXPECT_NE("", ParseExposition(hist + "h_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 3\n").error);
  EXPECT_NE("", ParseExposition(hist + "h_bucket{le=\"+Inf\"} 2\nh_count 2\n").error);  // no sum
}

TEST(ServerMetricsTest, CountsOpsByOpAndOutcomeAndErrorsByCode) {
  ServerMetrics m;
  OpResult inserted;
  inserted.outcome = Outcome::kInserted;
  OpResult replay;
  replay.outcome = Outcome::kCompleted;
  m.CountOp(Transport::kBinary, OpType::kInsert, inserted, 200us);
  m.CountOp(Transport::kBinary, OpType::kInsert, inserted, 2ms);
  m.CountOp(Transport::kBinary, OpType::kBegin, replay, 300us);
  m.CountOp(Transport::kBinary, OpType::kGet, Status::InvalidArgument("key too long"), 100us);
  m.CountOp(Transport::kBinary, static_cast<OpType>(200), Status::NotSupported("?"), 1us);
  m.CountRequestError(Transport::kBinary, Status::Code::kShutdown);
  m.CountBatch(3, 17);
  m.CountWalSync(400us, true);
  m.CountWalSync(1ms, false);
  m.ConnectionAccepted();
  m.ConnectionAccepted();
  m.ConnectionRefused();
  m.ConnectionClosed();
  m.BytesReceived(Transport::kBinary, 100);
  m.BytesSent(Transport::kBinary, 50);
  m.ProtocolError(Status::Code::kCorruption);

  auto e = ParseExposition(Text(m.Families()));
  ASSERT_EQ("", e.error);
  EXPECT_EQ(2, e.ValueOr0("idem_ops_total", {{"op", "insert"}, {"outcome", "INSERTED"}}));
  EXPECT_EQ(1, e.ValueOr0("idem_ops_total", {{"op", "begin"}, {"outcome", "COMPLETED"}}));
  EXPECT_EQ(1, e.ValueOr0("idem_op_errors_total", {{"op", "get"}, {"code", "INVALID_ARGUMENT"}}));
  EXPECT_EQ(1, e.ValueOr0("idem_op_errors_total", {{"op", "unknown"}, {"code", "NOT_SUPPORTED"}}));
  EXPECT_EQ(
      1, e.ValueOr0("idem_request_errors_total", {{"transport", "binary"}, {"code", "SHUTDOWN"}}));
  EXPECT_EQ(2, e.ValueOr0("idem_request_duration_seconds_count",
                          {{"transport", "binary"}, {"op", "insert"}}));
  EXPECT_EQ(1, e.ValueOr0("idem_request_duration_seconds_bucket",
                          {{"transport", "binary"}, {"op", "insert"}, {"le", "0.00025"}}));
  EXPECT_DOUBLE_EQ(0.0022, e.ValueOr0("idem_request_duration_seconds_sum",
                                      {{"transport", "binary"}, {"op", "insert"}}));
  EXPECT_EQ(1, e.ValueOr0("idem_commit_batch_requests_bucket", {{"le", "4"}}));
  EXPECT_EQ(0, e.ValueOr0("idem_commit_batch_ops_bucket", {{"le", "16"}}));
  EXPECT_EQ(1, e.ValueOr0("idem_commit_batch_ops_bucket", {{"le", "32"}}));
  EXPECT_EQ(2, e.ValueOr0("idem_wal_sync_seconds_count"));
  EXPECT_EQ(1, e.ValueOr0("idem_wal_sync_failures_total"));
  EXPECT_EQ(0, e.ValueOr0("idem_connections_open"));  // 2 accepted: 1 refused, 1 closed
  EXPECT_EQ(2, e.ValueOr0("idem_connections_accepted_total"));
  EXPECT_EQ(1, e.ValueOr0("idem_connections_refused_total"));
  EXPECT_EQ(100, e.ValueOr0("idem_received_bytes_total", {{"transport", "binary"}}));
  EXPECT_EQ(50, e.ValueOr0("idem_sent_bytes_total", {{"transport", "binary"}}));
  EXPECT_EQ(1, e.ValueOr0("idem_protocol_errors_total", {{"code", "CORRUPTION"}}));
  // A transport that counted nothing shows no series.
  EXPECT_FALSE(e.Value("idem_received_bytes_total", {{"transport", "http"}}));
}

TEST(ServerMetricsTest, StoreFiguresAreValidFamilies) {
  StoreStats s;
  s.estimated_live_records = 12;
  s.write_stalled = true;
  s.clock_steps = 2;
  s.reclaim_failures = 3;
  auto e = ParseExposition(Text(StoreStatsFamilies(s)));
  ASSERT_EQ("", e.error);
  EXPECT_EQ(12, e.ValueOr0("idem_store_records_estimated"));
  EXPECT_EQ(1, e.ValueOr0("idem_store_write_stalled"));
  EXPECT_EQ(2, e.ValueOr0("idem_clock_steps_total"));
  EXPECT_EQ(3, e.ValueOr0("idem_reclaim_failures_total"));
  for (const auto& f : e.families) EXPECT_TRUE(f.name.starts_with("idem_")) << f.name;
}

}  // namespace
}  // namespace idem
