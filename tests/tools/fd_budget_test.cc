// PlanFdBudget: connections, refusals, the server's own descriptors and RocksDB's files must fit
// the open-files limit; a default that does not fit is lowered, an explicit one refused.
#include "fd_budget.h"

#include <climits>
#include <string>

#include <gtest/gtest.h>

#include "idem/server.h"
#include "server_flags.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

const size_t kRefusing = ServerOptions().max_refusing_connections;
const size_t kReserved = kRefusing + kServerOwnFds + kMinRocksDbFiles;

FdBudgetRequest Request(uint64_t soft, uint64_t hard, size_t max_connections, bool is_explicit) {
  FdBudgetRequest r;
  r.limit = OpenFilesLimit{soft, hard};
  r.max_connections = max_connections;
  r.max_connections_explicit = is_explicit;
  r.max_refusing_connections = kRefusing;
  return r;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(FdBudgetTest, AGenerousLimitServesEveryConnectionAndGivesRocksDbTheRest) {
  Result<FdBudget> b = PlanFdBudget(Request(20'000, 20'000, 1024, false));
  ASSERT_OK(b);
  EXPECT_EQ(1024u, b->max_connections);
  EXPECT_EQ(20'000 - 1024 - kRefusing - kServerOwnFds,
            static_cast<size_t>(b->rocksdb_max_open_files));
  EXPECT_EQ("", b->warning);
}

TEST(FdBudgetTest, HttpConnectionsAreReservedBesideTheBinaryOnes) {
  FdBudgetRequest request = Request(20'000, 20'000, 1024, false);
  request.http_connections = 257;
  Result<FdBudget> b = PlanFdBudget(request);
  ASSERT_OK(b);
  EXPECT_EQ(1024u, b->max_connections);
  EXPECT_EQ(20'000 - 1024 - 257 - kRefusing - kServerOwnFds,
            static_cast<size_t>(b->rocksdb_max_open_files));
  request = Request(1024, 1024, 1024, true);
  request.http_connections = 257;
  Result<FdBudget> refused = PlanFdBudget(request);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status().message(), "257 for HTTP connections"))
      << refused.status().message();
}

// Each gateway client connection may hold an upstream connection, beside the idle pool.
TEST(FdBudgetTest, GatewayClientAndUpstreamConnectionsAreReserved) {
  GatewayOptions gateway;
  gateway.max_connections = 100;
  EXPECT_EQ(200 + gateway.max_refusing_connections + gateway.max_idle_upstream_connections,
            GatewayDescriptors(gateway));
  FdBudgetRequest request = Request(20'000, 20'000, 1024, false);
  request.gateway_connections = GatewayDescriptors(gateway);
  Result<FdBudget> b = PlanFdBudget(request);
  ASSERT_OK(b);
  EXPECT_EQ(1024u, b->max_connections);
  EXPECT_EQ(20'000 - 1024 - GatewayDescriptors(gateway) - kRefusing - kServerOwnFds,
            static_cast<size_t>(b->rocksdb_max_open_files));
  request = Request(1024, 1024, 401, true);  // would fit without the gateway
  request.gateway_connections = GatewayDescriptors(gateway);
  Result<FdBudget> refused = PlanFdBudget(request);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status().message(),
                       std::to_string(GatewayDescriptors(gateway)) +
                           " for the gateway's client and upstream connections"))
      << refused.status().message();
}

// The journal layout keeps its segment files open beside RocksDB's (EngineOptions::
// journal_max_open_files and a few more): reserved, not taken from RocksDB's minimum.
TEST(FdBudgetTest, TheJournalsSegmentFilesAreReserved) {
  EngineOptions engine;
  EXPECT_EQ(0u, JournalDescriptors(engine));
  engine.layout = EngineOptions::Layout::kJournal;
  engine.journal_max_open_files = 100;
  EXPECT_EQ(100 + kJournalOwnFds, JournalDescriptors(engine));
  FdBudgetRequest request = Request(20'000, 20'000, 1024, false);
  request.journal_files = JournalDescriptors(engine);
  Result<FdBudget> b = PlanFdBudget(request);
  ASSERT_OK(b);
  EXPECT_EQ(1024u, b->max_connections);
  EXPECT_EQ(20'000 - 1024 - JournalDescriptors(engine) - kRefusing - kServerOwnFds,
            static_cast<size_t>(b->rocksdb_max_open_files));
  request = Request(1024, 1024, kReserved > 1024 ? 1 : 1024 - kReserved, true);  // fits without
  request.journal_files = JournalDescriptors(engine);
  Result<FdBudget> refused = PlanFdBudget(request);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status().message(), std::to_string(JournalDescriptors(engine)) +
                                                       " for the journal's segment files"))
      << refused.status().message();
}

TEST(FdBudgetTest, TheDefaultIsLoweredToFit1024WithAWarningNamingTheNumbers) {
  Result<FdBudget> b = PlanFdBudget(Request(1024, 1024, 1024, false));
  ASSERT_OK(b);
  EXPECT_EQ(1024 - kReserved, b->max_connections);  // 672
  EXPECT_EQ(kMinRocksDbFiles, static_cast<size_t>(b->rocksdb_max_open_files));
  // Everything together fits the limit exactly.
  EXPECT_EQ(1024u, b->max_connections + kRefusing + kServerOwnFds +
                       static_cast<size_t>(b->rocksdb_max_open_files));
  EXPECT_TRUE(Contains(b->warning, "serving at most 672 connections")) << b->warning;
  EXPECT_TRUE(Contains(b->warning, "open-files limit is 1024 (hard 1024)")) << b->warning;
  EXPECT_TRUE(Contains(b->warning, "--max-connections")) << b->warning;
  EXPECT_TRUE(Contains(b->warning, "LimitNOFILE")) << b->warning;
}

TEST(FdBudgetTest, AnExplicitMaxConnectionsThatDoesNotFitRefusesTheStart) {
  Result<FdBudget> b = PlanFdBudget(Request(1024, 1024, 1000, true));
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(b.status().IsInvalidArgument());
  const std::string& m = b.status().message();
  EXPECT_TRUE(Contains(m, "--max-connections 1000 needs")) << m;
  EXPECT_TRUE(Contains(m, "= " + std::to_string(1000 + kReserved) + " descriptors")) << m;
  EXPECT_TRUE(Contains(m, "at most 672")) << m;
  EXPECT_TRUE(Contains(m, "ulimit -n")) << m;
}

TEST(FdBudgetTest, AnExplicitMaxConnectionsThatFitsIsKept) {
  Result<FdBudget> b = PlanFdBudget(Request(1024, 1024, 672, true));
  ASSERT_OK(b);
  EXPECT_EQ(672u, b->max_connections);
  EXPECT_EQ(kMinRocksDbFiles, static_cast<size_t>(b->rocksdb_max_open_files));
  b = PlanFdBudget(Request(1024, 4096, 100, true));
  ASSERT_OK(b);
  EXPECT_EQ(100u, b->max_connections);
  EXPECT_EQ(1024 - 100 - kRefusing - kServerOwnFds, static_cast<size_t>(b->rocksdb_max_open_files));
}

TEST(FdBudgetTest, ALimitTooSmallForOneConnectionRefusesEvenTheDefault) {
  Result<FdBudget> b = PlanFdBudget(Request(kReserved, kReserved, 1024, false));
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(Contains(b.status().message(), "too low")) << b.status().ToString();
  EXPECT_TRUE(Contains(b.status().message(), std::to_string(kReserved + 1)))
      << b.status().ToString();
  b = PlanFdBudget(Request(kReserved + 1, kReserved + 1, 1024, false));
  ASSERT_OK(b);
  EXPECT_EQ(1u, b->max_connections);
}

TEST(FdBudgetTest, RocksDbsShareIsCappedToAnInt) {
  Result<FdBudget> b = PlanFdBudget(Request(uint64_t{1} << 40, uint64_t{1} << 40, 1024, false));
  ASSERT_OK(b);
  EXPECT_EQ(INT_MAX, b->rocksdb_max_open_files);
}

TEST(FdBudgetTest, TheFlagHelpStatesTheBudget) {
  EXPECT_TRUE(Contains(ServerFlagsUsage(), "N + " + std::to_string(kReserved) + " (BUSY replies"))
      << "update --max-connections in ServerFlagsUsage()";
  EXPECT_TRUE(Contains(ServerFlagsUsage(), "minimum of " + std::to_string(kMinRocksDbFiles)));
}

TEST(FdBudgetTest, RaisingTheLimitReachesTheHardLimit) {
  Result<OpenFilesLimit> limit = RaiseOpenFilesLimit();
  ASSERT_OK(limit);
  EXPECT_EQ(limit->hard, limit->soft);
}

}  // namespace
}  // namespace idem
