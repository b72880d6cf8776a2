// idemctl: parsing, the Op each command builds, output and exit codes, and the real binary
// end to end on an embedded store.
#include <cctype>
#include <chrono>
#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "base64.h"
#include "credentials.h"
#include "idem/engine.h"
#include "invocation.h"
#include "json_writer.h"
#include "net/test_server.h"
#include "output.h"
#include "support/run_command.h"
#include "support/temp_dir.h"

namespace idem::ctl {
namespace {

Result<Invocation> Parse(std::vector<std::string_view> args) { return ParseInvocation(args); }

TEST(IdemctlParse, NeedsExactlyOneStoreLocation) {
  EXPECT_FALSE(Parse({"get", "ns", "k"}).ok());
  EXPECT_FALSE(Parse({"--server", "h:1", "--data", "d", "get", "ns", "k"}).ok());
  EXPECT_TRUE(Parse({"--data", "d", "get", "ns", "k"}).ok());
}

TEST(IdemctlParse, RejectsUnknownCommandsFlagsAndArity) {
  EXPECT_FALSE(Parse({"--data", "d", "frobnicate"}).ok());
  auto bad_flag = Parse({"--data", "d", "get", "ns", "k", "--status", "X"});
  ASSERT_FALSE(bad_flag.ok());
  EXPECT_NE(std::string::npos, bad_flag.status().message().find("--status"));
  EXPECT_FALSE(Parse({"--data", "d", "get", "ns"}).ok());
  EXPECT_FALSE(Parse({"--data", "d", "insert", "ns", "k", "--ttl"}).ok());  // missing value
  EXPECT_FALSE(Parse({"--bogus"}).ok());
}

TEST(IdemctlBuild, InsertWithDurationsAndForever) {
  auto inv = Parse({"--data", "d", "insert", "pay", "k1", "--status", "NEW", "--payload=hello",
                    "--fingerprint", "fp", "--ttl", "15m"});
  ASSERT_TRUE(inv.ok());
  auto op = BuildOp(*inv);
  ASSERT_TRUE(op.ok());
  EXPECT_EQ(OpType::kInsert, op->type);
  EXPECT_EQ("pay", op->ns);
  EXPECT_EQ("k1", op->key);
  EXPECT_EQ("NEW", op->status);
  EXPECT_EQ("hello", op->payload);
  EXPECT_EQ(Ttl(std::chrono::milliseconds(15 * 60'000)), op->ttl);
  auto forever = Parse({"--data", "d", "insert", "pay", "k", "--ttl", "forever"});
  EXPECT_EQ(Ttl::Forever(), BuildOp(*forever)->ttl);
  auto bad = Parse({"--data", "d", "insert", "pay", "k", "--ttl", "soon"});
  EXPECT_FALSE(BuildOp(*bad).ok());
}

TEST(IdemctlBuild, CasConditionsAndUpdate) {
  auto inv = Parse({"--data", "d", "cas", "o", "k", "--expect-status", "WAIT,PAYING",
                    "--expect-version", "3", "--status", "PAID", "--ttl", "7d"});
  ASSERT_TRUE(inv.ok());
  auto op = BuildOp(*inv);
  ASSERT_TRUE(op.ok());
  EXPECT_EQ(OpType::kCompareAndSet, op->type);
  EXPECT_EQ((std::vector<std::string_view>{"WAIT", "PAYING"}), op->condition.status_in);
  EXPECT_EQ(3u, op->condition.version);
  EXPECT_FALSE(op->condition.fence.has_value());
  EXPECT_EQ("PAID", op->update.status);
  EXPECT_EQ(Ttl(std::chrono::milliseconds(7 * 24 * 3600'000LL)), op->update.ttl);
  auto bad = Parse({"--data", "d", "delete", "o", "k", "--expect-version", "-1"});
  EXPECT_FALSE(BuildOp(*bad).ok());
}

TEST(IdemctlBuild, LifecycleTokenLockTransition) {
  auto begin = Parse({"--data", "d", "begin", "p", "k", "--lease", "30s", "--wait", "2s"});
  auto b = BuildOp(*begin);
  EXPECT_EQ(OpType::kBegin, b->type);
  EXPECT_EQ(std::chrono::milliseconds(30'000), b->lease);
  EXPECT_EQ(std::chrono::milliseconds(2'000), b->wait);
  auto complete = Parse({"--data", "d", "complete", "p", "k", "--fence", "42", "--payload", "r"});
  auto c = BuildOp(*complete);
  EXPECT_EQ(OpType::kComplete, c->type);
  EXPECT_EQ(42u, c->condition.fence);
  auto no_fence = Parse({"--data", "d", "abort", "p", "k"});
  EXPECT_FALSE(BuildOp(*no_fence).ok());
  auto checkpoint =
      Parse({"--data", "d", "checkpoint", "p", "k", "--fence", "42", "--payload", "charged"});
  auto cp = BuildOp(*checkpoint);
  EXPECT_EQ(OpType::kCheckpoint, cp->type);
  EXPECT_EQ(42u, cp->condition.fence);
  EXPECT_EQ("charged", cp->payload);
  auto checkpoint_without_fence = Parse({"--data", "d", "checkpoint", "p", "k", "--payload", "x"});
  EXPECT_FALSE(BuildOp(*checkpoint_without_fence).ok());
  auto issue = Parse({"--data", "d", "token-issue", "forms", "--ttl", "1h"});
  EXPECT_EQ(OpType::kIssueToken, BuildOp(*issue)->type);
  auto with_payload = Parse({"--data", "d", "token-issue", "forms", "--payload", "refund 42"});
  ASSERT_TRUE(with_payload.ok()) << with_payload.status().ToString();
  EXPECT_EQ("refund 42", BuildOp(*with_payload)->payload);
  auto lock = Parse({"--data", "d", "lock", "l", "k"});
  EXPECT_FALSE(BuildOp(*lock).ok());  // --owner required
  auto waiting = Parse({"--data", "d", "lock", "l", "k", "--owner", "o", "--wait", "2s"});
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();
  EXPECT_EQ(std::chrono::milliseconds(2'000), BuildOp(*waiting)->wait);
  auto tr = Parse({"--data", "d", "transition", "o", "k", "PAID", "--expect-version", "2"});
  auto t = BuildOp(*tr);
  EXPECT_EQ(OpType::kTransition, t->type);
  EXPECT_EQ("PAID", t->status);
  EXPECT_EQ(2u, t->condition.version);
}

// Byte fields given as base64 reach the Op as the bytes themselves.
TEST(IdemctlBuild, BytesGivenAsBase64) {
  auto insert = Parse(
      {"--data", "d", "insert", "p", "k", "--payload-b64", "//4AQQ==", "--fingerprint-b64=7aCA"});
  ASSERT_TRUE(insert.ok()) << insert.status().ToString();
  auto op = BuildOp(*insert);
  ASSERT_TRUE(op.ok());
  EXPECT_EQ(std::string_view("\xff\xfe\0A", 4), op->payload);
  EXPECT_EQ("\xed\xa0\x80", op->fingerprint);
  auto begin = Parse({"--data", "d", "begin", "p", "k", "--fingerprint-b64", "Zm9v"});
  ASSERT_TRUE(begin.ok()) << begin.status().ToString();
  EXPECT_EQ("foo", BuildOp(*begin)->fingerprint);
  auto complete = Parse({"--data", "d", "complete", "p", "k", "--fence", "3", "--payload-b64", ""});
  ASSERT_TRUE(complete.ok()) << complete.status().ToString();
  EXPECT_EQ("", BuildOp(*complete)->payload);
  auto cas = Parse({"--data", "d", "cas", "p", "k", "--payload-b64", "Zm9v"});
  ASSERT_TRUE(cas.ok()) << cas.status().ToString();
  EXPECT_EQ("foo", BuildOp(*cas)->update.payload);
}

TEST(IdemctlParse, BothFormsOfAByteFieldOrBadBase64AreRefusedByName) {
  auto both = Parse({"--data", "d", "insert", "p", "k", "--payload", "x", "--payload-b64", "eA=="});
  ASSERT_FALSE(both.ok());
  EXPECT_EQ("--payload and --payload-b64 are two forms of one value: give one",
            both.status().message());
  auto reversed =
      Parse({"--data", "d", "begin", "p", "k", "--fingerprint-b64", "eA==", "--fingerprint", "x"});
  ASSERT_FALSE(reversed.ok());
  EXPECT_EQ("--fingerprint and --fingerprint-b64 are two forms of one value: give one",
            reversed.status().message());
  auto twice =
      Parse({"--data", "d", "insert", "p", "k", "--payload-b64", "eA==", "--payload-b64=eA=="});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ("--payload-b64 given twice", twice.status().message());
  auto bad = Parse({"--data", "d", "insert", "p", "k", "--payload-b64", "Zm!v"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ("--payload-b64: not base64: '!' at character 3", bad.status().message());
  // Only byte fields have a base64 form.
  auto status = Parse({"--data", "d", "insert", "p", "k", "--status-b64", "eA=="});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ("unknown flag --status-b64 (see --help)", status.status().message());
}

TEST(IdemctlParse, GlobalFlagsStandAnywhereInEitherSpelling) {
  auto inv = Parse({"get", "ns", "k", "--json", "--data=d", "--timeout", "3s"});
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  EXPECT_EQ("get", inv->command);
  EXPECT_EQ("d", inv->data_dir);
  EXPECT_TRUE(inv->json);
  EXPECT_EQ(3'000, inv->timeout_ms);
  EXPECT_EQ((std::vector<std::string>{"ns", "k"}), inv->positional);
  inv = Parse({"--server=h:1", "begin", "--lease=5s", "p", "k"});
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  EXPECT_EQ("5s", inv->flags.at("lease"));
  EXPECT_EQ("--timeout: needs a value",
            Parse({"--data", "d", "stats", "--timeout"}).status().message());
  EXPECT_EQ("stats takes 0 arguments, got 1 (see idemctl stats --help)",
            Parse({"--data", "d", "stats", "extra"}).status().message());
  EXPECT_EQ("unknown command 'frobnicate' (see idemctl --help)",
            Parse({"--data", "d", "frobnicate"}).status().message());
  EXPECT_EQ("no command given (see idemctl --help)", Parse({"--data", "d"}).status().message());
}

TEST(IdemctlHelp, EachCommandHasItsOwnHelp) {
  auto inv = Parse({"begin", "--help"});
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  EXPECT_EQ("help", inv->command);
  EXPECT_EQ("begin", inv->help_command);
  const std::string help = CommandUsage("begin");
  for (const char* flag : {"--fingerprint F", "--fingerprint-b64 B64", "--lease D", "--wait D",
                           "--owner O", "--ttl D|forever", "idemctl begin [OPTIONS] [NS] [KEY]"}) {
    EXPECT_NE(std::string::npos, help.find(flag)) << flag << " is not in\n" << help;
  }
  EXPECT_EQ("version", Parse({"--version"})->command);
  EXPECT_EQ("", Parse({"--help"})->help_command);
}

// One command as --help shows it: its name, how many arguments it takes, the flags its
// synopsis lists, and which of those are required (not in brackets).
struct HelpEntry {
  std::string command;
  size_t arguments = 0;
  std::set<std::string> flags, required;
  std::set<std::string> switches;  // flags given alone, without a value
};

// Reads the synopses out of --help: a command's line is indented two spaces and starts with its
// lower-case name; the synopsis ends at two spaces in a row (a note follows) and continues on
// more deeply indented lines that start with '[' or '-'.
std::vector<HelpEntry> CommandsInHelp(const std::string& help) {
  std::vector<HelpEntry> entries;
  bool in_synopsis = false;
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    const size_t indent = line.find_first_not_of(' ');
    std::string synopsis;
    if (indent == 2 && line[2] >= 'a' && line[2] <= 'z') {
      entries.emplace_back();
      synopsis = line.substr(2, line.find("  ", 2) - 2);
      std::istringstream words(synopsis);
      std::string w;
      words >> entries.back().command;
      // A command of a group has two words ("auth hash").
      while (words >> w && w[0] >= 'a' && w[0] <= 'z') entries.back().command += " " + w;
      for (; !w.empty() && w[0] >= 'A' && w[0] <= 'Z'; w.clear(), words >> w) {
        ++entries.back().arguments;
      }
      in_synopsis = true;
    } else if (in_synopsis && indent != std::string::npos && indent > 2 &&
               (line[indent] == '[' || line[indent] == '-')) {
      synopsis = line.substr(indent);
    } else {
      in_synopsis = indent != std::string::npos && indent > 2;  // a note: the synopsis may go on
      continue;
    }
    int depth = 0;
    for (size_t i = 0; i < synopsis.size(); ++i) {
      if (synopsis[i] == '[') ++depth;
      if (synopsis[i] == ']') --depth;
      if (synopsis.compare(i, 2, "--") != 0 ||
          (i > 0 && synopsis[i - 1] != ' ' && synopsis[i - 1] != '['))
        continue;
      const size_t end = synopsis.find_first_of(" ]|", i);
      const std::string flag = synopsis.substr(i + 2, end - i - 2);
      entries.back().flags.insert(flag);
      // A value is named in capitals ("N", "TEXT", "D|forever"); a switch has none.
      if (end == std::string::npos || synopsis[end] != ' ' || end + 1 >= synopsis.size() ||
          !std::isupper(static_cast<unsigned char>(synopsis[end + 1]))) {
        entries.back().switches.insert(flag);
      }
      if (depth == 0) entries.back().required.insert(flag);
    }
  }
  return entries;
}

Result<Invocation> ParseStrings(const std::vector<std::string>& args) {
  return Parse(std::vector<std::string_view>(args.begin(), args.end()));
}

// "--data d" and the command's words ("auth hash" is two), as a command line starts.
std::vector<std::string> CommandLine(const std::string& command) {
  std::vector<std::string> args = {"--data", "d"};
  std::istringstream words(command);
  for (std::string w; words >> w;) args.push_back(w);
  return args;
}

// --help lists, for every command, exactly the flags the parser accepts, and a synopsis without
// its optional flags is a complete command line.
TEST(IdemctlHelp, ListsExactlyTheFlagsEachCommandAccepts) {
  const std::vector<HelpEntry> entries = CommandsInHelp(Usage());
  ASSERT_EQ(24u, entries.size()) << Usage();
  std::set<std::string> every_flag;
  for (const HelpEntry& e : entries) every_flag.insert(e.flags.begin(), e.flags.end());
  for (const HelpEntry& e : entries) {
    std::vector<std::string> minimal = CommandLine(e.command);
    minimal.insert(minimal.end(), e.arguments, "a");
    for (const std::string& flag : e.required) {
      minimal.push_back("--" + flag);
      if (!e.switches.count(flag)) minimal.push_back("1");
    }
    auto inv = ParseStrings(minimal);
    ASSERT_TRUE(inv.ok()) << e.command << ": " << inv.status().ToString();
    if (e.command != "stats" && e.command != "repair" && e.command != "backup" &&
        e.command != "verify" && e.command != "scan" && e.command != "purge" &&
        e.command != "compact" && !e.command.starts_with("auth ")) {
      EXPECT_TRUE(BuildOp(*inv).ok()) << e.command << ": " << BuildOp(*inv).status().ToString();
    }
    for (const std::string& flag : e.required) {
      std::vector<std::string> without = CommandLine(e.command);
      without.insert(without.end(), e.arguments, "a");
      auto missing = ParseStrings(without);
      EXPECT_FALSE(missing.ok() && BuildOp(*missing).ok()) << e.command << " without --" << flag;
    }
    for (const std::string& flag : every_flag) {
      if (e.required.count(flag)) continue;
      std::vector<std::string> with = minimal;
      with.push_back("--" + flag);
      // A valid value for every kind of flag the parser checks (a switch takes none).
      if (!e.switches.count(flag)) with.push_back("AAAA");
      EXPECT_EQ(e.flags.count(flag) == 1, ParseStrings(with).ok())
          << e.command << " --" << flag
          << (e.flags.count(flag) ? " is listed in --help but refused"
                                  : " is accepted but not in --help");
    }
  }
}

TEST(IdemctlHelp, ListsEveryGlobalFlag) {
  const std::string help = Usage();
  const std::string usage =
      help.substr(help.find("usage:"), help.find("\n\n", help.find("usage:")));
  for (const char* flag : {"--server", "--data", "--json", "--timeout", "--help"}) {
    EXPECT_NE(std::string::npos, usage.find(flag)) << flag << " is not in\n" << usage;
  }
  EXPECT_TRUE(Parse({"--data", "d", "--json", "--timeout", "1s", "get", "n", "k"}).ok());
  EXPECT_EQ("help", Parse({"--help"})->command);
}

TEST(IdemctlOutput, JsonCarriesOutcomeAndRecord) {
  OpResult r;
  r.outcome = Outcome::kInserted;
  Record rec;
  rec.status = "PENDING";
  rec.version = 1;
  rec.fence = 9;
  rec.payload = "a\"b\n\xc3\xa9";
  rec.expires_at_ms = 123;
  rec.kind = RecordKind::kPlain;
  r.record = rec;
  EXPECT_EQ(
      "{\"outcome\":\"INSERTED\",\"record\":{\"kind\":\"plain\",\"status\":\"PENDING\",\"version\":"
      "1,\"fence\":9,"
      "\"fingerprint\":\"\",\"payload\":\"a\\\"b\\n\xc3\xa9\",\"owner\":\"\",\"created_ms\":0,"
      "\"updated_ms\":0,\"expires_at_ms\":123,\"lease_until_ms\":0}}",
      FormatJson(r));
}

// Payload and fingerprint are text when they are valid UTF-8 and base64 under NAME_b64
// otherwise (the HTTP API's rule): the bytes ff fe and the text "ÿþ" no longer print alike.
TEST(IdemctlOutput, BytesThatAreNotUtf8PrintAsBase64) {
  OpResult r;
  r.outcome = Outcome::kFound;
  Record rec;
  rec.payload = "\xff\xfe";
  rec.fingerprint = "\xc3\xbf\xc3\xbe";  // "ÿþ" as UTF-8 text
  r.record = rec;
  const std::string json = FormatJson(r);
  EXPECT_NE(std::string::npos, json.find("\"payload_b64\":\"//4=\"")) << json;
  EXPECT_EQ(std::string::npos, json.find("\"payload\":")) << json;
  EXPECT_NE(std::string::npos, json.find("\"fingerprint\":\"\xc3\xbf\xc3\xbe\"")) << json;
  EXPECT_EQ(std::string::npos, json.find("\"fingerprint_b64\":")) << json;
  const std::string human = FormatHuman(r, 0);
  EXPECT_NE(std::string::npos, human.find("\npayload_b64: //4=\n")) << human;
  EXPECT_NE(std::string::npos, human.find("\nfingerprint: \"\xc3\xbf\xc3\xbe\"\n")) << human;
  rec.payload = "a\"b\n\xff";
  rec.fingerprint = "\xed\xa0\x80";  // a UTF-8-encoded surrogate is not valid UTF-8
  r.record = rec;
  EXPECT_NE(std::string::npos, FormatJson(r).find("\"payload_b64\":\"YSJiCv8=\"")) << FormatJson(r);
  EXPECT_NE(std::string::npos, FormatJson(r).find("\"fingerprint_b64\":\"7aCA\"")) << FormatJson(r);
}

TEST(IdemctlOutput, AnErrorIsAnErrorObjectWithoutAnOutcome) {
  // NOT_FOUND is both a Status code and an Outcome name: only the key tells them apart.
  CliError error = StoreError(Status::NotFound("no idemstore database in /x"));
  EXPECT_EQ("{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"no idemstore database in /x\"}}",
            FormatErrorJson(error));
  EXPECT_EQ("idemctl: error (NOT_FOUND): no idemstore database in /x", FormatErrorHuman(error));
  EXPECT_EQ(4, error.exit_code);
  CliError usage = UsageError("get takes 2 arguments, got 1");
  EXPECT_EQ("{\"error\":{\"code\":\"USAGE\",\"message\":\"get takes 2 arguments, got 1\"}}",
            FormatErrorJson(usage));
  EXPECT_EQ(2, usage.exit_code);
}

TEST(IdemctlOutput, HumanOutputOfStatsAndTimes) {
  StoreStats stats;
  stats.records_dropped_by_compaction = 7;  // the longest label
  stats.durability = Durability::kSync;
  std::string out = FormatStatsHuman(stats);
  EXPECT_NE(std::string::npos, out.find("records_dropped_by_compaction  7")) << out;
  stats.admin_overrides = 3;
  out = FormatStatsHuman(stats);
  EXPECT_NE(std::string::npos, out.find("admin_overrides                3")) << out;
  OpResult r;
  r.outcome = Outcome::kFound;
  Record rec;
  rec.status = "S";
  rec.expires_at_ms = 1'000'000 + 86'399'993;
  r.record = rec;
  EXPECT_NE(std::string::npos, FormatHuman(r, 1'000'000).find("(in 23h59m)"))
      << FormatHuman(r, 1'000'000);
}

TEST(IdemctlOutput, ServerCountersArePrintedOnePerSeries) {
  StoreStats stats;
  MetricFamily ops{"idem_ops_total", "h", MetricType::kCounter, {}};
  MetricSample inserted;
  inserted.labels = {{"op", "insert"}, {"outcome", "INSERTED"}};
  inserted.value = 3;
  ops.samples.push_back(inserted);
  MetricFamily latency{"idem_request_duration_seconds", "h", MetricType::kHistogram, {}};
  MetricSample h;
  h.labels = {{"transport", "binary"}, {"op", "insert"}};
  h.buckets = {{0.0001, 1}, {0.001, 99}, {0.01, 100}, {HUGE_VAL, 100}};
  h.sum = 0.05;
  h.count = 100;
  latency.samples.push_back(h);
  const std::vector<MetricFamily> metrics = {ops, latency};
  std::string out = FormatStatsHuman(stats, metrics);
  EXPECT_NE(std::string::npos, out.find("\nidem_ops_total{op=\"insert\",outcome=\"INSERTED\"} 3\n"))
      << out;
  EXPECT_NE(std::string::npos,
            out.find("idem_request_duration_seconds{transport=\"binary\",op=\"insert\"} "
                     "count=100 mean=0.0005 p50<=0.001 p99<=0.001"))
      << out;
  out = FormatStatsJson(stats, metrics);
  EXPECT_NE(std::string::npos,
            out.find("{\"name\":\"idem_ops_total\",\"type\":\"counter\",\"help\":\"h\","
                     "\"samples\":[{\"labels\":{\"op\":\"insert\",\"outcome\":\"INSERTED\"},"
                     "\"value\":3}]}"))
      << out;
  EXPECT_NE(std::string::npos, out.find("\"count\":100,\"sum\":0.05,\"buckets\":[[0.0001,1],"))
      << out;
}

TEST(IdemctlOutput, TheRecordsKindIsPrinted) {
  OpResult r;
  r.outcome = Outcome::kWrongKind;
  Record rec;
  rec.status = "IN_PROGRESS";
  rec.kind = RecordKind::kAttempt;
  r.record = rec;
  EXPECT_NE(std::string::npos, FormatHuman(r, 0).find("WRONG_KIND\nkind:        attempt\n"))
      << FormatHuman(r, 0);
  EXPECT_NE(std::string::npos, FormatJson(r).find("\"record\":{\"kind\":\"attempt\","))
      << FormatJson(r);
  EXPECT_EQ(1, ExitCodeFor(Result<OpResult>(r)));  // a refusal, like ILLEGAL
}

// A replayed COMPLETED says so in both forms, not only in JSON.
TEST(IdemctlOutput, ReplayIsMarkedForPeopleAsInJson) {
  OpResult r;
  r.outcome = Outcome::kCompleted;
  Record rec;
  rec.status = "COMPLETED";
  rec.payload = "HTTP 201";
  r.record = rec;
  const std::string human = FormatHuman(r, 0);
  EXPECT_EQ("COMPLETED (replay)", human.substr(0, human.find('\n'))) << human;
  EXPECT_NE(std::string::npos, FormatJson(r).find("\"replay\":true")) << FormatJson(r);
  r.outcome = Outcome::kStarted;
  EXPECT_EQ(std::string::npos, FormatHuman(r, 0).find("replay")) << FormatHuman(r, 0);
  EXPECT_EQ(std::string::npos, FormatJson(r).find("replay")) << FormatJson(r);
}

// A remembered key: the marker's fields only, for people and in JSON, and a refusal's exit
// status (the work must not run, as for MISMATCH).
TEST(IdemctlOutput, ExpiredShowsTheRememberedKeyAndIsARefusal) {
  OpResult r;
  r.outcome = Outcome::kExpired;
  Record rec;
  rec.kind = RecordKind::kAttempt;
  rec.fingerprint = "fp-1";
  rec.updated_ms = 1'000'000 - 3'600'000;
  rec.expires_at_ms = 1'000'000 + 86'400'000;
  r.record = rec;
  EXPECT_EQ(
      "EXPIRED\n"
      "kind:        attempt\n"
      "fingerprint: \"fp-1\"\n"
      "finished:    1969-12-31T23:16:40.000Z (1h00m ago)\n"
      "forgotten:   1970-01-02T00:16:40.000Z (in 1d00h)",
      FormatHuman(r, 1'000'000));
  r.fingerprint_matches = false;
  EXPECT_EQ("EXPIRED (fingerprint differs)", FormatHuman(r, 0).substr(0, 29));
  const std::string json = FormatJson(r);
  EXPECT_NE(std::string::npos,
            json.find("{\"outcome\":\"EXPIRED\",\"fingerprint_matches\":false,\"record\":"
                      "{\"kind\":\"attempt\",\"status\":\"\""))
      << json;
  EXPECT_EQ(1, ExitCodeFor(Result<OpResult>(r)));
}

TEST(IdemctlOutput, ExitCodes) {
  OpResult ok;
  ok.outcome = Outcome::kExists;
  EXPECT_EQ(0, ExitCodeFor(Result<OpResult>(ok)));
  ok.outcome = Outcome::kConditionFailed;
  EXPECT_EQ(1, ExitCodeFor(Result<OpResult>(ok)));
  EXPECT_EQ(3, ExitCodeFor(Result<OpResult>(Status::InvalidArgument("x"))));
  EXPECT_EQ(4, ExitCodeFor(Result<OpResult>(Status::IOError("x"))));
  EXPECT_EQ(5, ExitCodeFor(Result<OpResult>(Status::TimedOut("x"))));
  EXPECT_EQ(6, ExitCodeFor(Result<OpResult>(Status::Corruption("x"))));
  EXPECT_EQ(7, ExitCodeFor(Result<OpResult>(Status::Busy("x"))));
}

// The upper-case words of `text` ("0 success: ... INSERTED, EXISTS" -> {"INSERTED", "EXISTS"}).
std::set<std::string> UpperCaseWords(std::string_view text) {
  std::set<std::string> words;
  std::string word;
  for (char c : std::string(text) + " ") {
    if ((c >= 'A' && c <= 'Z') || c == '_') {
      word += c;
    } else {
      if (word.size() > 1) words.insert(word);
      word.clear();
    }
  }
  return words;
}

// --help's exit-status paragraph comes from the classification ExitCodeFor uses.
TEST(IdemctlOutput, ExitStatusHelpListsEveryOutcomeUnderItsExitCode) {
  const std::string help = Usage();
  const size_t success = help.find("\n  0 "), refusal = help.find("\n  1 ");
  const size_t usage = help.find("\n  2 USAGE");
  ASSERT_LT(success, refusal) << help;
  ASSERT_LT(refusal, usage) << help;
  const std::set<std::string> exit0 = UpperCaseWords(help.substr(success, refusal - success));
  const std::set<std::string> exit1 = UpperCaseWords(help.substr(refusal, usage - refusal));
  for (int v = 0; v <= 0xff; ++v) {
    OpResult r;
    r.outcome = static_cast<Outcome>(v);
    const std::string name(OutcomeName(r.outcome));
    if (name == "UNKNOWN") continue;
    const int code = ExitCodeFor(Result<OpResult>(r));
    EXPECT_EQ(code == 0, exit0.count(name) == 1) << name << " (exit " << code << ")\n" << help;
    EXPECT_EQ(code == 1, exit1.count(name) == 1) << name << " (exit " << code << ")\n" << help;
  }
}

// What one run of the real binary printed, and how it exited.
struct Ran {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

Ran RunIdemctl(const std::string& args) {
  testing::TempDir dir;
  const std::string err_path = dir.Sub("stderr");
  testing::CommandResult r =
      testing::RunCommand(std::string(IDEMCTL_PATH) + " " + args + " 2>" + err_path);
  std::ifstream err(err_path);
  std::stringstream text;
  text << err.rdbuf();
  return {r.exit_code, r.output, text.str()};
}

// An error as idemctl reports one: exit status `code`, nothing on stdout (it carries answers
// only), one line on stderr starting with `stderr_prefix`, and no "outcome" anywhere.
::testing::AssertionResult IsError(const Ran& r, int code, const std::string& stderr_prefix) {
  if (r.code == code && r.out.empty() &&
      r.err.compare(0, stderr_prefix.size(), stderr_prefix) == 0 &&
      r.err.find("outcome") == std::string::npos && r.err.find('\n') == r.err.size() - 1) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "exit " << r.code << " (expected " << code << ")\nstdout: " << r.out
         << "\nstderr: " << r.err << "\nexpected stderr to start with: " << stderr_prefix;
}

// Creates an empty store in `dir`/db the way idemstored would (create_if_missing) and returns
// the idemctl arguments that name it.
std::string NewDatabase(const testing::TempDir& dir) {
  EXPECT_TRUE(Engine::Open(dir.Sub("db"), EngineOptions{}).ok());
  return "--data " + dir.Sub("db");
}

TEST(IdemctlBinary, EmbeddedSessionEndToEnd) {
  testing::TempDir dir;
  const std::string data = "--data " + dir.Sub("db");
  // A missing directory is an error, not a silently created store.
  EXPECT_EQ(4, RunIdemctl(data + " get ns k").code);
  ASSERT_EQ(data, NewDatabase(dir));  // now the store exists, as idemstored creates it
  Ran r = RunIdemctl(data + " --json insert pay k1 --payload hello --ttl 1h");
  EXPECT_EQ(0, r.code);
  EXPECT_NE(std::string::npos, r.out.find("\"outcome\":\"INSERTED\"")) << r.out;
  EXPECT_NE(std::string::npos, r.out.find("\"payload\":\"hello\"")) << r.out;
  r = RunIdemctl(data + " --json insert pay k1");
  EXPECT_EQ(0, r.code);
  EXPECT_NE(std::string::npos, r.out.find("\"outcome\":\"EXISTS\"")) << r.out;
  r = RunIdemctl(data + " cas pay k1 --expect-status NOPE --status X");
  EXPECT_EQ(1, r.code);
  EXPECT_NE(std::string::npos, r.out.find("CONDITION_FAILED")) << r.out;
  r = RunIdemctl(data + " --json insert pay " + std::string(600, 'k'));
  EXPECT_EQ(3, r.code);
  EXPECT_NE(std::string::npos, r.err.find("INVALID_ARGUMENT")) << r.err;
  r = RunIdemctl(data + " --json token-issue forms");
  EXPECT_EQ(0, r.code);
  size_t at = r.out.find("\"token\":\"");
  ASSERT_NE(std::string::npos, at) << r.out;
  std::string token = r.out.substr(at + 9, 22);
  EXPECT_EQ(0, RunIdemctl(data + " token-consume forms " + token).code);
  EXPECT_EQ(1, RunIdemctl(data + " token-consume forms " + token).code);
  r = RunIdemctl(data + " --json token-issue forms --payload refund-42");
  at = r.out.find("\"token\":\"");
  ASSERT_NE(std::string::npos, at) << r.out;
  token = r.out.substr(at + 9, 22);
  r = RunIdemctl(data + " --json token-consume forms " + token);
  EXPECT_EQ(0, r.code);
  EXPECT_NE(std::string::npos, r.out.find("\"payload\":\"refund-42\"")) << r.out;
  r = RunIdemctl(data + " begin pay attempt");
  ASSERT_EQ(0, r.code) << r.err;
  r = RunIdemctl(data + " transition pay attempt COMPLETED");
  EXPECT_EQ(1, r.code);
  EXPECT_NE(std::string::npos, r.out.find("WRONG_KIND\nkind:        attempt")) << r.out;
  EXPECT_EQ(2, RunIdemctl(data + " get pay").code);
  // A replay says so in human output too.
  r = RunIdemctl(data + " --json begin checkout req-9 --lease 30s");
  ASSERT_EQ(0, r.code) << r.err;
  const size_t fence_at = r.out.find("\"fence\":") + 8;
  const std::string fence = r.out.substr(fence_at, r.out.find(',', fence_at) - fence_at);
  EXPECT_EQ(0,
            RunIdemctl(data + " complete checkout req-9 --fence " + fence + " --payload ok").code);
  r = RunIdemctl(data + " begin checkout req-9");
  EXPECT_EQ(0, r.code);
  EXPECT_EQ("COMPLETED (replay)\n", r.out.substr(0, r.out.find('\n') + 1)) << r.out;
  r = RunIdemctl(data + " --json stats");
  EXPECT_EQ(0, r.code);
  EXPECT_NE(std::string::npos, r.out.find("\"next_fence\"")) << r.out;
  EXPECT_NE(std::string::npos, r.out.find("\"block_cache_capacity_bytes\":")) << r.out;
}

// A recovery point from the command line: the holder's checkpoint is APPLIED and shown to the
// next begin (the attempt stays in progress); a stale fence is a refusal (exit 1).
TEST(IdemctlBinary, CheckpointStoresTheAttemptsProgress) {
  testing::TempDir dir;
  const std::string data = NewDatabase(dir);
  Ran r = RunIdemctl(data + " --json begin jobs job-7 --lease 1h");
  ASSERT_EQ(0, r.code) << r.err;
  const size_t fence_at = r.out.find("\"fence\":") + 8;
  const std::string fence = r.out.substr(fence_at, r.out.find(',', fence_at) - fence_at);
  r = RunIdemctl(data + " --json checkpoint jobs job-7 --fence " + fence + " --payload charged");
  EXPECT_EQ(0, r.code) << r.err;
  EXPECT_NE(std::string::npos, r.out.find("\"outcome\":\"APPLIED\"")) << r.out;
  EXPECT_NE(std::string::npos, r.out.find("\"status\":\"IN_PROGRESS\"")) << r.out;
  r = RunIdemctl(data + " --json checkpoint jobs job-7 --fence 999999 --payload shipped");
  EXPECT_EQ(1, r.code);
  EXPECT_NE(std::string::npos, r.out.find("\"outcome\":\"FENCE_MISMATCH\"")) << r.out;
  r = RunIdemctl(data + " --json begin jobs job-7");
  EXPECT_NE(std::string::npos, r.out.find("\"outcome\":\"IN_PROGRESS\"")) << r.out;
  EXPECT_NE(std::string::npos, r.out.find("\"payload\":\"charged\"")) << r.out;
  r = RunIdemctl(data + " --json checkpoint jobs job-7 --fence " + fence + " --payload-b64 //4=");
  EXPECT_EQ(0, r.code) << r.err;
  EXPECT_NE(std::string::npos, r.out.find("\"payload_b64\":\"//4=\"")) << r.out;
}

// lock --wait waits for the holder; the lock is held for its 30 s lease, so the wait runs out and
// the answer is HELD (exit 1), with the holder.
TEST(IdemctlBinary, LockWaitsForTheHolderUntilItsWaitRunsOut) {
  testing::TempDir dir;
  const std::string data = NewDatabase(dir);
  ASSERT_EQ(0, RunIdemctl(data + " lock locks report --owner alice --lease 30s").code);
  const auto start = std::chrono::steady_clock::now();
  Ran r = RunIdemctl(data + " --json lock locks report --owner bob --wait 300ms");
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
  EXPECT_EQ(1, r.code) << r.err;
  EXPECT_NE(std::string::npos, r.out.find("\"outcome\":\"HELD\"")) << r.out;
  EXPECT_NE(std::string::npos, r.out.find("\"owner\":\"alice\"")) << r.out;
}

// Against a server, stats add the server's counters, read through the binary protocol.
TEST(IdemctlBinary, StatsFromAServerIncludeItsCounters) {
  testing::TestServer server;
  const std::string at = "--server " + server.address();
  ASSERT_EQ(0, RunIdemctl(at + " insert pay k1").code);
  ASSERT_EQ(0, RunIdemctl(at + " insert pay k1").code);  // EXISTS
  Ran r = RunIdemctl(at + " stats");
  ASSERT_EQ(0, r.code) << r.err;
  EXPECT_NE(std::string::npos, r.out.find("next_fence")) << r.out;
  EXPECT_NE(std::string::npos, r.out.find("idem_ops_total{op=\"insert\",outcome=\"INSERTED\"} 1\n"))
      << r.out;
  EXPECT_NE(std::string::npos, r.out.find("idem_ops_total{op=\"insert\",outcome=\"EXISTS\"} 1\n"))
      << r.out;
  EXPECT_NE(std::string::npos,
            r.out.find("idem_request_duration_seconds{transport=\"binary\",op=\"insert\"} count=2"))
      << r.out;
  r = RunIdemctl(at + " --json stats");
  ASSERT_EQ(0, r.code) << r.err;
  EXPECT_NE(std::string::npos, r.out.find("\"next_fence\":")) << r.out;
  EXPECT_NE(std::string::npos,
            r.out.find("{\"labels\":{\"op\":\"insert\",\"outcome\":\"EXISTS\"},\"value\":1}"))
      << r.out;
  EXPECT_NE(std::string::npos, r.out.find("\"name\":\"idem_connections_accepted_total\"")) << r.out;
}

// A zero lease or TTL is passed to the store, which refuses it naming the namespace's range
// (exit 3, as every INVALID_ARGUMENT); leaving the flag out is the namespace's default.
TEST(IdemctlBinary, AZeroLeaseOrTtlIsAnErrorNamingTheRange) {
  testing::TempDir dir;
  const std::string data = NewDatabase(dir);
  Ran r = RunIdemctl(data + " begin pay k --lease 0s");
  EXPECT_TRUE(IsError(r, 3,
                      "idemctl: error (INVALID_ARGUMENT): lease 0 ms is out of range: 1 ms .. "
                      "86400000 ms"))
      << r.err;
  r = RunIdemctl(data + " insert pay k --ttl 0s");
  EXPECT_TRUE(
      IsError(r, 3, "idemctl: error (INVALID_ARGUMENT): ttl 0 ms is out of range: 1 ms .. "))
      << r.err;
  r = RunIdemctl(data + " --json get pay k");  // nothing was written
  EXPECT_NE(std::string::npos, r.out.find("\"outcome\":\"NOT_FOUND\"")) << r.out;
  r = RunIdemctl(data + " --json begin pay k");
  EXPECT_EQ(0, r.code) << r.err;
  EXPECT_NE(std::string::npos, r.out.find("\"outcome\":\"STARTED\"")) << r.out;
}

// Any bytes go in as base64 and come back out of --json unchanged, and bytes that look like text
// in Latin-1 are not confused with that text.
TEST(IdemctlBinary, BinaryPayloadAndFingerprintRoundTrip) {
  testing::TempDir dir;
  const std::string data = NewDatabase(dir);
  std::string every_byte;
  for (int i = 0; i < 256; ++i) every_byte += static_cast<char>(i);
  const std::string b64 = Base64Encode(every_byte);
  Ran r =
      RunIdemctl(data + " --json insert bin all --payload-b64 " + b64 + " --fingerprint-b64 //4=");
  ASSERT_EQ(0, r.code) << r.err;
  r = RunIdemctl(data + " --json get bin all");
  EXPECT_NE(std::string::npos, r.out.find("\"payload_b64\":\"" + b64 + "\"")) << r.out;
  EXPECT_NE(std::string::npos, r.out.find("\"fingerprint_b64\":\"//4=\"")) << r.out;
  // The same fingerprint given as base64 matches; the text "ÿþ" does not.
  r = RunIdemctl(data + " --json insert bin all --fingerprint-b64 //4=");
  EXPECT_NE(std::string::npos, r.out.find("\"fingerprint_matches\":true")) << r.out;
  r = RunIdemctl(data +
                 " --json insert bin all --fingerprint \"$(printf '\\303\\277\\303\\276')\"");
  EXPECT_NE(std::string::npos, r.out.find("\"fingerprint_matches\":false")) << r.out;
  r = RunIdemctl(data + " --json insert bin text --payload-b64 w7/Dvg==");  // "ÿþ" as UTF-8
  EXPECT_NE(std::string::npos, r.out.find("\"payload\":\"\xc3\xbf\xc3\xbe\"")) << r.out;
  r = RunIdemctl(data + " insert bin x --payload p --payload-b64 cA==");
  EXPECT_TRUE(IsError(r, 2, "idemctl: error (USAGE): --payload and --payload-b64")) << r.err;
  r = RunIdemctl(data + " --json insert bin x --payload-b64 cA=");
  EXPECT_TRUE(IsError(r, 2,
                      "{\"error\":{\"code\":\"USAGE\",\"message\":\"--payload-b64: not base64: "
                      "padding on a text whose length is not a multiple of 4 at character 3\"}}"))
      << r.err;
}

// An error is never printed as an outcome: a script that reads "outcome" must not mistake a
// missing database for the NOT_FOUND answer. Errors go to stderr (stdout carries answers only),
// as {"error":{"code":...,"message":...}} with --json, and each class has its own exit status.
TEST(IdemctlBinary, ErrorsAreErrorObjectsOnStderrNeverOutcomes) {
  testing::TempDir dir;
  const std::string missing = "--data " + dir.Sub("missing");

  EXPECT_TRUE(IsError(RunIdemctl(missing + " --json get ns k"), 4,
                      "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"no idemstore database"));
  EXPECT_TRUE(IsError(RunIdemctl(missing + " get ns k"), 4,
                      "idemctl: error (NOT_FOUND): no idemstore database"));

  // Usage errors: exit 2, code USAGE, in the form asked for, checked before the store is opened
  // (the flags of a command are wrong whether or not the database exists).
  EXPECT_TRUE(IsError(RunIdemctl(missing + " --json get ns"), 2,
                      "{\"error\":{\"code\":\"USAGE\",\"message\":\"get takes 2"));
  EXPECT_TRUE(IsError(RunIdemctl(missing + " --json complete ns k"), 2,
                      "{\"error\":{\"code\":\"USAGE\",\"message\":\"complete needs --fence"));
  EXPECT_TRUE(IsError(RunIdemctl(missing + " complete ns k --fence x"), 2,
                      "idemctl: error (USAGE): --fence"));
  EXPECT_TRUE(IsError(RunIdemctl(missing + " get ns k --bogus 1"), 2,
                      "idemctl: error (USAGE): unknown flag --bogus (see --help)"));
  Ran help = RunIdemctl("begin --help");
  EXPECT_EQ(0, help.code);
  EXPECT_NE(std::string::npos, help.out.find("--lease D")) << help.out;
  EXPECT_EQ(0, RunIdemctl("--version").code);
  EXPECT_TRUE(IsError(RunIdemctl(missing + " --json repair"), 4,
                      "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"nothing to repair"));

  // An argument the store refuses: exit 3.
  const std::string data = NewDatabase(dir);
  const std::string long_key = std::string(600, 'k');
  EXPECT_TRUE(IsError(RunIdemctl(data + " --json get ns " + long_key), 3,
                      "{\"error\":{\"code\":\"INVALID_ARGUMENT\",\"message\":\"key is 600"));
  EXPECT_TRUE(IsError(RunIdemctl(data + " get ns " + long_key), 3,
                      "idemctl: error (INVALID_ARGUMENT): key is 600"));
  // The NOT_FOUND outcome, by contrast, is an answer: stdout, exit 1.
  Ran r = RunIdemctl(data + " --json get ns k");
  EXPECT_EQ(1, r.code);
  EXPECT_EQ("{\"outcome\":\"NOT_FOUND\"}\n", r.out);
  EXPECT_EQ("", r.err);
}

TEST(IdemctlParse, AuthCommandsNeedNoStore) {
  auto hash = Parse({"auth", "hash"});
  ASSERT_TRUE(hash.ok()) << hash.status().ToString();
  EXPECT_EQ("auth hash", hash->command);
  auto token = Parse({"--json", "auth", "token"});
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ("auth token", token->command);
  EXPECT_TRUE(token->json);
  EXPECT_EQ("auth needs a command: auth hash or auth token (see idemctl --help)",
            Parse({"auth"}).status().message());
  auto help = Parse({"auth", "hash", "--help"});
  ASSERT_TRUE(help.ok());
  EXPECT_EQ("auth hash", help->help_command);
  EXPECT_NE(std::string::npos, CommandUsage("auth hash").find("idemctl auth hash"))
      << CommandUsage("auth hash");
}

TEST(IdemctlParse, AuthHashRefusesASecretOnTheCommandLineWithoutShowingIt) {
  auto inv = Parse({"auth", "hash", "secret-on-argv-0123456789"});
  ASSERT_FALSE(inv.ok());
  EXPECT_NE(std::string::npos, inv.status().message().find("reads the secret from stdin"))
      << inv.status().message();
  EXPECT_EQ(std::string::npos, inv.status().message().find("secret-on-argv"));
  auto misplaced = Parse({"auth", "secret-on-argv-0123456789"});
  ASSERT_FALSE(misplaced.ok());
  EXPECT_EQ(std::string::npos, misplaced.status().message().find("secret-on-argv"));
}

// idemctl with `input` on its stdin.
Ran RunIdemctlWithInput(const std::string& args, const std::string& input) {
  testing::TempDir dir;
  const std::string in_path = dir.Sub("stdin");
  std::ofstream(in_path, std::ios::binary) << input;
  return RunIdemctl(args + " <" + in_path);
}

const std::regex kHashLine("sha256\\$[0-9a-f]{32}\\$[0-9a-f]{64}");

TEST(IdemctlAuth, HashPrintsTheHashLineOfTheSecretOnStdin) {
  const std::string secret = "checkout-0123456789abcdef";
  Ran r = RunIdemctlWithInput("auth hash", secret + "\n");
  ASSERT_EQ(0, r.code) << r.err;
  EXPECT_EQ("", r.err);
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ('\n', r.out.back());
  const std::string hash = r.out.substr(0, r.out.size() - 1);
  EXPECT_TRUE(std::regex_match(hash, kHashLine)) << hash;
  EXPECT_TRUE(SecretMatches(secret, hash));
  EXPECT_FALSE(SecretMatches(secret + "x", hash));
  // A file can be written from it: a line with this hash parses and lets the secret in.
  auto credentials = Credentials::Parse("checkout " + hash + " payments:read,write\n", "test");
  ASSERT_TRUE(credentials.ok()) << credentials.status().ToString();
  ASSERT_NE(nullptr, (*credentials)->Authenticate(secret));

  // Without a final line break, with a CR LF, and in JSON.
  for (const std::string& input : {secret, secret + "\r\n", secret + "\n\n"}) {
    Ran again = RunIdemctlWithInput("auth hash", input);
    ASSERT_EQ(0, again.code) << again.err;
    EXPECT_TRUE(SecretMatches(secret, again.out.substr(0, again.out.size() - 1))) << again.out;
  }
  Ran json = RunIdemctlWithInput("--json auth hash", secret + "\n");
  ASSERT_EQ(0, json.code) << json.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      json.out, m,
      std::regex("\\{\"outcome\":\"OK\",\"auth\":\\{\"hash\":\"(sha256\\$[^\"]+)\"\\}\\}\n")))
      << json.out;
  EXPECT_TRUE(SecretMatches(secret, m[1].str()));
}

TEST(IdemctlAuth, HashRefusesAShortSecretWithExit2) {
  Ran r = RunIdemctlWithInput("auth hash", std::string(kMinSecretBytes - 1, 's') + "\n");
  EXPECT_TRUE(
      IsError(r, 2, "idemctl: error (USAGE): the secret is 15 bytes; a secret has at least 16"));
  EXPECT_TRUE(IsError(RunIdemctlWithInput("--json auth hash", "short\n"), 2,
                      "{\"error\":{\"code\":\"USAGE\",\"message\":\"the secret is 5 bytes"));
  EXPECT_EQ(0, RunIdemctlWithInput("auth hash", std::string(kMinSecretBytes, 's') + "\n").code);
}

TEST(IdemctlAuth, HashRefusesAnythingButOneLineOfPrintableCharacters) {
  const std::string secret = "checkout-0123456789abcdef";
  EXPECT_TRUE(IsError(RunIdemctlWithInput("auth hash", ""), 2,
                      "idemctl: error (USAGE): no secret on stdin"));
  EXPECT_TRUE(IsError(RunIdemctlWithInput("auth hash", "\n" + secret + "\n"), 2,
                      "idemctl: error (USAGE): no secret on stdin"));
  EXPECT_TRUE(IsError(RunIdemctlWithInput("auth hash", secret + "\n" + secret + "\n"), 2,
                      "idemctl: error (USAGE): stdin holds more than one line"));
  for (const std::string& bad :
       {secret + " ", " " + secret, std::string("checkout 0123456789abcdef"), secret + "\t",
        secret + "\x7f", secret + "\xc3\xa9"}) {
    Ran r = RunIdemctlWithInput("auth hash", bad + "\n");
    EXPECT_TRUE(IsError(r, 2, "idemctl: error (USAGE): the secret may only have printable ASCII"))
        << bad;
    EXPECT_EQ(std::string::npos, r.err.find(secret)) << "the secret is shown: " << r.err;
  }
  EXPECT_EQ(
      0,
      RunIdemctlWithInput("auth hash", std::string(Credentials::kMaxTokenBytes, 'L') + "\n").code);
  Ran longer =
      RunIdemctlWithInput("auth hash", std::string(Credentials::kMaxTokenBytes + 1, 'L') + "\n");
  EXPECT_TRUE(IsError(longer, 2, "idemctl: error (USAGE): the secret is longer than 1024 bytes"));
}

// "secret: S" and "hash: H" of auth token's output, checked for their form.
std::pair<std::string, std::string> NewToken() {
  Ran r = RunIdemctl("auth token");
  EXPECT_EQ(0, r.code) << r.err;
  std::smatch m;
  EXPECT_TRUE(std::regex_match(
      r.out, m,
      std::regex("secret: ([A-Za-z0-9_-]{43})\nhash: (sha256\\$[0-9a-f]{32}\\$[0-9a-f]{64})\n")))
      << r.out;
  // The reminder goes to stderr, so stdout holds the two values only.
  EXPECT_NE(std::string::npos, r.err.find("shown only this once")) << r.err;
  if (m.size() != 3) return {};
  return {m[1].str(), m[2].str()};
}

TEST(IdemctlAuth, TokenPrintsANewSecretAndItsHash) {
  auto [secret, hash] = NewToken();
  ASSERT_FALSE(secret.empty());
  EXPECT_TRUE(SecretMatches(secret, hash));
  auto [other_secret, other_hash] = NewToken();
  ASSERT_FALSE(other_secret.empty());
  EXPECT_NE(secret, other_secret);
  EXPECT_NE(hash, other_hash);
  EXPECT_FALSE(SecretMatches(secret, other_hash));
  // The secret, given back to auth hash, makes another hash of the same secret.
  Ran rehash = RunIdemctlWithInput("auth hash", secret + "\n");
  ASSERT_EQ(0, rehash.code) << rehash.err;
  EXPECT_TRUE(SecretMatches(secret, rehash.out.substr(0, rehash.out.size() - 1)));
}

TEST(IdemctlAuth, TokenInJson) {
  Ran r = RunIdemctl("--json auth token");
  ASSERT_EQ(0, r.code) << r.err;
  EXPECT_EQ("", r.err);
  std::smatch m;
  ASSERT_TRUE(
      std::regex_match(r.out, m,
                       std::regex("\\{\"outcome\":\"OK\",\"auth\":\\{\"secret\":\"([A-Za-z0-9_-]{"
                                  "43})\",\"hash\":\"(sha256\\$[0-9a-f$]+)\"\\}\\}\n")))
      << r.out;
  EXPECT_TRUE(SecretMatches(m[1].str(), m[2].str()));
}

}  // namespace
}  // namespace idem::ctl
