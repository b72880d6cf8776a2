// idemctl backup and verify against the real programs: a backup taken by a running idemstored
// (over the binary protocol, on the server's file system) while clients write, restored by
// starting idemstored on it, and checked; in process on a --data directory; damage found.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

#include <gmock/gmock.h>

#include "idem/client.h"
#include "idem/engine.h"
#include "support/acknowledged_writers.h"
#include "support/connect_to.h"
#include "support/data_damage.h"
#include "support/run_command.h"
#include "support/server_process.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

using ::testing::HasSubstr;
using testing::ServerProcess;

constexpr int kRecords = 50;

testing::CommandResult Idemctl(const std::string& args) {
  return testing::RunCommand(std::string(IDEMCTL_PATH) + " " + args + " 2>&1");
}

std::string Key(int i) { return "order-" + std::to_string(i); }

std::unique_ptr<Client> ConnectTo(const ServerProcess& server) {
  return testing::ConnectTo(server.address());
}

bool StartOn(ServerProcess& server, const std::string& data) {
  return server.Start({"--listen", "127.0.0.1:0", "--data", data});
}

void InsertRecords(Store& store) {
  for (int i = 0; i < kRecords; ++i) {
    auto r = store.Insert({.ns = "pay", .key = Key(i), .status = "PENDING"});
    ASSERT_TRUE(r.ok() && r->outcome == Outcome::kInserted);
  }
}

uint64_t BeginFence(Store& store, const std::string& key) {
  auto r = store.Execute(Op::Begin({.ns = "jobs", .key = key, .fingerprint = "f"}));
  EXPECT_TRUE(r.ok() && r->outcome == Outcome::kStarted && r->record) << key;
  return r.ok() && r->record ? r->record->fence : 0;
}

// The number after "NAME " in idemctl's human output.
uint64_t Field(const std::string& output, const std::string& name) {
  const size_t at = output.find(name + " ");
  EXPECT_NE(std::string::npos, at) << name << " in " << output;
  return at == std::string::npos ? 0 : std::stoull(output.substr(at + name.size() + 1));
}

// Writers keep inserting through their own connections while idemctl has the server back up;
// every insert acknowledged before the backup began is in the backup, which a second idemstored
// serves.
TEST(IdemctlBackup, ABackupUnderConcurrentWritesHoldsEveryAcknowledgedRecord) {
  testing::TempDir dir;
  ServerProcess server(IDEMSTORED_PATH);
  ASSERT_TRUE(StartOn(server, dir.Sub("db"))) << server.output();
  constexpr int kWriters = 4;
  testing::AcknowledgedWriters writers(kWriters, "pay", [&](int) -> std::shared_ptr<Store> {
    return ConnectTo(server);  // a connection each
  });
  writers.WaitForTotal(400);
  const std::vector<int> before = writers.Acknowledged();
  const int acknowledged_before = std::accumulate(before.begin(), before.end(), 0);
  testing::CommandResult r =
      Idemctl("--server " + server.address() + " --json backup --to " + dir.Sub("backup"));
  const int during = writers.Total();
  writers.Stop();
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"fence_floor\":"));
  EXPECT_GT(during, acknowledged_before) << "the writers were not writing during the backup";

  r = Idemctl("--data " + dir.Sub("backup") + " verify");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_GE(Field(r.output, "records"), static_cast<uint64_t>(acknowledged_before));

  ServerProcess restored(IDEMSTORED_PATH);
  ASSERT_TRUE(StartOn(restored, dir.Sub("backup"))) << restored.output();
  auto client = ConnectTo(restored);
  ASSERT_TRUE(client);
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < before[w]; ++i) {
      const std::string key = testing::AcknowledgedWriters::Key(w, i);
      auto got = client->Get({.ns = "pay", .key = key});
      ASSERT_TRUE(got.ok() && got->outcome == Outcome::kFound)
          << key << " was acknowledged before the backup began";
    }
  }
}

// A holder that began on the source after the backup may present its fence to the restored
// store: no fence handed out there may repeat one the source handed out, through a restart of
// the source too.
TEST(IdemctlBackup, FencesNeverGoBackwardsAfterARestore) {
  testing::TempDir dir;
  std::set<uint64_t> source_fences;
  uint64_t floor = 0;
  {
    ServerProcess server(IDEMSTORED_PATH);
    ASSERT_TRUE(StartOn(server, dir.Sub("db"))) << server.output();
    auto client = ConnectTo(server);
    ASSERT_TRUE(client);
    source_fences.insert(BeginFence(*client, "before"));
    testing::CommandResult r =
        Idemctl("--server " + server.address() + " backup --to " + dir.Sub("backup"));
    ASSERT_EQ(0, r.exit_code) << r.output;
    floor = Field(r.output, "backup.fence_floor");
    EXPECT_GT(Field(r.output, "backup.fence_high_water"), *source_fences.rbegin());
    for (int i = 0; i < 50; ++i) source_fences.insert(BeginFence(*client, "after-" + Key(i)));
  }
  {
    ServerProcess again(IDEMSTORED_PATH);  // a restart skips the rest of its reservation
    ASSERT_TRUE(StartOn(again, dir.Sub("db"))) << again.output();
    auto client = ConnectTo(again);
    ASSERT_TRUE(client);
    for (int i = 0; i < 50; ++i) source_fences.insert(BeginFence(*client, "again-" + Key(i)));
  }
  ASSERT_LT(*source_fences.rbegin(), floor);

  ServerProcess restored(IDEMSTORED_PATH);
  ASSERT_TRUE(StartOn(restored, dir.Sub("backup"))) << restored.output();
  EXPECT_THAT(restored.output(), HasSubstr("raised the fence reservation"));
  auto client = ConnectTo(restored);
  ASSERT_TRUE(client);
  for (int i = 0; i < 100; ++i) {
    const uint64_t fence = BeginFence(*client, "restored-" + Key(i));
    EXPECT_GT(fence, *source_fences.rbegin()) << "handed out again after the restore";
    EXPECT_GE(fence, floor);
  }
}

// The server writes the backup: a path it cannot place unambiguously is refused.
TEST(IdemctlBackup, AServerRefusesARelativeOrExistingDirectoryOrAMissingParent) {
  testing::TempDir dir;
  ServerProcess server(IDEMSTORED_PATH);
  ASSERT_TRUE(StartOn(server, dir.Sub("db"))) << server.output();
  std::filesystem::create_directories(dir.Sub("taken"));
  const std::string base = "--server " + server.address() + " backup --to ";
  testing::CommandResult r = Idemctl(base + dir.Sub("taken"));
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(r.output, HasSubstr("already exists"));
  r = Idemctl(base + "relative/backup");
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("absolute"));
  r = Idemctl(base + dir.Sub("missing/backup"));
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("parent"));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("missing")));
}

// A directory a running server holds cannot be backed up in process; the error says how.
TEST(IdemctlBackup, ADataDirectoryAServerHoldsPointsToTheServer) {
  testing::TempDir dir;
  ServerProcess server(IDEMSTORED_PATH);
  ASSERT_TRUE(StartOn(server, dir.Sub("db"))) << server.output();
  testing::CommandResult r = Idemctl("--data " + dir.Sub("db") + " backup --to " + dir.Sub("b"));
  EXPECT_NE(0, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--server HOST:PORT"));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("b")));
}

TEST(IdemctlBackup, InProcessOnADataDirectoryAndVerifyNamesADamagedTableFile) {
  testing::TempDir dir;
  {
    auto engine = Engine::Open(dir.Sub("db"), EngineOptions{});
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    InsertRecords(**engine);
  }
  testing::CommandResult r = Idemctl("--data " + dir.Sub("db") + " backup --to " + dir.Sub("b"));
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("backup.dir " + dir.Sub("b") + "\n"));
  r = Idemctl("--data " + dir.Sub("b") + " verify");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("records " + std::to_string(kRecords) + "\n"));
  EXPECT_THAT(r.output, HasSubstr("backup.fence_floor "));
  r = Idemctl("--data " + dir.Sub("b") + " --json verify");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"records\":" + std::to_string(kRecords) + ","));

  // The backup's table files are hard links to the source's: damage a copy, not both.
  std::filesystem::copy(dir.Sub("b"), dir.Sub("copy"), std::filesystem::copy_options::recursive);
  const std::vector<std::string> tables = testing::TableFiles(dir.Sub("copy"));
  ASSERT_FALSE(tables.empty());
  testing::GarbleTableFile(tables.front());
  r = Idemctl("--data " + dir.Sub("copy") + " verify");
  EXPECT_EQ(6, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("CORRUPTION"));
  EXPECT_THAT(r.output, HasSubstr(std::filesystem::path(tables.front()).filename().string()));
  EXPECT_EQ(0, Idemctl("--data " + dir.Sub("b") + " verify").exit_code);
}

// Under the journal layout verify also says whether the next start loads the saved index.
TEST(IdemctlBackup, VerifySaysWhetherTheNextStartLoadsTheJournalsSavedIndex) {
  testing::TempDir dir;
  {
    EngineOptions options;
    options.layout = EngineOptions::Layout::kJournal;
    auto engine = Engine::Open(dir.Sub("db"), options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    InsertRecords(**engine);
  }  // a clean close saves the index
  testing::CommandResult r = Idemctl("--data " + dir.Sub("db") + " verify");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("journal_index agrees with the journal; the next open loads "
                                  "it: " +
                                  std::to_string(kRecords) + " records\n"));
  r = Idemctl("--data " + dir.Sub("db") + " --json verify");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("\"journal_index\":{\"records\":" + std::to_string(kRecords) + "}"));
  std::filesystem::resize_file(dir.Sub("db/journal/index"), 10);
  r = Idemctl("--data " + dir.Sub("db") + " verify");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("journal_index unusable: "));
  EXPECT_THAT(r.output, HasSubstr("(the next open replays the journal and deletes it)"));
}

TEST(IdemctlBackup, VerifyNeedsADataDirectoryAndBackupADestination) {
  EXPECT_EQ(2, Idemctl("--server 127.0.0.1:1 verify").exit_code);
  EXPECT_EQ(2, Idemctl("--data /nonexistent backup").exit_code);
}

}  // namespace
}  // namespace idem
