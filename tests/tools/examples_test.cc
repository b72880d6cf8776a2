// Runs each recipe example (tools/examples) in both modes: on an embedded database and against
// a real idemstored. An example exits 0 only if every invariant it demonstrates held.
#include "support/run_command.h"
#include "support/server_process.h"
#include "support/temp_dir.h"

namespace idem::testing {
namespace {

std::pair<int, std::string> RunExample(const std::string& command) {
  CommandResult r = RunCommand(command + " 2>&1");
  return {r.exit_code, r.output};
}

class ExamplesTest : public ::testing::TestWithParam<const char*> {
 protected:
  std::string Binary() const { return std::string(EXAMPLES_DIR) + "/example_" + GetParam(); }
};

TEST_P(ExamplesTest, HoldsItsInvariantsEmbedded) {
  TempDir dir;
  auto [code, out] = RunExample(Binary() + " --data " + dir.Sub("db"));
  EXPECT_EQ(0, code) << out;
  EXPECT_NE(std::string::npos, out.find("all invariants held")) << out;
}

TEST_P(ExamplesTest, HoldsItsInvariantsAgainstIdemstored) {
  TempDir dir;
  ServerProcess server(IDEMSTORED_PATH);
  ASSERT_TRUE(
      server.Start({"--listen", "127.0.0.1:0", "--data", dir.Sub("db"), "--durability", "async",
                    "--state-graph", "payments=WAIT_PAY>PAYING>PAID>SHIPPED>DONE,WAIT_PAY>CLOSED"}))
      << server.output();
  auto [code, out] = RunExample(Binary() + " --server " + server.address());
  EXPECT_EQ(0, code) << out;
  EXPECT_NE(std::string::npos, out.find("all invariants held")) << out;
  // Run it again on the same server: keys are per run, so it must hold again.
  auto [again, out2] = RunExample(Binary() + " --server " + server.address());
  EXPECT_EQ(0, again) << out2;
  server.Signal(SIGTERM);
  EXPECT_EQ(0, server.WaitExit(10s));
}

TEST(ExamplesUsage, BadArgumentsExitWithUsage) {
  auto [code, out] = RunExample(std::string(EXAMPLES_DIR) + "/example_form_token --bogus");
  EXPECT_EQ(2, code);
  EXPECT_NE(std::string::npos, out.find("usage:")) << out;
}

INSTANTIATE_TEST_SUITE_P(Recipes, ExamplesTest,
                         ::testing::Values("order_handler", "payment_callback", "queue_consumer",
                                           "form_token", "resumable_job"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return std::string(p.param);
                         });

}  // namespace
}  // namespace idem::testing
