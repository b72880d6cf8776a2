// The real idemstored on a damaged data directory: it exits without serving, says what is
// damaged and how to salvage it, and leaves every file as it was.
#include <filesystem>

#include <gmock/gmock.h>

#include "idem/engine.h"
#include "support/data_damage.h"
#include "support/server_process.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr int kRecords = 2000;

// Runs idemstored on `db`; returns its exit status (-1 if it started serving) and its output.
int RunOn(const std::string& db, std::string* output) {
  testing::ServerProcess process(IDEMSTORED_PATH);
  if (process.Start({"--listen", "127.0.0.1:0", "--data", db})) return -1;
  int status = process.WaitExit(20s).value_or(-2);
  *output = process.output();
  return status;
}

class IdemstoredDamageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions options;
    options.reclaim_interval_ms = 0;
    auto engine = Engine::Open(db_, options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    testing::InsertRecords(**engine, kRecords);
  }

  testing::TempDir dir_;
  const std::string db_ = dir_.Sub("db");
};

TEST_F(IdemstoredDamageTest, GarbledWalStopsTheStartAndKeepsTheEvidence) {
  const std::string wal = testing::WalFiles(db_).back();
  testing::Garble16BytesMidWal(wal);
  const testing::DirSnapshot before = testing::Snapshot(db_);
  std::string out;
  EXPECT_EQ(1, RunOn(db_, &out)) << out;
  EXPECT_THAT(out, HasSubstr(std::filesystem::path(wal).filename().string()));
  EXPECT_THAT(out, HasSubstr("damaged"));
  EXPECT_THAT(out, HasSubstr("idemctl --data " + db_ + " repair"));
  EXPECT_TRUE(before == testing::Snapshot(db_)) << testing::Describe(testing::Snapshot(db_));
}

TEST_F(IdemstoredDamageTest, MissingCurrentStopsTheStartAndKeepsTheFiles) {
  std::filesystem::remove(db_ + "/CURRENT");
  const testing::DirSnapshot before = testing::Snapshot(db_);
  std::string out;
  EXPECT_EQ(1, RunOn(db_, &out)) << out;
  EXPECT_THAT(out, HasSubstr("CURRENT"));
  EXPECT_THAT(out, HasSubstr("idemctl --data " + db_ + " repair"));
  EXPECT_TRUE(before == testing::Snapshot(db_)) << testing::Describe(testing::Snapshot(db_));
}

}  // namespace
}  // namespace idem
