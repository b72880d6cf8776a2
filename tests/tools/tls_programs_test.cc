// TLS between the real programs: idemstored serving with --tls-cert/--tls-key, idemctl and
// idem-bench connecting with --tls-ca; a file idemstored cannot use stops its start naming the
// file; SIGHUP reads the files again. Certificates are made by the test (support/test_certs.h).
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <gmock/gmock.h>

#include "support/run_command.h"
#include "support/server_process.h"
#include "support/temp_dir.h"
#include "support/test_certs.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ServerProcess;

testing::CommandResult RunProgram(const std::string& program, const std::string& args) {
  return testing::RunCommand(program + " " + args + " 2>&1");
}

class TlsProgramsTest : public ::testing::Test {
 protected:
  TlsProgramsTest()
      : ca_("programs CA"),
        files_(testing::WriteTlsFiles(dir_.path(), "server", ca_,
                                      ca_.Issue({.dns = {"localhost"}, .ips = {"127.0.0.1"}}))) {}

  bool StartTlsServer() {
    return server_.Start({"--listen", "127.0.0.1:0", "--data", dir_.Sub("db"), "--tls-cert",
                          files_.cert_file, "--tls-key", files_.key_file});
  }
  testing::CommandResult Idemctl(const std::string& args) {
    return RunProgram(IDEMCTL_PATH, "--server " + server_.address() + " " + args);
  }

  testing::TempDir dir_;
  testing::TestCa ca_;
  testing::TlsFiles files_;
  ServerProcess server_{IDEMSTORED_PATH};
};

TEST_F(TlsProgramsTest, IdemctlWithTheCaRoundTripsThroughIdemstored) {
  ASSERT_TRUE(StartTlsServer()) << server_.output();
  testing::CommandResult insert =
      Idemctl("--tls-ca " + files_.ca_file + " insert pay order-1 --status PENDING");
  EXPECT_EQ(0, insert.exit_code) << insert.output;
  EXPECT_THAT(insert.output, HasSubstr("INSERTED"));
  testing::CommandResult get = Idemctl("--tls-ca " + files_.ca_file + " get pay order-1");
  EXPECT_EQ(0, get.exit_code) << get.output;
  EXPECT_THAT(get.output, HasSubstr("PENDING"));

  // Without TLS, or trusting only the system's CAs: refused, with the reason.
  testing::CommandResult plain = Idemctl("get pay order-1");
  EXPECT_EQ(4, plain.exit_code) << plain.output;  // IO_ERROR
  testing::CommandResult untrusted = Idemctl("--tls get pay order-1");
  EXPECT_EQ(4, untrusted.exit_code) << untrusted.output;
  EXPECT_THAT(untrusted.output, HasSubstr("certificate verify failed"));
}

TEST_F(TlsProgramsTest, IdemBenchMeasuresOverTls) {
  ASSERT_TRUE(StartTlsServer()) << server_.output();
  testing::CommandResult bench =
      RunProgram(IDEM_BENCH_PATH, "--server " + server_.address() + " --tls-ca " + files_.ca_file +
                                      " --pipeline 16 --requests 2000 --quiet");
  EXPECT_EQ(0, bench.exit_code) << bench.output;
  EXPECT_THAT(bench.output, Not(HasSubstr("IO_ERROR"))) << bench.output;

  testing::CommandResult untrusted =
      RunProgram(IDEM_BENCH_PATH, "--server " + server_.address() + " --tls --requests 10 --quiet");
  EXPECT_NE(0, untrusted.exit_code) << untrusted.output;
  EXPECT_THAT(untrusted.output, HasSubstr("certificate verify failed"));
}

TEST_F(TlsProgramsTest, IdemstoredRefusesToStartWithAKeyItCannotReadNamingIt) {
  ServerProcess server(IDEMSTORED_PATH);
  const std::string missing = dir_.Sub("no-such.key");
  EXPECT_FALSE(server.Start({"--listen", "127.0.0.1:0", "--data", dir_.Sub("db"), "--tls-cert",
                             files_.cert_file, "--tls-key", missing}));
  EXPECT_EQ(std::optional<int>(1), server.WaitExit(20s)) << server.output();
  EXPECT_THAT(server.output(), HasSubstr("cannot read TLS key file '" + missing + "'"));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("db"))) << "a refused start created the database";
}

TEST_F(TlsProgramsTest, SighupReloadsTheCertificate) {
  ASSERT_TRUE(StartTlsServer()) << server_.output();
  testing::TestCa next_ca("next CA");
  testing::WriteTlsFiles(dir_.path(), "next", next_ca, next_ca.Issue({.ips = {"127.0.0.1"}}));
  std::filesystem::copy_file(dir_.Sub("next.pem"), files_.cert_file,
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(dir_.Sub("next.key"), files_.key_file,
                             std::filesystem::copy_options::overwrite_existing);
  server_.Signal(SIGHUP);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (server_.output().find("reloaded") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);  // polling the child's log with a deadline
  }
  ASSERT_THAT(server_.output(), HasSubstr("reloaded"));
  testing::CommandResult with_next = Idemctl("--tls-ca " + dir_.Sub("next-ca.pem") + " stats");
  EXPECT_EQ(0, with_next.exit_code) << with_next.output;
  testing::CommandResult with_old = Idemctl("--tls-ca " + files_.ca_file + " stats");
  EXPECT_EQ(4, with_old.exit_code) << with_old.output;
}

}  // namespace
}  // namespace idem
