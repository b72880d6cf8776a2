#include "bench_config.h"

#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace idem::bench {
namespace {

Result<BenchConfig> Parse(std::vector<std::string_view> args) { return ParseBenchFlags(args); }

// The error message, or "ok".
std::string Error(std::vector<std::string_view> args) {
  Result<BenchConfig> c = ParseBenchFlags(args);
  return c.ok() ? "ok" : c.status().message();
}

TEST(BenchFlags, Defaults) {
  Result<BenchConfig> c = Parse({});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ("127.0.0.1", c->host);
  EXPECT_EQ(7878, c->port);
  EXPECT_EQ(16, c->connections);
  EXPECT_EQ(1, c->pipeline);
  EXPECT_EQ(10'000, c->duration_ms);
  EXPECT_EQ("insert", c->workload);
  ASSERT_EQ(1u, c->mix.size());
  EXPECT_EQ(OpKind::kInsert, c->mix[0].kind);
  EXPECT_EQ(100u, c->payload_bytes);
  EXPECT_EQ(24LL * 3600 * 1000, c->ttl_ms);
  EXPECT_EQ(0.0, c->rate);
  EXPECT_TRUE(c->progress);
  EXPECT_FALSE(c->json);
  EXPECT_FALSE(c->sequential_keys);  // keys scattered like UUIDs unless asked
}

TEST(BenchFlags, BothFlagForms) {
  Result<BenchConfig> c = Parse({"--server", "127.0.0.1:9000", "--connections=50", "-P", "16",
                                 "--duration=3s", "--dup-ratio", "0.1", "--payload=200", "--ttl",
                                 "1h", "--json", "--quiet", "--rate", "20000", "--server-pid=123"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(9000, c->port);
  EXPECT_EQ(50, c->connections);
  EXPECT_EQ(16, c->pipeline);
  EXPECT_EQ(3'000, c->duration_ms);
  EXPECT_DOUBLE_EQ(0.1, c->dup_ratio);
  EXPECT_EQ(200u, c->payload_bytes);
  EXPECT_EQ(3'600'000, c->ttl_ms);
  EXPECT_TRUE(c->json);
  EXPECT_FALSE(c->progress);
  EXPECT_DOUBLE_EQ(20000, c->rate);
  EXPECT_EQ(123, c->server_pid);
}

TEST(BenchFlags, Workloads) {
  EXPECT_EQ(OpKind::kCas, Parse({"--workload", "cas", "--preload"})->mix[0].kind);
  EXPECT_TRUE(Parse({"--workload", "cas", "--preload"})->preload);
  EXPECT_EQ(OpKind::kBegin, Parse({"--workload", "begin"})->mix[0].kind);
  EXPECT_EQ(Distribution::kZipfian,
            Parse({"--workload", "get", "--distribution", "zipfian"})->distribution);
  Result<BenchConfig> mix = Parse({"--workload", "mix", "--mix", "insert:50,get:30,cas:20"});
  ASSERT_TRUE(mix.ok()) << mix.status().ToString();
  ASSERT_EQ(3u, mix->mix.size());
  EXPECT_EQ(OpKind::kGet, mix->mix[1].kind);
  EXPECT_EQ(30u, mix->mix[1].weight);
  EXPECT_TRUE(Parse({"--key-order", "sequential"})->sequential_keys);
  EXPECT_FALSE(Parse({"--key-order", "sequential", "--key-order=random"})->sequential_keys);
}

TEST(BenchFlags, RejectsBadInputNamingTheFlag) {
  EXPECT_EQ("unknown flag --bogus (see --help)", Error({"--bogus", "1"}));
  EXPECT_EQ("--connections: needs a value", Error({"--connections"}));
  EXPECT_EQ("--connections: \"x\" is not an integer", Error({"--connections", "x"}));
  EXPECT_EQ("--connections: 0 is out of range [1, 10000]", Error({"--connections", "0"}));
  EXPECT_EQ("--server: expected HOST:PORT", Error({"--server", "localhost"}));
  EXPECT_NE("ok", Error({"--duration", "10"}));  // a unit is required
  EXPECT_NE("ok", Error({"--workload", "scan"}));
  EXPECT_NE("ok", Error({"--workload", "mix"}));
  EXPECT_NE("ok", Error({"--mix", "insert:1"}));  // only with --workload mix
  EXPECT_NE("ok", Error({"--workload", "mix", "--mix", "insert"}));
  EXPECT_NE("ok", Error({"--dup-ratio", "1.5"}));
  EXPECT_NE("ok", Error({"--workload", "get", "--dup-ratio", "0.1"}));
  EXPECT_NE("ok", Error({"--json=yes"}));
  EXPECT_NE("ok", Error({"-c", "2", "--threads", "3"}));
  EXPECT_NE("ok", Error({"positional"}));
  EXPECT_EQ("--key-order: must be random or sequential", Error({"--key-order", "sorted"}));
}

TEST(BenchFlags, Help) {
  EXPECT_TRUE(Parse({"--help"})->help);
  EXPECT_TRUE(Parse({"--version"})->version);
  EXPECT_NE(std::string::npos, BenchUsage().find("--rate"));
  EXPECT_NE(std::string::npos, BenchUsage().find("-c,--connections N"));
}

}  // namespace
}  // namespace idem::bench
