// idemctl --token / IDEM_TOKEN against the real idemstored with --auth-file: the token goes in
// the Hello, refusals exit 8 with their code, SIGHUP re-reads the file, and a file that does not
// parse stops the start naming its line.
#include <chrono>
#include <string>
#include <thread>

#include <gmock/gmock.h>

#include "net/auth_fixture.h"
#include "support/run_command.h"
#include "support/server_process.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

using ::testing::HasSubstr;
using testing::kAdminToken;
using testing::kCheckoutToken;
using testing::kReaderToken;

testing::CommandResult Idemctl(const std::string& args, const std::string& env = "") {
  return testing::RunCommand(env + " " + std::string(IDEMCTL_PATH) + " " + args + " 2>&1");
}

class IdemctlAuth : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start(
        {"--listen", "127.0.0.1:0", "--data", dir_.Sub("db"), "--auth-file", file_.path()}))
        << server_.output();
  }
  std::string Server() const { return "--server " + server_.address() + " "; }

  testing::TempDir dir_;
  testing::CredentialsFile file_;
  testing::ServerProcess server_{IDEMSTORED_PATH};
};

TEST_F(IdemctlAuth, TheTokenComesFromTheFlagOrIdemToken) {
  testing::CommandResult none = Idemctl(Server() + "insert payments k1", "env -u IDEM_TOKEN");
  EXPECT_EQ(8, none.exit_code) << none.output;
  EXPECT_THAT(none.output, HasSubstr("idemctl: error (UNAUTHENTICATED): this server requires a "
                                     "token: --token or IDEM_TOKEN"));
  testing::CommandResult flag =
      Idemctl(Server() + "--token " + kCheckoutToken + " insert payments k1");
  EXPECT_EQ(0, flag.exit_code) << flag.output;
  EXPECT_THAT(flag.output, HasSubstr("INSERTED"));
  testing::CommandResult env = Idemctl(Server() + "get payments k1", "IDEM_TOKEN=" + kReaderToken);
  EXPECT_EQ(0, env.exit_code) << env.output;
  EXPECT_THAT(env.output, HasSubstr("FOUND"));
  // The flag wins over the environment.
  testing::CommandResult both = Idemctl(
      Server() + "--token wrong-secret-0123456789 get payments k1", "IDEM_TOKEN=" + kReaderToken);
  EXPECT_EQ(8, both.exit_code) << both.output;
  EXPECT_THAT(both.output, HasSubstr("UNAUTHENTICATED"));
}

TEST_F(IdemctlAuth, ARefusedRequestExitsEightWithPermissionDenied) {
  testing::CommandResult write =
      Idemctl(Server() + "--json insert payments k2", "IDEM_TOKEN=" + kReaderToken);
  EXPECT_EQ(8, write.exit_code) << write.output;
  EXPECT_THAT(write.output, HasSubstr("\"code\":\"PERMISSION_DENIED\""));
  EXPECT_THAT(write.output, HasSubstr("'payments'"));
  testing::CommandResult stats = Idemctl(Server() + "stats", "IDEM_TOKEN=" + kCheckoutToken);
  EXPECT_EQ(8, stats.exit_code) << stats.output;
  EXPECT_EQ(0, Idemctl(Server() + "stats", "IDEM_TOKEN=" + kAdminToken).exit_code);
  testing::CommandResult get = Idemctl(Server() + "get payments k2", "IDEM_TOKEN=" + kAdminToken);
  EXPECT_EQ(1, get.exit_code) << get.output;  // NOT_FOUND: nothing was written
}

TEST_F(IdemctlAuth, SighupReReadsTheAuthFile) {
  const std::string token = "newcomer-secret-0123456789";
  EXPECT_EQ(8, Idemctl(Server() + "--token " + token + " get orders k").exit_code);
  file_.Write(testing::CredentialsFile::DefaultPrincipals() + "newcomer " + token +
              " orders:read\n");
  server_.Signal(SIGHUP);
  // The reload's log line says when it is done.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (server_.output().find("reloaded") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_THAT(server_.output(), HasSubstr("reloaded"));
  testing::CommandResult r = Idemctl(Server() + "--token " + token + " get orders k");
  EXPECT_EQ(1, r.exit_code) << r.output;  // NOT_FOUND: authenticated and allowed
}

TEST(IdemstoredAuthFile, AFileThatDoesNotParseStopsTheStartNamingItsLine) {
  testing::TempDir dir;
  testing::CredentialsFile file;
  file.WriteRaw("# principals\n\nops sha256$0$0 *:fly\n");
  testing::ServerProcess server(IDEMSTORED_PATH);
  EXPECT_FALSE(server.Start(
      {"--listen", "127.0.0.1:0", "--data", dir.Sub("db"), "--auth-file", file.path()}));
  EXPECT_THAT(server.output(), HasSubstr(file.path() + ":3"));
  EXPECT_EQ(1, server.WaitExit(std::chrono::seconds(10)));
}

}  // namespace
}  // namespace idem
