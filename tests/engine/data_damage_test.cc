// A damaged data directory: the engine refuses to start, says what is wrong and where, and
// changes nothing — instead of silently dropping acknowledged records (a garbled or cut WAL) or
// starting an empty database over the old one (a missing CURRENT). A torn last record, what a
// crash leaves, still opens (engine_crash_test and prezeroed_wal_test cover that in depth).
#include "support/data_damage.h"

#include <filesystem>

#include <gmock/gmock.h>

#include "idem/engine.h"
#include "support/engine_fixture.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

using testing::DirSnapshot;
using ::testing::HasSubstr;
using testing::Snapshot;

constexpr int kRecords = 4000;  // ~80 batches: a WAL of ~700 KiB, many 32 KiB log blocks

class DataDamageTest : public ::testing::TestWithParam<Durability> {
 protected:
  DataDamageTest() {
    options_.durability = GetParam();
    options_.reclaim_interval_ms = 0;
    options_.wal_prezero_chunk_bytes = 64 * 1024;
  }

  // A database holding kRecords acknowledged records, closed cleanly (its WAL holds them all).
  std::string CleanlyClosed() {
    const std::string db = dir_.Sub("db");
    auto engine = Engine::Open(db, options_);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    testing::InsertRecords(**engine, kRecords);
    return db;
  }

  // The same records, in a copy taken while the engine is open: a crash image.
  std::string CrashImage() {
    const std::string db = dir_.Sub("live");
    auto engine = Engine::Open(db, options_);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    testing::InsertRecords(**engine, kRecords);
    testing::CopyCrashImage(db, dir_.Sub("image"));
    return dir_.Sub("image");
  }

  // Open must fail with a message containing each of `words`, and change nothing in `db`.
  void ExpectRefused(const std::string& db, std::vector<std::string> words, bool salvageable = true,
                     bool rocksdb_refuses = false) {
    const auto snapshot = [&] {
      return rocksdb_refuses ? testing::WithoutInfoLogs(Snapshot(db)) : Snapshot(db);
    };
    const DirSnapshot before = snapshot();
    auto engine = Engine::Open(db, options_);
    ASSERT_FALSE(engine.ok()) << "opened, holding " << testing::CountRecords(**engine, kRecords)
                              << " of " << kRecords << " acknowledged records";
    for (const std::string& w : words) {
      EXPECT_THAT(engine.status().message(), HasSubstr(w));
    }
    if (salvageable) {
      EXPECT_THAT(engine.status().message(), HasSubstr("idemctl --data " + db + " repair"));
    }
    const DirSnapshot after = snapshot();
    EXPECT_TRUE(before == after) << "before: " << testing::Describe(before)
                                 << "\nafter: " << testing::Describe(after);
  }

  testing::TempDir dir_;
  EngineOptions options_;
};

TEST_P(DataDamageTest, GarbledBytesMidWalRefuseTheStart) {
  const std::string db = CleanlyClosed();
  const std::string wal = testing::WalFiles(db).back();
  testing::Garble16BytesMidWal(wal);
  ExpectRefused(db, {std::filesystem::path(wal).filename().string(), "damaged", "checksum"});
}

TEST_P(DataDamageTest, GarbledBytesMidWalOfACrashImageRefuseTheStart) {
  const std::string db = CrashImage();
  const std::string wal = testing::WalFiles(db).back();
  testing::Garble16BytesMidWal(wal);
  ExpectRefused(db, {std::filesystem::path(wal).filename().string(), "damaged"});
}

// What a crash in the middle of a write leaves: the last record torn, zeros (or the end of the
// file) after it. It opens without that record, which was never acknowledged, and says so.
TEST_P(DataDamageTest, ATornLastRecordOpensAndIsLogged) {
  const std::string db = CrashImage();
  const std::string wal = testing::WalFiles(db).back();
  const uint64_t end = testing::WalDataEnd(wal);
  {
    std::fstream f(wal, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(end - 100));
    f.write(std::string(100, '\0').data(), 100);
  }
  std::vector<std::string> lines;
  options_.log = [&lines](const LogRecord& record) { lines.emplace_back(record.message); };
  auto engine = Engine::Open(db, options_);
  ASSERT_OK(engine);
  EXPECT_EQ(kRecords - 50, testing::CountRecords(**engine, kRecords)) << "all but the last batch";
  ASSERT_EQ(1u, lines.size());
  EXPECT_THAT(lines[0], HasSubstr(std::filesystem::path(wal).filename().string()));
  EXPECT_THAT(lines[0], HasSubstr("incomplete"));
}

TEST_P(DataDamageTest, MissingCurrentRefusesTheStart) {
  const std::string db = CleanlyClosed();
  {
    auto engine = Engine::Open(db, options_);  // now the records are in a table file too
    ASSERT_OK(engine);
    ASSERT_OK((*engine)->Flush());
  }
  std::filesystem::remove(db + "/CURRENT");
  ExpectRefused(db, {"CURRENT", "MANIFEST-", ".sst"});
}

TEST_P(DataDamageTest, MissingCurrentAndWalRefusesTheStart) {
  const std::string db = CleanlyClosed();
  {
    auto engine = Engine::Open(db, options_);
    ASSERT_OK(engine);
    ASSERT_OK((*engine)->Flush());
  }
  std::filesystem::remove(db + "/CURRENT");
  for (const std::string& wal : testing::WalFiles(db)) std::filesystem::remove(wal);
  ExpectRefused(db, {"CURRENT", ".sst"});
}

// Damage RocksDB refuses itself (a table file the MANIFEST lists is gone) points at the salvage
// path too. Only RocksDB's info log rotates.
TEST_P(DataDamageTest, AMissingTableFileRefusesTheStartWithTheSalvagePath) {
  const std::string db = CleanlyClosed();
  {
    auto engine = Engine::Open(db, options_);
    ASSERT_OK(engine);
    ASSERT_OK((*engine)->Flush());
  }
  for (const auto& e : std::filesystem::directory_iterator(db)) {
    if (e.path().extension() == ".sst") std::filesystem::remove(e.path());
  }
  ExpectRefused(db, {"No such file", "MANIFEST-"}, /*salvageable=*/true, /*rocksdb_refuses=*/true);
}

TEST_P(DataDamageTest, ANonEmptyDirectoryThatHoldsNoDatabaseIsNotTakenOver) {
  const std::string db = dir_.Sub("notes");
  std::filesystem::create_directories(db);
  std::ofstream(db + "/todo.txt") << "not a database";
  ExpectRefused(db, {"todo.txt", "no idemstore database"}, /*salvageable=*/false);
}

// A database another engine has open is in use, not damaged: its live WAL is not even read.
TEST_P(DataDamageTest, ADatabaseInUseIsBusyNotDamaged) {
  const std::string db = dir_.Sub("db");
  auto first = Engine::Open(db, options_);
  ASSERT_OK(first);
  testing::InsertRecords(**first, 100);
  auto second = Engine::Open(db, options_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(Status::Code::kBusy, second.status().code()) << second.status().ToString();
  EXPECT_THAT(second.status().message(), HasSubstr("in use"));
}

TEST_P(DataDamageTest, AnEmptyOrAbsentDirectoryGetsANewDatabase) {
  std::filesystem::create_directories(dir_.Sub("empty"));
  ASSERT_OK(Engine::Open(dir_.Sub("empty"), options_));
  ASSERT_OK(Engine::Open(dir_.Sub("absent"), options_));
}

INSTANTIATE_TEST_SUITE_P(Durability, DataDamageTest,
                         ::testing::Values(Durability::kSync, Durability::kAsync),
                         testing::DurabilityName);

// Cutting a WAL short is told from a crash's torn tail only in sync mode: a live sync-mode WAL
// runs into the zeros written ahead of it, a cleanly closed one ends with a whole record, so a
// WAL that ends inside a record was cut. (In async mode a crash can leave exactly that.)
class CutWalTest : public DataDamageTest {};

TEST_P(CutWalTest, WalCutInHalfRefusesTheStart) {
  const std::string db = CleanlyClosed();
  const std::string wal = testing::WalFiles(db).back();
  testing::CutWalInHalf(wal);
  ExpectRefused(db, {std::filesystem::path(wal).filename().string(), "cut short"});
}

TEST_P(CutWalTest, WalOfACrashImageCutInHalfRefusesTheStart) {
  const std::string db = CrashImage();
  const std::string wal = testing::WalFiles(db).back();
  testing::CutWalInHalf(wal);
  ExpectRefused(db, {std::filesystem::path(wal).filename().string(), "cut short"});
}

// A WAL that is no longer written to but whose records are not flushed yet (here: the memtable
// switched, and flushes wait for two). Cut exactly at a record boundary it reads as whole; the
// MANIFEST knows the size it was synced at (track_and_verify_wals_in_manifest), so RocksDB
// refuses. In both modes: RocksDB syncs a WAL before it retires it.
TEST_P(DataDamageTest, AClosedWalCutAtARecordBoundaryRefusesTheStart) {
  options_.write_buffer_bytes = 256 << 10;
  options_.rocksdb_options = "min_write_buffer_number_to_merge=2;max_write_buffer_number=4";
  const std::string db = dir_.Sub("db");
  {
    auto engine = Engine::Open(db, options_);
    ASSERT_OK(engine);
    testing::InsertUntilOneWalRetired(**engine, db);
  }
  const std::vector<std::string> wals = testing::WalFiles(db);
  ASSERT_EQ(2u, wals.size()) << "one retired WAL, one live";
  testing::CutWalAfterRecords(wals[0], 21);  // the fence reservation and 20 batches
  const std::string number = std::to_string(std::stoull(std::filesystem::path(wals[0]).stem()));
  ExpectRefused(db, {"Size mismatch", "log number: " + number},
                /*salvageable=*/true, /*rocksdb_refuses=*/true);
}

INSTANTIATE_TEST_SUITE_P(Durability, CutWalTest, ::testing::Values(Durability::kSync),
                         testing::DurabilityName);

}  // namespace
}  // namespace idem
