// idemctl backup and verify: a backup taken by a running server (over the binary protocol, on
// the server's file system) or in process (--data), restored by opening it, and checked.
#include <filesystem>

#include <gmock/gmock.h>

#include "idem/engine.h"
#include "net/test_server.h"
#include "support/data_damage.h"
#include "support/run_command.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

using ::testing::HasSubstr;

constexpr int kRecords = 50;

testing::CommandResult Idemctl(const std::string& args) {
  return testing::RunCommand(std::string(IDEMCTL_PATH) + " " + args + " 2>&1");
}

std::string Key(int i) { return "order-" + std::to_string(i); }

void InsertRecords(Store& store) {
  for (int i = 0; i < kRecords; ++i) {
    auto r = store.Insert({.ns = "pay", .key = Key(i), .status = "PENDING"});
    ASSERT_TRUE(r.ok() && r->outcome == Outcome::kInserted);
  }
}

TEST(IdemctlBackup, AServerBacksUpWhileServingAndTheBackupRestores) {
  testing::TempDir dir;
  testing::TestServer server;
  InsertRecords(server.engine());
  const std::string backup = dir.Sub("backups/nightly");  // the parent is created

  testing::CommandResult r =
      Idemctl("--server " + server.address() + " --json backup --to " + backup);
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"outcome\":\"OK\""));
  EXPECT_THAT(r.output, HasSubstr("\"fence_floor\":"));
  // The server goes on serving.
  EXPECT_EQ(0, Idemctl("--server " + server.address() + " insert pay after").exit_code);

  r = Idemctl("--data " + backup + " verify");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("records " + std::to_string(kRecords) + "\n"));
  EXPECT_THAT(r.output, HasSubstr("backup.fence_floor "));
  r = Idemctl("--data " + backup + " --json verify");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"records\":" + std::to_string(kRecords) + ","));

  // Restoring is opening the directory.
  auto restored = Engine::Open(
      backup,
      testing::TestEngineOptions(std::make_shared<ManualClock>(server.clock().NowMillis())));
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  for (int i = 0; i < kRecords; ++i) {
    auto got = (*restored)->Get({.ns = "pay", .key = Key(i)});
    EXPECT_TRUE(got.ok() && got->outcome == Outcome::kFound) << Key(i);
  }
  auto after = (*restored)->Get({.ns = "pay", .key = "after"});
  EXPECT_TRUE(after.ok() && after->outcome == Outcome::kNotFound);
}

TEST(IdemctlBackup, AnExistingDirectoryIsRefused) {
  testing::TempDir dir;
  testing::TestServer server;
  std::filesystem::create_directories(dir.Sub("taken"));
  testing::CommandResult r =
      Idemctl("--server " + server.address() + " backup --to " + dir.Sub("taken"));
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(r.output, HasSubstr("already exists"));
}

TEST(IdemctlBackup, InProcessOnADataDirectoryAndVerifyFindsDamage) {
  testing::TempDir dir;
  {
    auto engine = Engine::Open(dir.Sub("db"), EngineOptions{});
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    InsertRecords(**engine);
  }
  testing::CommandResult r = Idemctl("--data " + dir.Sub("db") + " backup --to " + dir.Sub("b"));
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("backup.dir " + dir.Sub("b") + "\n"));
  ASSERT_EQ(0, Idemctl("--data " + dir.Sub("b") + " verify").exit_code);

  // The backup's table files are hard links to the source's: damage a copy, not both.
  std::filesystem::copy(dir.Sub("b"), dir.Sub("copy"), std::filesystem::copy_options::recursive);
  for (const std::string& sst : testing::TableFiles(dir.Sub("copy"))) {
    testing::GarbleTableFile(sst);
  }
  r = Idemctl("--data " + dir.Sub("copy") + " verify");
  EXPECT_EQ(6, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("CORRUPTION"));
  EXPECT_EQ(0, Idemctl("--data " + dir.Sub("b") + " verify").exit_code);
}

TEST(IdemctlBackup, VerifyNeedsADataDirectoryAndBackupADestination) {
  EXPECT_EQ(2, Idemctl("--server 127.0.0.1:1 verify").exit_code);
  EXPECT_EQ(2, Idemctl("--data /nonexistent backup").exit_code);
}

}  // namespace
}  // namespace idem
