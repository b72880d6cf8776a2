// idemctl scan, purge and compact: against the real idemstored (over the binary protocol) and in
// process on a data directory (--data), as an operator runs them.
#include <algorithm>
#include <string>
#include <vector>

#include <gmock/gmock.h>

#include "idem/engine.h"
#include "support/run_command.h"
#include "support/server_process.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

testing::CommandResult Idemctl(const std::string& args) {
  return testing::RunCommand(std::string(IDEMCTL_PATH) + " " + args + " 2>&1");
}

size_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

class IdemctlAdmin : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start({"--listen", "127.0.0.1:0", "--data", dir_.Sub("db")}))
        << server_.output();
  }
  // idemctl against the server; the command must succeed.
  std::string Run(const std::string& args) {
    testing::CommandResult r = Idemctl("--server " + server_.address() + " " + args);
    EXPECT_EQ(0, r.exit_code) << args << ": " << r.output;
    return r.output;
  }

  testing::TempDir dir_;
  testing::ServerProcess server_{IDEMSTORED_PATH};
};

TEST_F(IdemctlAdmin, ScanFindsTheStuckAttemptPurgeRemovesAPrefixCompactRuns) {
  for (std::string k : {"order-1", "order-2", "order-3", "tmp-1", "tmp-2"}) Run("insert pay " + k);
  // A worker that began and died: its 1 ms lease has ended by the time the next command runs
  // (starting a process and connecting take longer), and nobody has taken the attempt over.
  Run("begin pay charge-42 --owner worker-7 --lease 1ms");
  Run("begin pay charge-43 --owner worker-8 --lease 1h");

  std::string stuck = Run("--json scan pay --lease-ended");
  EXPECT_EQ(1u, Lines(stuck)) << stuck;
  EXPECT_THAT(stuck, HasSubstr("\"key\":\"charge-42\""));
  EXPECT_THAT(stuck, HasSubstr("\"owner\":\"worker-7\""));
  EXPECT_THAT(stuck, HasSubstr("\"status\":\"IN_PROGRESS\""));
  std::string human = Run("scan pay --lease-ended");
  EXPECT_THAT(human, HasSubstr("\"charge-42\" IN_PROGRESS kind=attempt"));
  EXPECT_THAT(human, HasSubstr("owner=\"worker-7\""));
  EXPECT_THAT(human, HasSubstr(" ago)"));  // the lease ended in the past

  EXPECT_EQ(2u, Lines(Run("scan pay --prefix order- --limit 2")));
  EXPECT_EQ(3u, Lines(Run("scan pay --prefix order-")));
  EXPECT_EQ(7u, Lines(Run("scan pay")));
  EXPECT_EQ(5u, Lines(Run("scan pay --status PENDING")));

  testing::CommandResult refused = Idemctl("--server " + server_.address() + " purge pay");
  EXPECT_EQ(2, refused.exit_code) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("--yes"));
  EXPECT_EQ(7u, Lines(Run("scan pay")));  // nothing was deleted

  EXPECT_THAT(Run("purge pay --prefix tmp- --yes"), HasSubstr("purged 2 records"));
  EXPECT_EQ("", Run("scan pay --prefix tmp-"));
  EXPECT_EQ(5u, Lines(Run("scan pay")));
  EXPECT_THAT(Run("--json purge pay --prefix order- --yes"), HasSubstr("\"deleted\":3"));

  EXPECT_THAT(Run("compact"), HasSubstr("compacted the whole database"));
  EXPECT_THAT(Run("--json compact pay"), HasSubstr("\"compact\":{\"ns\":\"pay\"}"));
  EXPECT_EQ(2u, Lines(Run("scan pay")));
}

TEST_F(IdemctlAdmin, BadScansAreRefusedWithAMessage) {
  Run("insert pay a");
  testing::CommandResult r = Idemctl("--server " + server_.address() + " scan pay --limit 0");
  EXPECT_EQ(2, r.exit_code) << r.output;  // a usage error: nothing was sent
  EXPECT_THAT(r.output, HasSubstr("--limit"));
  r = Idemctl("--server " + server_.address() + " scan 'bad ns'");
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("INVALID_ARGUMENT"));
  r = Idemctl("--server " + server_.address() + " scan pay --status ''");
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("status"));
  r = Idemctl("--server " + server_.address() + " scan pay --lease-ended=yes");
  EXPECT_EQ(2, r.exit_code) << r.output;
  r = Idemctl("--server " + server_.address() + " compact a b");
  EXPECT_EQ(2, r.exit_code) << r.output;
}

TEST(IdemctlAdminData, ScanPurgeAndCompactWorkOnADataDirectory) {
  testing::TempDir dir;
  {
    auto engine = Engine::Open(dir.Sub("db"), EngineOptions{});
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    std::vector<std::string> keys;
    for (int i = 0; i < 1500; ++i) keys.push_back("k" + std::to_string(10000 + i));
    std::vector<Op> ops;  // more than one scan page and one purge batch, in one commit
    for (const std::string& k : keys) {
      ops.push_back(Op::Insert({.ns = "pay", .key = k, .status = "PENDING"}));
    }
    std::vector<Result<OpResult>> results;
    ASSERT_TRUE((*engine)->Apply(ops, &results).ok());
  }
  const std::string data = "--data " + dir.Sub("db") + " ";
  testing::CommandResult r = Idemctl(data + "--json scan pay");
  ASSERT_EQ(0, r.exit_code) << r.output.substr(0, 500);
  EXPECT_EQ(1500u, Lines(r.output));
  EXPECT_THAT(r.output, HasSubstr("{\"key\":\"k10000\",\"record\":{"));
  r = Idemctl(data + "scan pay --limit 1200");
  EXPECT_EQ(1200u, Lines(r.output));
  r = Idemctl(data + "purge pay --yes");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("purged 1500 records and 0 remembered keys from namespace 'pay'"));
  r = Idemctl(data + "compact pay");
  ASSERT_EQ(0, r.exit_code) << r.output;
  r = Idemctl(data + "scan pay");
  EXPECT_EQ(0, r.exit_code);
  EXPECT_THAT(r.output, Not(HasSubstr("k1")));
}

}  // namespace
}  // namespace idem
