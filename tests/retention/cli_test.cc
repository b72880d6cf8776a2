// The command line: durations, lists and specs parse or fail with a message naming the flag;
// the binary documents every flag and exits 2 on a bad one.
#include "cli.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "duration.h"

namespace idem::retention {
namespace {

Result<Config> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "idem-retention");
  return ParseCommandLine(static_cast<int>(args.size()), args.data());
}

std::string ErrorOf(std::vector<const char*> args) {
  auto c = Parse(std::move(args));
  return c.ok() ? "(ok)" : c.status().message();
}

TEST(RetentionCommandLineTest, DefaultsAndQuickPreset) {
  auto full = Parse({});
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(10, full->workload.rate_per_s);
  EXPECT_EQ(2 * kDay, full->workload.duration_ms);
  EXPECT_EQ((std::vector<int64_t>{kHour, 6 * kHour, kDay, 7 * kDay}), full->ttls_ms);
  EXPECT_EQ(1u, full->ns_ttls.size());
  ASSERT_EQ(1u, full->remembers.size());  // keep responses 1 d, remember keys 30 d
  EXPECT_EQ(kDay, full->remembers[0].keep_ms);
  EXPECT_EQ(30 * kDay, full->remembers[0].remember_ms);
  EXPECT_EQ(2u, full->strategies.size());
  EXPECT_EQ(4u, full->workload.mix.size());
  auto quick = Parse({"--rate", "3", "--quick"});  // explicit flags win over the preset
  ASSERT_TRUE(quick.ok());
  EXPECT_EQ(3, quick->workload.rate_per_s);
  EXPECT_EQ(kDay, quick->workload.duration_ms);
}

TEST(RetentionCommandLineTest, ReadsEveryKindOfValue) {
  auto c = Parse({"--seed=42",
                  "--ttls",
                  "30m,2h",
                  "--ns-ttl",
                  "a=1h,*=2h",
                  "--ns-ttl",
                  "b=3h",
                  "--strategies",
                  "compaction-only",
                  "--mix",
                  "a:retry:1,b:human:2",
                  "--param",
                  "human.sigma=2",
                  "--write-buffer",
                  "8MiB",
                  "--no-flush",
                  "--drain",
                  "0s",
                  "--key-order",
                  "time",
                  "--json",
                  "x.json",
                  "--out",
                  "d"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(42u, c->workload.seed);
  EXPECT_EQ((std::vector<int64_t>{30 * kMinute, 2 * kHour}), c->ttls_ms);
  ASSERT_EQ(2u, c->ns_ttls.size());
  EXPECT_EQ(2 * kHour, c->ns_ttls[0].fallback_ms);
  EXPECT_EQ(kDay, c->ns_ttls[1].fallback_ms);
  EXPECT_EQ(Strategy::kCompactionOnly, c->strategies.at(0));
  EXPECT_EQ(2.0, c->workload.params.Get(DelayModel::kHuman).sigma);
  EXPECT_EQ(8u << 20, c->sim.write_buffer_bytes);
  EXPECT_FALSE(c->sim.flush_at_samples);
  EXPECT_EQ(0, c->drain_ms.value());
  EXPECT_EQ(KeyOrder::kTime, c->workload.key_order);
  EXPECT_EQ("x.json", c->json_path);
  EXPECT_EQ("d", c->out_dir);
  EXPECT_EQ(4u, BuildPolicies(c->ttls_ms, c->ns_ttls, c->strategies).size());
}

TEST(RetentionCommandLineTest, BadInputNamesTheFlag) {
  EXPECT_NE(std::string::npos, ErrorOf({"--bogus"}).find("unknown flag --bogus (see --help)"));
  EXPECT_NE(std::string::npos, ErrorOf({"--rate"}).find("--rate: needs a value"));
  EXPECT_NE(std::string::npos, ErrorOf({"--rate", "fast"}).find("--rate:"));
  EXPECT_NE(std::string::npos, ErrorOf({"--rate", "0"}).find("--rate:"));
  EXPECT_NE(std::string::npos, ErrorOf({"--ttls", "1h,1x"}).find("--ttls:"));
  EXPECT_NE(std::string::npos, ErrorOf({"--ttls", "1h,1h"}).find("twice"));
  EXPECT_NE(std::string::npos, ErrorOf({"--ns-ttl", "a"}).find("--ns-ttl:"));
  EXPECT_NE(std::string::npos, ErrorOf({"--strategies", "ttl-layout"}).find("--strategies:"));
  EXPECT_NE(std::string::npos, ErrorOf({"--mix", "a:b"}).find("--mix:"));
  EXPECT_NE(std::string::npos, ErrorOf({"--param", "x.y=1"}).find("--param:"));
  EXPECT_NE(std::string::npos, ErrorOf({"--write-buffer", "4XB"}).find("--write-buffer:"));
  EXPECT_NE(std::string::npos, ErrorOf({"--seed", "-3"}).find("--seed:"));
  EXPECT_NE(std::string::npos, ErrorOf({"--quick=1"}).find("takes no value"));
  EXPECT_NE(std::string::npos, ErrorOf({"--trace", "t.csv", "--mix", "a:retry:1"})
                                   .find("does not apply to a replayed --trace"));
  EXPECT_NE(std::string::npos, ErrorOf({"--remember", "1d"}).find("--remember:"));
  EXPECT_NE(std::string::npos, ErrorOf({"--remember", "1d:0s"}).find("--remember:"));
  EXPECT_NE(std::string::npos, ErrorOf({"--remember", "1d:3651d"}).find("--remember:"));
  EXPECT_NE(
      std::string::npos,
      ErrorOf({"--ttls", "none", "--ns-ttl", "none", "--remember", "none"}).find("no policy"));
}

TEST(RetentionCommandLineTest, RememberPairsArePoliciesBesideThePlainTtls) {
  auto c = Parse({"--ttls", "1d", "--ns-ttl", "none", "--remember", "6h:7d,1d:30d", "--strategies",
                  "reclaim"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const std::vector<Policy> policies =
      BuildPolicies(c->ttls_ms, c->ns_ttls, c->strategies, c->remembers);
  ASSERT_EQ(3u, policies.size());
  EXPECT_EQ("1d/reclaim", policies[0].name);
  EXPECT_EQ(0, policies[0].remember_ms);
  EXPECT_EQ("6h+remember7d/reclaim", policies[1].name);
  EXPECT_EQ(6 * kHour, policies[1].default_ttl_ms);
  EXPECT_EQ(7 * kDay, policies[1].remember_ms);
  EXPECT_EQ("1d+remember30d/reclaim", policies[2].name);
}

// --strategies windows: every policy also runs on the expiry-window layout, each with the
// --window width or, without it, its death horizon / 8 rounded up to a minute.
TEST(RetentionCommandLineTest, WindowsPoliciesGetTheGivenWindowOrAnEighthOfTheirHorizon) {
  auto derived = Parse({"--ttls", "1s,1h,1d,7d", "--ns-ttl", "a=26h,*=1h", "--remember",
                        "1d:30d,1d:3650d", "--strategies", "reclaim,windows"});
  ASSERT_TRUE(derived.ok()) << derived.status().ToString();
  EXPECT_FALSE(derived->window_ms.has_value());
  const std::vector<Policy> policies =
      BuildPolicies(derived->ttls_ms, derived->ns_ttls, derived->strategies, derived->remembers);
  ASSERT_EQ(14u, policies.size());
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(Strategy::kReclaim, policies[i].strategy);
    EXPECT_EQ(0, policies[i].window_ms) << policies[i].name;
  }
  EXPECT_EQ("1h/windows", policies[8].name);
  EXPECT_EQ(Strategy::kWindows, policies[8].strategy);
  EXPECT_EQ(kMinute, policies[7].window_ms);         // 1s / 8, rounded up to a minute
  EXPECT_EQ(8 * kMinute, policies[8].window_ms);     // 7.5 min, rounded up
  EXPECT_EQ(3 * kHour, policies[9].window_ms);       // 1d / 8
  EXPECT_EQ(21 * kHour, policies[10].window_ms);     // 7d / 8
  EXPECT_EQ(195 * kMinute, policies[11].window_ms);  // ns-ttl: its longest TTL, 26h / 8
  EXPECT_EQ(93 * kHour, policies[12].window_ms);     // (1d + 30d) / 8
  EXPECT_EQ(30 * kDay, policies[13].window_ms);      // (1d + 3650d) / 8: the engine's max
  EXPECT_EQ(policies[10].window_ms, DefaultWindowMs(policies[3]));  // the same for any strategy

  auto given = Parse({"--ttls", "1h,7d", "--strategies", "windows", "--window", "15m"});
  ASSERT_TRUE(given.ok()) << given.status().ToString();
  EXPECT_EQ(15 * kMinute, given->window_ms.value());
  for (const Policy& p : BuildPolicies(given->ttls_ms, given->ns_ttls, given->strategies,
                                       given->remembers, given->window_ms)) {
    EXPECT_EQ(15 * kMinute, p.window_ms) << p.name;
  }
  EXPECT_EQ(kSecond, Parse({"--strategies", "windows", "--window", "1s"})->window_ms.value());
  EXPECT_EQ(30 * kDay, Parse({"--strategies", "windows", "--window", "30d"})->window_ms.value());
}

TEST(RetentionCommandLineTest, WindowMergeFilesIsTheEnginesOptionAndItsRange) {
  EXPECT_EQ(EngineOptions().expiry_window_merge_files,
            Parse({"--strategies", "windows"})->sim.window_merge_files);
  EXPECT_EQ(
      0, Parse({"--strategies", "windows", "--window-merge-files", "0"})->sim.window_merge_files);
  EXPECT_EQ(
      1024,
      Parse({"--strategies", "windows", "--window-merge-files", "1024"})->sim.window_merge_files);
  for (const char* bad : {"1", "1025", "-2", "many", "8x"}) {
    EXPECT_NE(std::string::npos, ErrorOf({"--strategies", "windows", "--window-merge-files", bad})
                                     .find("--window-merge-files:"))
        << bad;
  }
  EXPECT_NE(
      std::string::npos,
      ErrorOf({"--strategies", "reclaim", "--window-merge-files", "8"}).find("windows strategy"));
}

TEST(RetentionCommandLineTest, WindowOutsideTheEnginesRangeOrWithoutWindowsIsRefused) {
  EXPECT_NE(std::string::npos,
            ErrorOf({"--strategies", "windows", "--window", "999ms"}).find("--window:"));
  EXPECT_NE(std::string::npos,
            ErrorOf({"--strategies", "windows", "--window", "30d1ms"}).find("--window:"));
  EXPECT_NE(std::string::npos,
            ErrorOf({"--strategies", "windows", "--window", "0s"}).find("--window:"));
  EXPECT_NE(std::string::npos,
            ErrorOf({"--strategies", "windows", "--window", "1x"}).find("--window:"));
  EXPECT_NE(std::string::npos,
            ErrorOf({"--strategies", "reclaim", "--window", "1h"}).find("windows strategy"));
  EXPECT_NE(std::string::npos, ErrorOf({"--strategies", "windows,windows"}).find("twice"));
}

std::string SettingOf(const Config& c, const std::string& name) {
  for (const auto& [key, value] : c.settings) {
    if (key == name) return value;
  }
  return "(absent)";
}

// The reports echo the window and the RocksDB options only when they are in play, so the other
// strategies' reports read as before.
TEST(RetentionCommandLineTest, RocksDbOptionsReachEveryPolicyAndAreEchoedWhenGiven) {
  auto plain = Parse({});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ("", plain->sim.rocksdb_options);
  EXPECT_EQ("(absent)", SettingOf(*plain, "rocksdb-options"));
  EXPECT_EQ("(absent)", SettingOf(*plain, "window"));
  auto blob = Parse({"--rocksdb-options", "enable_blob_files=true;min_blob_size=0", "--strategies",
                     "reclaim,windows", "--window", "2h"});
  ASSERT_TRUE(blob.ok()) << blob.status().ToString();
  EXPECT_EQ("enable_blob_files=true;min_blob_size=0", blob->sim.rocksdb_options);
  EXPECT_EQ("enable_blob_files=true;min_blob_size=0", SettingOf(*blob, "rocksdb-options"));
  EXPECT_EQ("2h", SettingOf(*blob, "window"));
  EXPECT_NE(std::string::npos,
            SettingOf(*Parse({"--strategies", "windows"}), "window").find("/ 8"));
}

TEST(RetentionCommandLineTest, HelpDocumentsEveryFlag) {
  const std::string help = HelpText();
  for (const char* flag : {"--seed",         "--rate",          "--duration",
                           "--mix",          "--param",         "--trace",
                           "--key-order",    "--ttls",          "--ns-ttl",
                           "--remember",     "--strategies",    "--reclaim-every",
                           "--sample-every", "--no-flush",      "--drain",
                           "--write-buffer", "--payload-bytes", "--reclaim-fraction",
                           "--work-dir",     "--keep-dbs",      "--json",
                           "--out",          "--quick",         "--quiet",
                           "--help",         "--window",        "--rocksdb-options",
                           "windows"}) {
    EXPECT_NE(std::string::npos, help.find(flag)) << flag;
  }
  EXPECT_NE(std::string::npos, help.find("default"));
  EXPECT_TRUE(Parse({"--help"})->help);
  EXPECT_TRUE(Parse({"--version"})->version);
}

int ExitCode(const std::string& args) {
  const std::string command = std::string(IDEM_RETENTION_BINARY) + " " + args + " >/dev/null 2>&1";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(RetentionBinaryTest, ExitCodes) {
  EXPECT_EQ(0, ExitCode("--help"));
  EXPECT_EQ(0, ExitCode("--version"));
  EXPECT_EQ(2, ExitCode("--bogus"));
  EXPECT_EQ(2, ExitCode("--ttls 1q"));
  EXPECT_EQ(1, ExitCode("--trace /nonexistent/trace.csv --quiet"));
  EXPECT_EQ(2, ExitCode("--strategies windows --window 31d"));
}

}  // namespace
}  // namespace idem::retention
