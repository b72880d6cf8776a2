// The server's metrics end to end: operations over a real connection move the counters that
// Server::MetricsText() (what GET /metrics serves) shows, every scrape passes the strict
// exposition parser, and Client::GetServerStats (idemctl stats) carries the same counters.
#include <chrono>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "exposition_parser.h"
#include "protocol_codec.h"
#include "raw_socket.h"
#include "test_server.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
using testing::Exposition;
using testing::ParseExposition;
using Labels = std::map<std::string, std::string>;

class ServerMetricsTest : public ::testing::Test {
 protected:
  // A scrape, checked line by line.
  Exposition Scrape() {
    Exposition e = ParseExposition(server_.server().MetricsText());
    EXPECT_EQ("", e.error);
    return e;
  }
  static double Ops(const Exposition& e, const std::string& op, const std::string& outcome) {
    return e.ValueOr0("idem_ops_total", {{"op", op}, {"outcome", outcome}});
  }

  testing::TestServer server_;
};

TEST_F(ServerMetricsTest, OperationsMoveTheirOpAndOutcomeCounters) {
  auto client = server_.Connect();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const Exposition before = Scrape();
  EXPECT_EQ(0, Ops(before, "insert", "INSERTED"));

  ASSERT_TRUE((*client)->Insert({.ns = "pay", .key = "k1", .status = "PENDING"}).ok());
  ASSERT_TRUE((*client)->Insert({.ns = "pay", .key = "k1", .status = "PENDING"}).ok());  // dup
  ASSERT_TRUE((*client)->Insert({.ns = "pay", .key = "k2", .status = "PENDING"}).ok());
  auto started = (*client)->Execute(Op::Begin({.ns = "pay", .key = "b1", .fingerprint = "f"}));
  ASSERT_TRUE(started.ok());
  ASSERT_EQ(Outcome::kStarted, started->outcome);
  ASSERT_TRUE(
      (*client)
          ->Execute(Op::Complete(
              {.ns = "pay", .key = "b1", .fence = started->record->fence, .response = "ok"}))
          .ok());
  auto replay = (*client)->Execute(Op::Begin({.ns = "pay", .key = "b1", .fingerprint = "f"}));
  ASSERT_TRUE(replay.ok());
  ASSERT_EQ(Outcome::kCompleted, replay->outcome);
  // An op the engine refuses: an empty key.
  ASSERT_FALSE((*client)->Get({.ns = "pay", .key = ""}).ok());

  const Exposition after = Scrape();
  EXPECT_EQ(2, Ops(after, "insert", "INSERTED"));
  EXPECT_EQ(1, Ops(after, "insert", "EXISTS"));
  EXPECT_EQ(1, Ops(after, "begin", "STARTED"));    // the first execution...
  EXPECT_EQ(1, Ops(after, "begin", "COMPLETED"));  // ...and its replay
  EXPECT_EQ(1, Ops(after, "complete", "APPLIED"));
  EXPECT_EQ(1,
            after.ValueOr0("idem_op_errors_total", {{"op", "get"}, {"code", "INVALID_ARGUMENT"}}));
  EXPECT_EQ(3, after.ValueOr0("idem_request_duration_seconds_count",
                              {{"transport", "binary"}, {"op", "insert"}}));
  EXPECT_EQ(3, after.ValueOr0("idem_request_duration_seconds_bucket",
                              {{"transport", "binary"}, {"op", "insert"}, {"le", "+Inf"}}));
  // Every request was one group commit here (one client, one request at a time).
  EXPECT_GE(after.ValueOr0("idem_commit_batch_requests_count"), 7);
  EXPECT_EQ(1, after.ValueOr0("idem_connections_open"));
  EXPECT_EQ(1, after.ValueOr0("idem_connections_accepted_total"));
  EXPECT_GT(after.ValueOr0("idem_received_bytes_total", {{"transport", "binary"}}),
            before.ValueOr0("idem_received_bytes_total", {{"transport", "binary"}}));
  EXPECT_GT(after.ValueOr0("idem_sent_bytes_total", {{"transport", "binary"}}), 0);
  // The store's figures, read at scrape time.
  EXPECT_EQ(7, after.ValueOr0("idem_store_ops_total"));  // the invalid Get is not applied
  ASSERT_NE(nullptr, after.Family("idem_store_records_estimated"));
  ASSERT_NE(nullptr, after.Family("idem_store_pending_compaction_bytes"));
  ASSERT_NE(nullptr, after.Family("idem_expiry_unreclaimed_records"));
  ASSERT_NE(nullptr, after.Family("idem_store_expiry_windows"));
  ASSERT_NE(nullptr, after.Family("idem_store_expiry_window_filter_bytes"));
  ASSERT_NE(nullptr, after.Family("idem_store_journal_segments"));
  ASSERT_NE(nullptr, after.Family("idem_store_journal_bytes"));
  ASSERT_NE(nullptr, after.Family("idem_store_journal_index_bytes"));
  ASSERT_NE(nullptr, after.Family("idem_clock_steps_total"));
}

// A Delete that removes another scheme's record is an administrative override, and counted;
// deleting a plain record is not.
TEST_F(ServerMetricsTest, DeletesOfAnotherSchemesRecordAreCountedAsOverrides) {
  auto client = server_.Connect();
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Insert({.ns = "pay", .key = "plain", .status = "PENDING"}).ok());
  ASSERT_TRUE((*client)->Execute(Op::Begin({.ns = "pay", .key = "attempt"})).ok());
  ASSERT_TRUE((*client)->Delete({.ns = "pay", .key = "plain"}).ok());
  EXPECT_EQ(0, Scrape().ValueOr0("idem_store_admin_overrides_total"));
  ASSERT_TRUE((*client)->Delete({.ns = "pay", .key = "attempt"}).ok());
  EXPECT_EQ(1, Scrape().ValueOr0("idem_store_admin_overrides_total"));
}

TEST(ServerMetricsSyncTest, GroupCommitsAndWalSyncsAreCountedUnderDurabilitySync) {
  auto clock = std::make_shared<ManualClock>();
  EngineOptions engine_options = testing::TestEngineOptions(clock);
  engine_options.durability = Durability::kSync;
  testing::TestServer server({}, clock, engine_options, /*default_engine_options=*/false);
  auto client = server.Connect();
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Insert({.ns = "pay", .key = "k1", .status = "PENDING"}).ok());
  ASSERT_TRUE((*client)->Insert({.ns = "pay", .key = "k2", .status = "PENDING"}).ok());
  const Exposition e = ParseExposition(server.server().MetricsText());
  ASSERT_EQ("", e.error);
  // Each insert was acknowledged after a sync of its own (one client, one request at a time).
  EXPECT_GE(e.ValueOr0("idem_wal_sync_seconds_count"), 2);
  EXPECT_EQ(0, e.ValueOr0("idem_wal_sync_failures_total"));
  EXPECT_GE(e.ValueOr0("idem_store_wal_syncs_total"), 2);
  EXPECT_GE(e.ValueOr0("idem_commit_batch_ops_count"), 2);
  EXPECT_EQ(e.ValueOr0("idem_commit_batch_ops_count"),
            e.ValueOr0("idem_commit_batch_ops_bucket", {{"le", "1"}}));  // one op each
}

TEST_F(ServerMetricsTest, ConnectionsAndProtocolErrorsAreCounted) {
  {
    testing::RawSocket socket(server_.port());
    ASSERT_TRUE(socket.connected());
    uint8_t prefix[4] = {0xff, 0xff, 0xff, 0x7f};  // far above max_frame_bytes
    ASSERT_TRUE(socket.Send(prefix, 4));
    EXPECT_TRUE(socket.WaitClosed());
  }
  {
    testing::RawSocket socket(server_.port());
    ASSERT_TRUE(socket.SendFrame(std::vector<uint8_t>(64, 0xAB)));  // fails verification
    EXPECT_TRUE(socket.WaitClosed());
  }
  // The server notices the closes on its own thread: wait for both to be counted.
  Exposition e;
  for (int i = 0; i < 500; ++i) {
    e = Scrape();
    if (e.ValueOr0("idem_connections_open") == 0) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(2, e.ValueOr0("idem_connections_accepted_total"));
  EXPECT_EQ(0, e.ValueOr0("idem_connections_open"));
  EXPECT_EQ(1, e.ValueOr0("idem_protocol_errors_total", {{"code", "INVALID_ARGUMENT"}}));
  EXPECT_EQ(1, e.ValueOr0("idem_protocol_errors_total", {{"code", "CORRUPTION"}}));
}

TEST_F(ServerMetricsTest, ClientGetsTheSameCountersThroughTheBinaryProtocol) {
  auto client = server_.Connect();
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Insert({.ns = "pay", .key = "k1", .status = "PENDING"}).ok());
  auto stats = (*client)->GetServerStats();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(1u, stats->store.ops);
  const MetricFamily* ops = nullptr;
  const MetricFamily* latency = nullptr;
  for (const MetricFamily& f : stats->metrics) {
    if (f.name == "idem_ops_total") ops = &f;
    if (f.name == "idem_request_duration_seconds") latency = &f;
  }
  ASSERT_NE(nullptr, ops);
  EXPECT_EQ(MetricType::kCounter, ops->type);
  ASSERT_EQ(1u, ops->samples.size());
  using LabelList = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ((LabelList{{"op", "insert"}, {"outcome", "INSERTED"}}), ops->samples[0].labels);
  EXPECT_EQ(1, ops->samples[0].value);
  ASSERT_NE(nullptr, latency);
  EXPECT_EQ(MetricType::kHistogram, latency->type);
  ASSERT_EQ(1u, latency->samples.size());
  EXPECT_EQ(1u, latency->samples[0].count);
  EXPECT_TRUE(std::isinf(latency->samples[0].buckets.back().first));
  EXPECT_EQ(1u, latency->samples[0].buckets.back().second);
  // The plain Store interface still answers the store's figures alone.
  auto plain = (*client)->Stats();
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(1u, plain->ops);
}

}  // namespace
}  // namespace idem
