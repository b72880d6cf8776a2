#include "server_flags.h"

#include <vector>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace idem {
namespace {

Result<ServerFlags> Parse(std::vector<std::string_view> args) { return ParseServerFlags(args); }

TEST(ServerFlagsTest, Defaults) {
  Result<ServerFlags> f = Parse({});
  ASSERT_OK(f);
  EXPECT_EQ("127.0.0.1", f->server.host);
  EXPECT_EQ(7878, f->server.port);
  EXPECT_EQ("./data", f->data_dir);
  EXPECT_EQ(Durability::kSync, f->engine.durability);
  EXPECT_EQ(EngineOptions::Memtable::kHash, f->engine.memtable);
  EXPECT_EQ(EngineOptions::BackgroundPriority::kNormal, f->engine.background_priority);
  EXPECT_EQ(1u << 20, f->engine.wal_prezero_chunk_bytes);
  EXPECT_FALSE(f->server.allow_remote);
  EXPECT_FALSE(f->help);
  EXPECT_FALSE(f->max_connections_set);  // a default idemstored may lower (fd_budget.h)
}

TEST(ServerFlagsTest, EveryFlag) {
  Result<ServerFlags> f = Parse({"--listen",
                                 "0.0.0.0:0",
                                 "--allow-remote",
                                 "--data=/tmp/x",
                                 "--durability",
                                 "async",
                                 "--io-threads",
                                 "3",
                                 "--engine-threads=4",
                                 "--max-connections",
                                 "10",
                                 "--max-frame-bytes",
                                 "65536",
                                 "--idle-timeout",
                                 "500ms",
                                 "--max-reply-bytes",
                                 "1048576",
                                 "--max-queued-reply-bytes",
                                 "2097152",
                                 "--default-ttl",
                                 "1h",
                                 "--max-ttl",
                                 "2d",
                                 "--retention",
                                 "payments=1d,max=30d,remember=30d",
                                 "--retention",
                                 "locks=10s,forever",
                                 "--block-cache-mb",
                                 "32",
                                 "--write-buffer-mb=16",
                                 "--memtable",
                                 "skiplist",
                                 "--background-priority",
                                 "low",
                                 "--wal-prezero",
                                 "off",
                                 "--rocksdb-options",
                                 "level0_file_num_compaction_trigger=8"});
  ASSERT_OK(f);
  EXPECT_EQ("0.0.0.0", f->server.host);
  EXPECT_EQ(0, f->server.port);
  EXPECT_TRUE(f->server.allow_remote);
  EXPECT_EQ("/tmp/x", f->data_dir);
  EXPECT_EQ(Durability::kAsync, f->engine.durability);
  EXPECT_EQ(3, f->server.io_threads);
  EXPECT_EQ(4, f->server.engine_threads);
  EXPECT_EQ(10u, f->server.max_connections);
  EXPECT_TRUE(f->max_connections_set);
  EXPECT_EQ(65536u, f->server.max_frame_bytes);
  EXPECT_EQ(1u << 20, f->server.max_reply_bytes);
  EXPECT_EQ(2u << 20, f->server.max_queued_reply_bytes);
  EXPECT_EQ(500, f->server.idle_timeout_ms);
  EXPECT_EQ(3'600'000, f->engine.default_retention.default_ttl_ms);
  EXPECT_EQ(2 * 86'400'000, f->engine.default_retention.max_ttl_ms);
  const RetentionPolicy& payments = f->engine.retention.at("payments");
  EXPECT_EQ(86'400'000, payments.default_ttl_ms);
  EXPECT_EQ(30LL * 86'400'000, payments.max_ttl_ms);
  EXPECT_FALSE(payments.allow_forever);
  EXPECT_EQ(30LL * 86'400'000, payments.remember_ms);
  const RetentionPolicy& locks = f->engine.retention.at("locks");
  EXPECT_EQ(10'000, locks.default_ttl_ms);
  EXPECT_EQ(2 * 86'400'000, locks.max_ttl_ms);  // --max-ttl, wherever it appears
  EXPECT_TRUE(locks.allow_forever);
  EXPECT_EQ(0, locks.remember_ms);  // not remembered unless asked
  EXPECT_EQ(32u << 20, f->engine.block_cache_bytes);
  EXPECT_EQ(16u << 20, f->engine.write_buffer_bytes);
  EXPECT_EQ(EngineOptions::Memtable::kSkipList, f->engine.memtable);
  EXPECT_EQ(EngineOptions::BackgroundPriority::kLow, f->engine.background_priority);
  EXPECT_EQ(0u, f->engine.wal_prezero_chunk_bytes);
  EXPECT_EQ("level0_file_num_compaction_trigger=8", f->engine.rocksdb_options);
}

TEST(ServerFlagsTest, LifecycleFlags) {
  Result<ServerFlags> f =
      Parse({"--default-lease", "45s", "--state-graph", "order=NEW>PAID>SHIPPED,NEW>CANCELLED"});
  ASSERT_OK(f);
  EXPECT_EQ(45'000, f->engine.default_lifecycle.default_lease_ms);
  const StateGraph& graph = f->engine.state_graphs.at("order");
  EXPECT_TRUE(graph.Allows("NEW", "PAID"));
  EXPECT_TRUE(graph.Allows("NEW", "CANCELLED"));
  EXPECT_FALSE(graph.Allows("PAID", "NEW"));
  EXPECT_FALSE(Parse({"--state-graph", "nograph"}).ok());
}

TEST(ServerFlagsTest, PerNamespaceLifecyclePolicies) {
  Result<ServerFlags> f =
      Parse({"--lifecycle",
             "pay=lease=10s,max-lease=2h,completed-ttl=7d,remember-failures,max-response=65536",
             "--lifecycle=queue=completed-ttl=1h", "--default-lease", "45s"});
  ASSERT_OK(f);
  const LifecyclePolicy& pay = f->engine.lifecycle.at("pay");
  EXPECT_EQ(10'000, pay.default_lease_ms);
  EXPECT_EQ(2 * 3'600'000, pay.max_lease_ms);
  EXPECT_EQ(7 * 24 * 3'600'000LL, pay.completed_ttl_ms);
  EXPECT_TRUE(pay.remember_failures);
  EXPECT_EQ(65536u, pay.max_response_bytes);
  const LifecyclePolicy& queue = f->engine.lifecycle.at("queue");
  EXPECT_EQ(45'000, queue.default_lease_ms);  // --default-lease applies, whatever the order
  EXPECT_FALSE(queue.remember_failures);
  EXPECT_EQ(3'600'000, queue.completed_ttl_ms);
  for (std::string_view bad :
       {"pay", "pay=lease", "pay=lease=soon", "pay=colour=red", "pay=max-response=-1"}) {
    Result<ServerFlags> r = Parse({"--lifecycle", bad});
    EXPECT_TRUE(r.status().IsInvalidArgument()) << bad;
    EXPECT_NE(std::string::npos, r.status().message().find("--lifecycle")) << r.status().message();
  }
}

TEST(ServerFlagsTest, KeyFormats) {
  Result<ServerFlags> f = Parse(
      {"--key-format", "payments=min=16,max=64,chars=[A-Za-z0-9,_-]", "--key-format=orders=uuid"});
  ASSERT_OK(f);
  EXPECT_EQ("16..64 bytes of [A-Za-z0-9,_-]", f->engine.key_formats.at("payments").Describe());
  EXPECT_TRUE(f->engine.key_formats.at("orders").uuid());
  EXPECT_TRUE(f->engine.key_formats.at("payments").Admits("order,2026-12-02"));
  EXPECT_FALSE(f->engine.key_formats.at("payments").Admits("order 2026-12-02"));
  EXPECT_NE(std::string::npos, ServerFlagsUsage().find("--key-format NS="));

  Result<ServerFlags> bad = Parse({"--key-format", "payments=min=16,max=8"});
  EXPECT_EQ(
      "--key-format payments: key format: max=8 is below min=16; expected \"uuid\" or "
      "min=N,max=N,chars=[SET] (each part optional), e.g. min=16,max=64,chars=[A-Za-z0-9_-]",
      bad.status().message());
  bad = Parse({"--key-format", "uuid"});
  EXPECT_EQ("--key-format: expected NS=uuid or NS=min=N,max=N,chars=[SET]", bad.status().message());
  bad = Parse({"--key-format", "payments=max=4096"});  // longer than any key may be
  EXPECT_EQ("--key-format payments: keys are at most 512 bytes (max_key_bytes)",
            bad.status().message());
}

TEST(ServerFlagsTest, HttpListenerIsOffUnlessGiven) {
  Result<ServerFlags> off = Parse({});
  ASSERT_OK(off);
  EXPECT_FALSE(off->server.http.has_value());

  Result<ServerFlags> f = Parse({"--http-max-body-bytes", "65536", "--http-listen",
                                 "127.0.0.1:8080", "--http-max-connections=9",
                                 "--http-max-header-bytes", "4096", "--http-idle-timeout", "5s"});
  ASSERT_OK(f);
  ASSERT_TRUE(f->server.http.has_value());
  EXPECT_EQ("127.0.0.1", f->server.http->host);
  EXPECT_EQ(8080, f->server.http->port);
  EXPECT_EQ(9u, f->server.http->max_connections);
  EXPECT_EQ(4096u, f->server.http->max_header_bytes);
  EXPECT_EQ(65536u, f->server.http->max_body_bytes);
  EXPECT_EQ(5000, f->server.http->idle_timeout_ms);
}

TEST(ServerFlagsTest, HttpLimitsWithoutTheListenerAreRefused) {
  Result<ServerFlags> f = Parse({"--http-max-body-bytes", "65536"});
  ASSERT_FALSE(f.ok());
  EXPECT_NE(std::string::npos, f.status().message().find("needs --http-listen"))
      << f.status().ToString();
  EXPECT_FALSE(Parse({"--http-listen", "localhost"}).ok());
  EXPECT_FALSE(Parse({"--http-listen", "127.0.0.1:8080", "--http-idle-timeout", "0s"}).ok());
}

TEST(ServerFlagsTest, Ipv6Listen) {
  Result<ServerFlags> f = Parse({"--listen", "[::1]:9000"});
  ASSERT_OK(f);
  EXPECT_EQ("::1", f->server.host);
  EXPECT_EQ(9000, f->server.port);
}

TEST(ServerFlagsTest, Help) {
  EXPECT_TRUE(Parse({"--help"})->help);
  EXPECT_TRUE(Parse({"-h"})->help);
  EXPECT_NE(std::string::npos, ServerFlagsUsage().find("--retention"));
}

TEST(ServerFlagsTest, LogFormat) {
  EXPECT_EQ(LogFormat::kText, Parse({})->server.log_format);
  EXPECT_EQ(LogFormat::kJson, Parse({"--log-format", "json"})->server.log_format);
  EXPECT_EQ(LogFormat::kText, Parse({"--log-format=text"})->server.log_format);
  Result<ServerFlags> bad = Parse({"--log-format", "xml"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ("INVALID_ARGUMENT: --log-format: expected text or json", bad.status().ToString());
}

TEST(ServerFlagsTest, ErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string_view> args;
    std::string_view flag;
  };
  for (const Case& c : std::vector<Case>{
           {{"--bogus"}, "--bogus"},
           {{"--listen"}, "--listen"},
           {{"--listen", "nocolon"}, "--listen"},
           {{"--listen", "h:99999"}, "--listen"},
           {{"--durability", "maybe"}, "--durability"},
           {{"--io-threads", "0"}, "--io-threads"},
           {{"--io-threads", "2x"}, "--io-threads"},
           {{"--idle-timeout", "0s"}, "--idle-timeout"},
           {{"--idle-timeout", "soon"}, "--idle-timeout"},
           {{"--max-frame-bytes", "12"}, "--max-frame-bytes"},
           {{"--max-reply-bytes", "12"}, "--max-reply-bytes"},
           {{"--max-reply-bytes", "4294967296"}, "--max-reply-bytes"},
           {{"--max-queued-reply-bytes", "0"}, "--max-queued-reply-bytes"},
           {{"--retention", "nosep"}, "--retention"},
           {{"--retention", "a=1h,sometimes"}, "--retention"},
           {{"--retention", "a=1h,max=x"}, "--retention"},
           {{"--retention", "a=1h,remember=soon"}, "--retention"},
           {{"--retention", "a=1h,remember=3651d"}, "--retention"},
           {{"--block-cache-mb", "0"}, "--block-cache-mb"},
           {{"--write-buffer-mb", "lots"}, "--write-buffer-mb"},
           {{"--memtable", "btree"}, "--memtable"},
           {{"--background-priority", "idle"}, "--background-priority"},
           {{"--wal-prezero", "yes"}, "--wal-prezero"},
           {{"--rocksdb-options"}, "--rocksdb-options"},
       }) {
    Result<ServerFlags> f = Parse(c.args);
    ASSERT_FALSE(f.ok()) << c.args[0];
    EXPECT_TRUE(f.status().IsInvalidArgument());
    EXPECT_NE(std::string::npos, f.status().message().find(c.flag)) << f.status().ToString();
  }
}

TEST(ServerFlagsTest, EngineThreadsDefaultToTheEventLoop) {
  std::vector<std::string_view> args = {"--durability", "sync"};
  Result<ServerFlags> f = ParseServerFlags(args);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(0, f->server.engine_threads);
  EXPECT_EQ(1, f->server.io_threads);
  args = {"--engine-threads", "3"};
  f = ParseServerFlags(args);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(3, f->server.engine_threads);
  args = {"--engine-threads", "-1"};
  EXPECT_FALSE(ParseServerFlags(args).ok());
}

}  // namespace
}  // namespace idem
