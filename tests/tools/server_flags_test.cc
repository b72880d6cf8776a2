#include "server_flags.h"

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace idem {
namespace {

Result<ServerFlags> Parse(std::vector<std::string_view> args) { return ParseServerFlags(args); }

// A configuration file in a temporary directory.
class ConfigFile {
 public:
  explicit ConfigFile(const std::string& text) { std::ofstream(path_) << text; }
  const std::string& path() const { return path_; }

 private:
  testing::TempDir dir_;
  std::string path_ = dir_.Sub("idemstored.conf");
};

std::string ReadFile(const std::string& path) {
  std::ostringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

TEST(ServerFlagsTest, Defaults) {
  Result<ServerFlags> f = Parse({});
  ASSERT_OK(f);
  EXPECT_EQ("127.0.0.1", f->server.host);
  EXPECT_EQ(7878, f->server.port);
  EXPECT_EQ("./data", f->data_dir);
  EXPECT_EQ(Durability::kSync, f->engine.durability);
  EXPECT_EQ(EngineOptions::Memtable::kHash, f->engine.memtable);
  EXPECT_EQ(EngineOptions::Layout::kLeveled, f->engine.layout);
  EXPECT_EQ(3'600'000, f->engine.expiry_window_ms);
  EXPECT_EQ(32, f->engine.expiry_window_merge_files);
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
                                 "--layout",
                                 "windows",
                                 "--expiry-window",
                                 "6h",
                                 "--expiry-window-merge-files",
                                 "0",
                                 "--background-priority",
                                 "low",
                                 "--wal-prezero",
                                 "off",
                                 "--journal-compression",
                                 "on",
                                 "--journal-index-save-interval",
                                 "2m",
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
  EXPECT_EQ(EngineOptions::Layout::kExpiryWindows, f->engine.layout);
  EXPECT_EQ(6 * 3'600'000, f->engine.expiry_window_ms);
  EXPECT_EQ(0, f->engine.expiry_window_merge_files);
  EXPECT_EQ(EngineOptions::BackgroundPriority::kLow, f->engine.background_priority);
  EXPECT_EQ(0u, f->engine.wal_prezero_chunk_bytes);
  EXPECT_EQ(EngineOptions::kDefaultJournalDictionaryBytes, f->engine.journal_dictionary_bytes);
  EXPECT_EQ(120'000, f->engine.journal_index_save_interval_ms);
  EXPECT_EQ("level0_file_num_compaction_trigger=8", f->engine.rocksdb_options);
}

TEST(ServerFlagsTest, TheJournalLayoutIsAChoiceAndAnUnknownOneNamesThemAll) {
  Result<ServerFlags> f = Parse({"--layout", "journal"});
  ASSERT_OK(f);
  EXPECT_EQ(EngineOptions::Layout::kJournal, f->engine.layout);
  Result<ServerFlags> bad = Parse({"--layout", "fifo"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string::npos, bad.status().message().find("leveled, windows or journal"))
      << bad.status().message();
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

TEST(ServerFlagsTest, GatewayIsOffUnlessItsUpstreamIsGiven) {
  Result<ServerFlags> off = Parse({});
  ASSERT_OK(off);
  EXPECT_FALSE(off->server.gateway.has_value());

  Result<ServerFlags> f = Parse({"--gateway-upstream", "http://127.0.0.1:8080"});
  ASSERT_OK(f);
  ASSERT_TRUE(f->server.gateway.has_value());
  // Every default is GatewayOptions' own.
  const GatewayOptions defaults;
  const GatewayOptions& g = *f->server.gateway;
  EXPECT_EQ("http://127.0.0.1:8080", g.upstream);
  EXPECT_EQ(defaults.host, g.host);
  EXPECT_EQ(7880, g.port);
  EXPECT_EQ(defaults.route.methods, g.route.methods);
  EXPECT_EQ(defaults.route.ns, g.route.ns);
  EXPECT_EQ(defaults.route.identity_header, g.route.identity_header);
  EXPECT_EQ(defaults.route.fingerprint_headers, g.route.fingerprint_headers);
  EXPECT_EQ(defaults.route.replay_headers, g.route.replay_headers);
  EXPECT_EQ(defaults.route.lease_ms, g.route.lease_ms);
  EXPECT_EQ(defaults.max_stored_response_bytes, g.max_stored_response_bytes);
}

TEST(ServerFlagsTest, EveryGatewayFlag) {
  Result<ServerFlags> f = Parse({"--gateway-upstream=http://[::1]:9000/",
                                 "--gateway-listen",
                                 "127.0.0.1:0",
                                 "--gateway-methods",
                                 "POST, PUT,DELETE",
                                 "--gateway-paths",
                                 "/v1/payments,/v1/orders/",
                                 "--gateway-require-key",
                                 "--gateway-namespace",
                                 "http.payments",
                                 "--gateway-identity-header",
                                 "X-Api-Key",
                                 "--gateway-fingerprint-headers",
                                 "Content-Type,X-Tenant",
                                 "--gateway-replay-headers",
                                 "Content-Type,Location,ETag",
                                 "--gateway-lease",
                                 "10s",
                                 "--gateway-wait",
                                 "2s",
                                 "--gateway-store-5xx",
                                 "--gateway-max-connections",
                                 "99",
                                 "--gateway-max-header-bytes",
                                 "8192",
                                 "--gateway-max-request-body",
                                 "65536",
                                 "--gateway-max-stored-response",
                                 "0",
                                 "--gateway-upstream-timeout",
                                 "5s",
                                 "--gateway-idle-timeout",
                                 "90s"});
  ASSERT_OK(f);
  ASSERT_TRUE(f->server.gateway.has_value());
  const GatewayOptions& g = *f->server.gateway;
  EXPECT_EQ("http://[::1]:9000", g.upstream);  // the trailing '/' dropped
  EXPECT_EQ("127.0.0.1", g.host);
  EXPECT_EQ(0, g.port);
  EXPECT_EQ((std::vector<std::string>{"POST", "PUT", "DELETE"}), g.route.methods);
  EXPECT_EQ((std::vector<std::string>{"/v1/payments", "/v1/orders/"}), g.route.path_prefixes);
  EXPECT_TRUE(g.route.require_key);
  EXPECT_EQ("http.payments", g.route.ns);
  EXPECT_EQ("X-Api-Key", g.route.identity_header);
  EXPECT_EQ((std::vector<std::string>{"Content-Type", "X-Tenant"}), g.route.fingerprint_headers);
  EXPECT_EQ((std::vector<std::string>{"Content-Type", "Location", "ETag"}), g.route.replay_headers);
  EXPECT_EQ(10'000, g.route.lease_ms);
  EXPECT_EQ(2'000, g.route.wait_ms);
  EXPECT_TRUE(g.route.store_server_errors);
  EXPECT_EQ(99u, g.max_connections);
  EXPECT_EQ(8192u, g.max_header_bytes);
  EXPECT_EQ(65536u, g.max_request_body_bytes);
  EXPECT_EQ(0u, g.max_stored_response_bytes);
  EXPECT_EQ(5'000, g.upstream_timeout_ms);
  EXPECT_EQ(90'000, g.idle_timeout_ms);
}

TEST(ServerFlagsTest, AnUpstreamWithoutAPortIsOnPort80) {
  Result<ServerFlags> f = Parse({"--gateway-upstream", "http://api.internal"});
  ASSERT_OK(f);
  EXPECT_EQ("http://api.internal", f->server.gateway->upstream);
  f = Parse({"--gateway-upstream", "http://[::1]/"});
  ASSERT_OK(f);
  EXPECT_EQ("http://[::1]", f->server.gateway->upstream);
}

TEST(ServerFlagsTest, EmptyGatewayListsAndIdentityMeanNoneAndOneSharedScope) {
  Result<ServerFlags> f = Parse({"--gateway-upstream", "http://localhost:8080",
                                 "--gateway-identity-header", "", "--gateway-fingerprint-headers",
                                 "", "--gateway-replay-headers", "", "--gateway-paths", ""});
  ASSERT_OK(f);
  const GatewayRoute& route = f->server.gateway->route;
  EXPECT_EQ("", route.identity_header);
  EXPECT_TRUE(route.fingerprint_headers.empty());
  EXPECT_TRUE(route.replay_headers.empty());
  EXPECT_TRUE(route.path_prefixes.empty());
}

TEST(ServerFlagsTest, GatewayFlagsWithoutTheUpstreamAreRefused) {
  for (std::vector<std::string_view> args : std::vector<std::vector<std::string_view>>{
           {"--gateway-listen", "127.0.0.1:7880"},
           {"--gateway-require-key"},
           {"--gateway-methods", "POST", "--gateway-wait", "1s"},
       }) {
    Result<ServerFlags> f = Parse(args);
    ASSERT_FALSE(f.ok()) << args[0];
    EXPECT_TRUE(f.status().IsInvalidArgument());
    EXPECT_NE(std::string::npos, f.status().message().find(
                                     ": needs --gateway-upstream (the gateway is off without it)"))
        << f.status().message();
  }
  EXPECT_EQ("--gateway-wait: needs --gateway-upstream (the gateway is off without it)",
            Parse({"--gateway-methods", "POST", "--gateway-wait", "1s"}).status().message());
}

TEST(ServerFlagsTest, AnHttpsUpstreamIsRefusedAsNotSupported) {
  Result<ServerFlags> f = Parse({"--gateway-upstream", "https://api.example.com:443"});
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(
      "INVALID_ARGUMENT: --gateway-upstream: https:// upstreams are not supported yet: give the "
      "upstream's plain http://HOST:PORT (loopback or a trusted network)",
      f.status().ToString());
}

TEST(ServerFlagsTest, BadGatewayValuesNameTheFlagAndTheRule) {
  struct Case {
    std::vector<std::string_view> args;
    std::string_view message;
  };
  for (const Case& c : std::vector<Case>{
           {{"--gateway-upstream", "127.0.0.1:8080"},
            "--gateway-upstream: expected http://HOST:PORT, got \"127.0.0.1:8080\""},
           {{"--gateway-upstream", "http://"},
            "--gateway-upstream: expected http://HOST:PORT, got \"http://\" (a port in "
            "1..65535)"},
           {{"--gateway-upstream", "http://:8080"},
            "--gateway-upstream: expected http://HOST:PORT, got \"http://:8080\" (a port in "
            "1..65535)"},
           {{"--gateway-upstream", "http://127.0.0.1:0"},
            "--gateway-upstream: expected http://HOST:PORT, got \"http://127.0.0.1:0\" (a port "
            "in 1..65535)"},
           {{"--gateway-upstream", "http://127.0.0.1:8080/api"},
            "--gateway-upstream: no path, query or user part: requests keep their own paths; "
            "expected http://HOST:PORT, got \"http://127.0.0.1:8080/api\""},
           {{"--gateway-upstream", "http://h:1", "--gateway-listen", "nocolon"},
            "--gateway-listen: expected HOST:PORT"},
           {{"--gateway-upstream", "http://h:1", "--gateway-methods", "post"},
            "--gateway-methods: \"post\": methods are case-sensitive and requests send them in "
            "capitals (POST, not post)"},
           {{"--gateway-upstream", "http://h:1", "--gateway-methods", ""},
            "--gateway-methods: needs at least one method"},
           {{"--gateway-upstream", "http://h:1", "--gateway-methods", "POST,,PUT"},
            "--gateway-methods: an empty item in \"POST,,PUT\""},
           {{"--gateway-upstream", "http://h:1", "--gateway-paths", "v1/payments"},
            "--gateway-paths: \"v1/payments\" is not a path prefix (starts with '/'; no spaces, "
            "'?' or '#')"},
           {{"--gateway-upstream", "http://h:1", "--gateway-namespace", "pay ments"},
            "--gateway-namespace: expected 1..64 characters of [A-Za-z0-9_.:-]"},
           {{"--gateway-upstream", "http://h:1", "--gateway-identity-header", "X Api Key"},
            "--gateway-identity-header: \"X Api Key\" is not a header name (RFC 9110 token)"},
           {{"--gateway-upstream", "http://h:1", "--gateway-replay-headers", "Content-Type,Loc:"},
            "--gateway-replay-headers: \"Loc:\" is not a header name (RFC 9110 token)"},
           {{"--gateway-upstream", "http://h:1", "--gateway-lease", "500ms"},
            "--gateway-lease: must be at least 1s"},
           {{"--gateway-upstream", "http://h:1", "--gateway-wait", "soon"}, "--gateway-wait: "},
           {{"--gateway-upstream", "http://h:1", "--gateway-upstream-timeout", "0s"},
            "--gateway-upstream-timeout: must be positive"},
           {{"--gateway-upstream", "http://h:1", "--gateway-idle-timeout", "0s"},
            "--gateway-idle-timeout: must be positive"},
           {{"--gateway-upstream", "http://h:1", "--gateway-max-connections", "0"},
            "--gateway-max-connections: expected an integer in [1, 1000000], got \"0\""},
           {{"--gateway-upstream", "http://h:1", "--gateway-max-request-body", "-1"},
            "--gateway-max-request-body: expected an integer in [0, 1073741824], got \"-1\""},
           {{"--gateway-upstream", "http://h:1", "--gateway-require-key=maybe"},
            "--gateway-require-key: expected true or false"},
       }) {
    Result<ServerFlags> f = Parse(c.args);
    ASSERT_FALSE(f.ok()) << c.args.back();
    EXPECT_TRUE(f.status().IsInvalidArgument());
    EXPECT_TRUE(f.status().message().starts_with(c.message)) << f.status().message();
  }
}

// What the gateway's namespace would refuse on every request is refused at start instead.
TEST(ServerFlagsTest, TheGatewayMustFitItsNamespacesPolicy) {
  Result<ServerFlags> f = Parse({"--gateway-upstream", "http://h:1", "--gateway-namespace", "pay",
                                 "--lifecycle", "pay=max-lease=20s", "--gateway-lease", "30s"});
  EXPECT_EQ(
      "--gateway-lease: 30s is longer than namespace pay's longest lease, 20s (--lifecycle "
      "pay=max-lease=DUR)",
      f.status().message());
  f = Parse({"--gateway-upstream", "http://h:1", "--lifecycle", "gateway=max-response=1000",
             "--gateway-max-stored-response", "1001"});
  EXPECT_EQ(
      "--gateway-max-stored-response: 1001 is more than namespace gateway stores: responses of "
      "at most 1000 bytes (--lifecycle gateway=max-response=BYTES, the payload limit)",
      f.status().message());
  f = Parse({"--gateway-upstream", "http://h:1", "--gateway-wait", "6m"});
  EXPECT_EQ("--gateway-wait: at most 5m (the longest wait a Begin may ask for)",
            f.status().message());
  f = Parse({"--gateway-upstream", "http://h:1", "--key-format", "gateway=uuid"});
  EXPECT_NE(std::string::npos, f.status().message().find("give it no key format"))
      << f.status().message();
  // Within the namespace's limits, whatever the flags' order.
  ASSERT_OK(Parse({"--gateway-lease", "2h", "--gateway-upstream", "http://h:1",
                   "--gateway-max-stored-response", "1000", "--lifecycle",
                   "gateway=max-lease=2h,max-response=1000"}));
}

TEST(ServerFlagsTest, GatewayConfigPrintsAndReadsBack) {
  Result<ServerFlags> given =
      Parse({"--gateway-upstream", "http://127.0.0.1:8080", "--gateway-methods", "POST,PUT",
             "--gateway-paths", "/v1/a,/v1/b", "--gateway-identity-header", "",
             "--gateway-require-key", "--gateway-wait", "1s500ms", "--print-config"});
  ASSERT_OK(given);
  const std::string& text = given->effective_config;
  EXPECT_NE(std::string::npos, text.find("gateway-upstream = \"http://127.0.0.1:8080\"\n")) << text;
  EXPECT_NE(std::string::npos, text.find("gateway-methods = \"POST,PUT\"\n")) << text;
  EXPECT_NE(std::string::npos, text.find("gateway-identity-header = \"\"\n")) << text;
  EXPECT_NE(std::string::npos, text.find("# gateway-listen = \"127.0.0.1:7880\"\n")) << text;
  EXPECT_NE(std::string::npos, text.find("# gateway-replay-headers = \"Content-Type,Location\"\n"))
      << text;

  ConfigFile file(text);
  Result<ServerFlags> read = Parse({"--config", file.path()});
  ASSERT_OK(read);
  EXPECT_EQ(text, read->effective_config);
  ASSERT_TRUE(read->server.gateway.has_value());
  const GatewayOptions& g = *read->server.gateway;
  EXPECT_EQ("http://127.0.0.1:8080", g.upstream);
  EXPECT_EQ((std::vector<std::string>{"POST", "PUT"}), g.route.methods);
  EXPECT_EQ((std::vector<std::string>{"/v1/a", "/v1/b"}), g.route.path_prefixes);
  EXPECT_EQ("", g.route.identity_header);
  EXPECT_TRUE(g.route.require_key);
  EXPECT_EQ(1'500, g.route.wait_ms);

  ConfigFile without_upstream("gateway-wait = \"1s\"\n");
  EXPECT_EQ("--gateway-wait: needs --gateway-upstream (the gateway is off without it)",
            Parse({"--config", without_upstream.path()}).status().message());
  ConfigFile https("\ngateway-upstream = \"https://127.0.0.1:8443\"\n");
  Result<ServerFlags> f = Parse({"--config", https.path()});
  EXPECT_NE(std::string::npos,
            f.status().message().find(https.path() + ":2: gateway-upstream: https:// upstreams "
                                                     "are not supported yet"))
      << f.status().message();
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
  // Defaults come from EngineOptions and ServerOptions, written as they would be typed.
  EXPECT_NE(
      std::string::npos,
      ServerFlagsUsage().find(
          "--default-ttl DUR           TTL of records in namespaces without a policy (default 1d)"))
      << ServerFlagsUsage();
  EXPECT_NE(std::string::npos, ServerFlagsUsage().find("Durations: a number and a unit"));
  EXPECT_NE(std::string::npos, ServerFlagsUsage().find("SIGINT/SIGTERM"));
  EXPECT_TRUE(Parse({"--version"})->version);
}

TEST(ServerFlagsTest, ConfigFileSetsFlagsAndTheCommandLineReplacesThem) {
  ConfigFile file(R"(# comments and blank lines are skipped

listen = "127.0.0.1:9100"
allow-remote = true
data = "/srv/idem"
durability = "async"
idle-timeout = "90s"
max-connections = 10
rocksdb-options = "level0_file_num_compaction_trigger=8;max_background_jobs=4"
retention = ["payments=1d,max=30d,remember=30d", "locks=10s,forever"]
lifecycle = ["pay=lease=10s,remember-failures"]
state-graph = ["order=NEW>PAID>SHIPPED,NEW>CANCELLED"]
key-format = ["payments=min=16,max=64,chars=[A-Za-z0-9,_-]", "orders=uuid"]
)");
  Result<ServerFlags> f = Parse({"--config", file.path(), "--durability=sync"});
  ASSERT_OK(f);
  EXPECT_EQ(9100, f->server.port);
  EXPECT_TRUE(f->server.allow_remote);
  EXPECT_EQ("/srv/idem", f->data_dir);
  EXPECT_EQ(Durability::kSync, f->engine.durability);  // the command line's
  EXPECT_EQ(90'000, f->server.idle_timeout_ms);
  EXPECT_EQ(10u, f->server.max_connections);
  EXPECT_TRUE(f->max_connections_set);  // the operator's number, if from the file
  EXPECT_EQ("level0_file_num_compaction_trigger=8;max_background_jobs=4",
            f->engine.rocksdb_options);
  ASSERT_EQ(2u, f->engine.retention.size());
  EXPECT_EQ(30LL * 86'400'000, f->engine.retention.at("payments").remember_ms);
  EXPECT_TRUE(f->engine.retention.at("locks").allow_forever);
  EXPECT_TRUE(f->engine.lifecycle.at("pay").remember_failures);
  EXPECT_TRUE(f->engine.state_graphs.at("order").Allows("NEW", "CANCELLED"));
  EXPECT_EQ("16..64 bytes of [A-Za-z0-9,_-]", f->engine.key_formats.at("payments").Describe());
  EXPECT_TRUE(f->engine.key_formats.at("orders").uuid());

  // A repeatable flag on the command line replaces the file's whole array.
  f = Parse({"--config", file.path(), "--retention", "other=1h"});
  ASSERT_OK(f);
  ASSERT_EQ(1u, f->engine.retention.size());
  EXPECT_EQ(3'600'000, f->engine.retention.at("other").default_ttl_ms);
}

// CLI11 2.1 reads a '#' as the start of a comment even inside quotes: "/srv/a#b" would silently
// become "/srv/a" (a new, empty database there). Such a value is refused, naming its line.
TEST(ServerFlagsTest, AHashInsideAQuotedConfigValueIsRefused) {
  ConfigFile file(
      "# a comment\nlisten = \"127.0.0.1:9100\"  # a comment after a value\n"
      "data = \"/srv/idem#2\"\n");
  Result<ServerFlags> f = Parse({"--config", file.path()});
  ASSERT_FALSE(f.ok());
  EXPECT_EQ("--config: " + file.path() +
                ":3: a '#' inside a quoted value is not supported (it would be read as the start "
                "of a comment)",
            f.status().message());
  ConfigFile single("data = '/srv/idem#2'\n");
  f = Parse({"--config", single.path()});
  ASSERT_FALSE(f.ok());
  EXPECT_NE(std::string::npos, f.status().message().find(":1: a '#' inside"))
      << f.status().message();
  ConfigFile fine("data = \"/srv/idem\" # the data\n");
  f = Parse({"--config", fine.path()});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ("/srv/idem", f->data_dir);
}

TEST(ServerFlagsTest, ConfigFileValuesAreCheckedLikeFlags) {
  ConfigFile file("listen = \"127.0.0.1:9100\"\nidle-timeout = \"0s\"\n");
  Result<ServerFlags> f = Parse({"--config", file.path()});
  EXPECT_EQ("--config: " + file.path() + ":2: idle-timeout: must be positive",
            f.status().message());
  // Even where the command line replaces it: the file is wrong.
  f = Parse({"--config", file.path(), "--idle-timeout", "1s"});
  EXPECT_EQ("--config: " + file.path() + ":2: idle-timeout: must be positive",
            f.status().message());

  ConfigFile bad_array("\nretention = [\"payments=1d\", \"nosep\"]\n");
  f = Parse({"--config", bad_array.path()});
  EXPECT_EQ("--config: " + bad_array.path() +
                ":2: retention: expected NS=DEFAULT_TTL[,max=DUR][,forever][,remember=DUR]",
            f.status().message());

  ConfigFile bad_switch("allow-remote = \"maybe\"\n");
  f = Parse({"--config", bad_switch.path()});
  EXPECT_EQ("--config: " + bad_switch.path() + ":1: allow-remote: expected true or false",
            f.status().message());
}

TEST(ServerFlagsTest, UnknownConfigKeyNamesTheKeyAndItsLine) {
  ConfigFile file("listen = \"127.0.0.1:9100\"\n\n# retention: below\nretension = [\"a=1d\"]\n");
  Result<ServerFlags> f = Parse({"--config", file.path()});
  ASSERT_TRUE(f.status().IsInvalidArgument());
  EXPECT_EQ("--config: " + file.path() + ":4: unknown key \"retension\" (see --help)",
            f.status().message());

  ConfigFile in_a_section("[server]\nlisten = \"127.0.0.1:9100\"\n");
  f = Parse({"--config", in_a_section.path()});
  EXPECT_EQ("--config: " + in_a_section.path() + ":2: unknown key \"server.listen\" (see --help)",
            f.status().message());

  ConfigFile not_a_flag("print-config = true\n");
  f = Parse({"--config", not_a_flag.path()});
  ASSERT_TRUE(f.status().IsInvalidArgument());
  EXPECT_NE(std::string::npos, f.status().message().find("print-config")) << f.status().message();

  f = Parse({"--config", "/nonexistent/idemstored.conf"});
  ASSERT_TRUE(f.status().IsInvalidArgument());
  EXPECT_NE(std::string::npos, f.status().message().find("/nonexistent/idemstored.conf"))
      << f.status().message();
}

TEST(ServerFlagsTest, PrintedConfigReadsBackAsTheSameConfiguration) {
  Result<ServerFlags> given =
      Parse({"--listen", "[::1]:9000", "--allow-remote", "--http-listen", "127.0.0.1:0",
             "--http-max-body-bytes=65536", "--idle-timeout", "1h30m", "--rocksdb-options",
             "a=1;b=2", "--retention", "payments=1d,max=30d", "--retention", "locks=10s,forever",
             "--key-format", "payments=min=16,max=64,chars=[A-Za-z0-9,_ -]", "--print-config"});
  ASSERT_OK(given);
  EXPECT_TRUE(given->print_config);
  EXPECT_NE(std::string::npos, given->effective_config.find("listen = \"[::1]:9000\"\n"))
      << given->effective_config;
  EXPECT_NE(std::string::npos, given->effective_config.find("# max-connections = 1024\n"))
      << given->effective_config;

  ConfigFile file(given->effective_config);
  Result<ServerFlags> read = Parse({"--config", file.path()});
  ASSERT_OK(read);
  EXPECT_EQ(given->effective_config, read->effective_config);
  EXPECT_FALSE(read->print_config);
  EXPECT_EQ("::1", read->server.host);
  EXPECT_TRUE(read->server.allow_remote);
  ASSERT_TRUE(read->server.http.has_value());
  EXPECT_EQ(65536u, read->server.http->max_body_bytes);
  EXPECT_EQ(5'400'000, read->server.idle_timeout_ms);
  EXPECT_EQ("a=1;b=2", read->engine.rocksdb_options);
  EXPECT_EQ(2u, read->engine.retention.size());
  EXPECT_EQ("16..64 bytes of [A-Za-z0-9,_ -]", read->engine.key_formats.at("payments").Describe());
  EXPECT_FALSE(read->max_connections_set);  // a default stays a default
}

// packaging/idemstored.conf parses, documents every option --help lists with its real
// default, and its examples parse when uncommented.
TEST(ServerFlagsTest, ExampleConfigDocumentsEveryOption) {
  ASSERT_OK(Parse({"--config", IDEM_EXAMPLE_CONFIG}));
  const std::string example = ReadFile(IDEM_EXAMPLE_CONFIG);
  const std::string usage = ServerFlagsUsage();
  const std::set<std::string> not_in_a_file = {"help", "config", "print-config", "version"};
  const std::regex option(R"(\n  (?:-h,)?--([a-z0-9-]+))");
  int listed = 0;
  for (auto it = std::sregex_iterator(usage.begin(), usage.end(), option);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    if (not_in_a_file.count(name)) continue;
    ++listed;
    EXPECT_NE(std::string::npos, example.find("\n# " + name + " = "))
        << name << " is not in " << IDEM_EXAMPLE_CONFIG;
  }
  EXPECT_EQ(61, listed);

  // Each "# key = value" line: a default as --print-config shows it (unless the option has
  // none, or it is an example of a repeatable one); uncommented, they all parse.
  const std::string defaults = Parse({})->effective_config;
  const std::regex commented_key(R"(^# ([a-z0-9-]+) = (.*)$)");
  std::string uncommented;
  std::istringstream lines(example);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, commented_key)) continue;
    const std::string key = m[1], value = m[2];
    if (value == "[]") continue;
    uncommented += key + " = " + value + "\n";
    if (value.front() == '[' || defaults.find("# " + key + " = \"\"\n") != std::string::npos) {
      continue;
    }
    EXPECT_NE(std::string::npos, defaults.find("# " + key + " = " + value + "\n"))
        << key << " = " << value << " is not its default:\n"
        << defaults;
  }
  ConfigFile file(uncommented);
  Result<ServerFlags> all = Parse({"--config", file.path()});
  EXPECT_TRUE(all.ok()) << all.status().ToString() << "\n" << uncommented;
}

TEST(ServerFlagsTest, Tls) {
  Result<ServerFlags> plain = Parse({});
  ASSERT_OK(plain);
  EXPECT_FALSE(plain->server.tls.has_value());
  EXPECT_EQ(10'000, plain->server.auth_timeout_ms);

  Result<ServerFlags> tls = Parse({"--tls-cert", "s.pem", "--tls-key", "s.key", "--tls-client-ca",
                                   "clients.pem", "--auth-timeout", "3s"});
  ASSERT_OK(tls);
  ASSERT_TRUE(tls->server.tls.has_value());
  EXPECT_EQ("s.pem", tls->server.tls->cert_file);
  EXPECT_EQ("s.key", tls->server.tls->key_file);
  EXPECT_EQ("clients.pem", tls->server.tls->client_ca_file);
  EXPECT_EQ(3'000, tls->server.auth_timeout_ms);

  Result<ServerFlags> no_key = Parse({"--tls-cert", "s.pem"});
  ASSERT_FALSE(no_key.ok());
  EXPECT_EQ("INVALID_ARGUMENT: --tls-cert: needs --tls-key", no_key.status().ToString());
  Result<ServerFlags> ca_only = Parse({"--tls-client-ca", "clients.pem"});
  ASSERT_FALSE(ca_only.ok());
  EXPECT_EQ("INVALID_ARGUMENT: --tls-client-ca: needs --tls-cert and --tls-key",
            ca_only.status().ToString());
  EXPECT_FALSE(Parse({"--auth-timeout", "0s"}).ok());
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
           {{"--layout", "tiered"}, "--layout"},
           {{"--expiry-window", "999ms"}, "--expiry-window"},
           {{"--expiry-window", "31d"}, "--expiry-window"},
           {{"--expiry-window-merge-files", "1"}, "--expiry-window-merge-files"},
           {{"--expiry-window-merge-files", "1025"}, "--expiry-window-merge-files"},
           {{"--expiry-window-merge-files", "-2"}, "--expiry-window-merge-files"},
           {{"--background-priority", "idle"}, "--background-priority"},
           {{"--wal-prezero", "yes"}, "--wal-prezero"},
           {{"--journal-compression", "zstd"}, "--journal-compression"},
           {{"--journal-index-save-interval", "often"}, "--journal-index-save-interval"},
           {{"--rocksdb-options"}, "--rocksdb-options"},
           {{"--allow-remote=maybe"}, "--allow-remote"},
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
