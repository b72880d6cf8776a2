// idemctl: parsing, the Op each command builds, output and exit codes, and the real binary
// end to end on an embedded store.
#include "idem/engine.h"
#include "invocation.h"
#include "json_writer.h"
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
  EXPECT_EQ(15 * 60'000, op->ttl_ms);
  auto forever = Parse({"--data", "d", "insert", "pay", "k", "--ttl", "forever"});
  EXPECT_EQ(kForever, BuildOp(*forever)->ttl_ms);
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
  EXPECT_EQ(7 * 24 * 3600'000LL, op->update.ttl_ms);
  auto bad = Parse({"--data", "d", "delete", "o", "k", "--expect-version", "-1"});
  EXPECT_FALSE(BuildOp(*bad).ok());
}

TEST(IdemctlBuild, LifecycleTokenLockTransition) {
  auto begin = Parse({"--data", "d", "begin", "p", "k", "--lease", "30s", "--wait", "2s"});
  auto b = BuildOp(*begin);
  EXPECT_EQ(OpType::kBegin, b->type);
  EXPECT_EQ(30'000, b->lease_ms);
  EXPECT_EQ(2'000, b->wait_ms);
  auto complete = Parse({"--data", "d", "complete", "p", "k", "--fence", "42", "--payload", "r"});
  auto c = BuildOp(*complete);
  EXPECT_EQ(OpType::kComplete, c->type);
  EXPECT_EQ(42u, c->condition.fence);
  auto no_fence = Parse({"--data", "d", "abort", "p", "k"});
  EXPECT_FALSE(BuildOp(*no_fence).ok());
  auto issue = Parse({"--data", "d", "token-issue", "forms", "--ttl", "1h"});
  EXPECT_EQ(OpType::kIssueToken, BuildOp(*issue)->type);
  auto with_payload = Parse({"--data", "d", "token-issue", "forms", "--payload", "refund 42"});
  ASSERT_TRUE(with_payload.ok()) << with_payload.status().ToString();
  EXPECT_EQ("refund 42", BuildOp(*with_payload)->payload);
  auto lock = Parse({"--data", "d", "lock", "l", "k"});
  EXPECT_FALSE(BuildOp(*lock).ok());  // --owner required
  auto tr = Parse({"--data", "d", "transition", "o", "k", "PAID", "--expect-version", "2"});
  auto t = BuildOp(*tr);
  EXPECT_EQ(OpType::kTransition, t->type);
  EXPECT_EQ("PAID", t->status);
  EXPECT_EQ(2u, t->condition.version);
}

TEST(IdemctlOutput, JsonCarriesOutcomeAndRecord) {
  OpResult r;
  r.outcome = Outcome::kInserted;
  Record rec;
  rec.status = "PENDING";
  rec.version = 1;
  rec.fence = 9;
  rec.payload = "a\"b\n\xff";
  rec.expires_at_ms = 123;
  rec.kind = RecordKind::kPlain;
  r.record = rec;
  EXPECT_EQ(
      "{\"outcome\":\"INSERTED\",\"record\":{\"kind\":\"plain\",\"status\":\"PENDING\",\"version\":"
      "1,\"fence\":9,"
      "\"fingerprint\":\"\",\"payload\":\"a\\\"b\\n\\u00ff\",\"owner\":\"\",\"created_ms\":0,"
      "\"updated_ms\":0,\"expires_at_ms\":123,\"lease_until_ms\":0}}",
      FormatJson(r));
  EXPECT_EQ("{\"outcome\":\"INVALID_ARGUMENT\",\"error\":\"key too long\"}",
            FormatJson(Result<OpResult>(Status::InvalidArgument("key too long"))));
  EXPECT_EQ("\"h\xc3\xa9llo\"", JsonQuote("h\xc3\xa9llo"));  // UTF-8 kept
}

TEST(IdemctlOutput, HumanOutputOfStatsAndTimes) {
  StoreStats stats;
  stats.records_dropped_by_compaction = 7;  // the longest label
  stats.durability = "sync";
  std::string out = FormatStatsHuman(stats);
  EXPECT_NE(std::string::npos, out.find("records_dropped_by_compaction  7")) << out;
  OpResult r;
  r.outcome = Outcome::kFound;
  Record rec;
  rec.status = "S";
  rec.expires_at_ms = 1'000'000 + 86'399'993;
  r.record = rec;
  EXPECT_NE(std::string::npos, FormatHuman(r, 1'000'000).find("(in 23h59m)"))
      << FormatHuman(r, 1'000'000);
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

TEST(IdemctlOutput, ExitCodes) {
  OpResult ok;
  ok.outcome = Outcome::kExists;
  EXPECT_EQ(0, ExitCodeFor(Result<OpResult>(ok)));
  ok.outcome = Outcome::kConditionFailed;
  EXPECT_EQ(1, ExitCodeFor(Result<OpResult>(ok)));
  EXPECT_EQ(3, ExitCodeFor(Result<OpResult>(Status::InvalidArgument("x"))));
  EXPECT_EQ(4, ExitCodeFor(Result<OpResult>(Status::IOError("x"))));
  EXPECT_EQ(5, ExitCodeFor(Result<OpResult>(Status::TimedOut("x"))));
}

// Runs the real binary; returns (exit status, stdout).
std::pair<int, std::string> RunIdemctl(const std::string& args) {
  testing::CommandResult r =
      testing::RunCommand(std::string(IDEMCTL_PATH) + " " + args + " 2>/dev/null");
  return {r.exit_code, r.output};
}

TEST(IdemctlBinary, EmbeddedSessionEndToEnd) {
  testing::TempDir dir;
  const std::string data = "--data " + dir.Sub("db");
  // A missing directory is an error, not a silently created store.
  EXPECT_EQ(4, RunIdemctl(data + " get ns k").first);
  {
    // Create the store the way idemstored would (create_if_missing), then use idemctl on it.
    auto engine = Engine::Open(dir.Sub("db"), EngineOptions{});
    ASSERT_TRUE(engine.ok());
  }
  auto [code, out] = RunIdemctl(data + " --json insert pay k1 --payload hello --ttl 1h");
  EXPECT_EQ(0, code);
  EXPECT_NE(std::string::npos, out.find("\"outcome\":\"INSERTED\"")) << out;
  EXPECT_NE(std::string::npos, out.find("\"payload\":\"hello\"")) << out;
  std::tie(code, out) = RunIdemctl(data + " --json insert pay k1");
  EXPECT_EQ(0, code);
  EXPECT_NE(std::string::npos, out.find("\"outcome\":\"EXISTS\"")) << out;
  std::tie(code, out) = RunIdemctl(data + " cas pay k1 --expect-status NOPE --status X");
  EXPECT_EQ(1, code);
  EXPECT_NE(std::string::npos, out.find("CONDITION_FAILED")) << out;
  std::tie(code, out) = RunIdemctl(data + " --json insert pay " + std::string(600, 'k'));
  EXPECT_EQ(3, code);
  EXPECT_NE(std::string::npos, out.find("INVALID_ARGUMENT")) << out;
  std::tie(code, out) = RunIdemctl(data + " --json token-issue forms");
  EXPECT_EQ(0, code);
  size_t at = out.find("\"token\":\"");
  ASSERT_NE(std::string::npos, at) << out;
  std::string token = out.substr(at + 9, 22);
  EXPECT_EQ(0, RunIdemctl(data + " token-consume forms " + token).first);
  EXPECT_EQ(1, RunIdemctl(data + " token-consume forms " + token).first);
  std::tie(code, out) = RunIdemctl(data + " --json token-issue forms --payload refund-42");
  at = out.find("\"token\":\"");
  ASSERT_NE(std::string::npos, at) << out;
  token = out.substr(at + 9, 22);
  std::tie(code, out) = RunIdemctl(data + " --json token-consume forms " + token);
  EXPECT_EQ(0, code);
  EXPECT_NE(std::string::npos, out.find("\"payload\":\"refund-42\"")) << out;
  std::tie(code, out) = RunIdemctl(data + " begin pay attempt");
  ASSERT_EQ(0, code) << out;
  std::tie(code, out) = RunIdemctl(data + " transition pay attempt COMPLETED");
  EXPECT_EQ(1, code);
  EXPECT_NE(std::string::npos, out.find("WRONG_KIND\nkind:        attempt")) << out;
  EXPECT_EQ(2, RunIdemctl(data + " get pay").first);
  std::tie(code, out) = RunIdemctl(data + " --json stats");
  EXPECT_EQ(0, code);
  EXPECT_NE(std::string::npos, out.find("\"next_fence\"")) << out;
  EXPECT_NE(std::string::npos, out.find("\"block_cache_capacity_bytes\":")) << out;
}

}  // namespace
}  // namespace idem::ctl
