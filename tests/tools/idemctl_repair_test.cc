// idemctl repair: the deliberate salvage of a damaged data directory. It copies the directory
// aside first (and says where), salvages what is readable, and reports what it lost.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <gmock/gmock.h>

#include "column_families.h"
#include "idem/engine.h"
#include "idem/repair.h"
#include "rocks_options.h"
#include "support/data_damage.h"
#include "support/run_command.h"
#include "support/temp_dir.h"
#include "support/window_families.h"

namespace idem {
namespace {

using ::testing::HasSubstr;

constexpr int kRecords = 4000;

class IdemctlRepairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.reclaim_interval_ms = 0;
    auto engine = Engine::Open(db_, options_);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    testing::InsertRecords(**engine, kRecords);
  }

  testing::CommandResult Repair() {
    return testing::RunCommand(std::string(IDEMCTL_PATH) + " --data " + db_ + " repair 2>&1");
  }
  // The copy the repair says it made.
  std::string BackupNamedIn(const std::string& output) {
    std::smatch m;
    std::regex re("copied .* to (\\S+)");
    return std::regex_search(output, m, re) ? m[1].str() : "";
  }
  int Recovered() {
    auto engine = Engine::Open(db_, options_);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    return engine.ok() ? testing::CountRecords(**engine, kRecords) : -1;
  }

  testing::TempDir dir_;
  const std::string db_ = dir_.Sub("db");
  EngineOptions options_;
};

TEST_F(IdemctlRepairTest, SalvagesAGarbledWalAndCountsWhatWasLost) {
  testing::Garble16BytesMidWal(testing::WalFiles(db_).back());
  const testing::DirSnapshot damaged = testing::Snapshot(db_);
  ASSERT_FALSE(Engine::Open(db_, options_).ok()) << "the damage must stop a normal start";

  testing::CommandResult r = Repair();
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string backup = BackupNamedIn(r.output);
  ASSERT_FALSE(backup.empty()) << r.output;
  EXPECT_TRUE(damaged == testing::Snapshot(backup)) << "the copy aside is the damaged directory";

  const int recovered = Recovered();
  EXPECT_LT(recovered, kRecords);
  EXPECT_GT(recovered, kRecords - 500) << "records after the damage are salvaged too";
  EXPECT_THAT(r.output, HasSubstr("lost " + std::to_string(kRecords - recovered) + " operations"));
  EXPECT_THAT(r.output, HasSubstr("checksum mismatch"));

  // Lost records may have carried fences above every surviving one: none may be handed out again.
  auto engine = Engine::Open(db_, options_);
  ASSERT_OK(engine);
  auto next = (*engine)->Insert({.ns = "dmg", .key = "after-repair", .status = "S"});
  ASSERT_OK(next);
  EXPECT_GT(next->record->fence, uint64_t{1} << 40);
}

TEST_F(IdemctlRepairTest, RebuildsADatabaseWhoseCurrentIsGone) {
  {
    auto engine = Engine::Open(db_, options_);  // the records reach a table file
    ASSERT_TRUE(engine.ok());
    ASSERT_OK((*engine)->Flush());
  }
  std::filesystem::remove(db_ + "/CURRENT");
  const testing::DirSnapshot damaged = testing::Snapshot(db_);

  testing::CommandResult r = Repair();
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string backup = BackupNamedIn(r.output);
  ASSERT_FALSE(backup.empty()) << r.output;
  EXPECT_TRUE(damaged == testing::Snapshot(backup));
  EXPECT_EQ(kRecords, Recovered());
  EXPECT_THAT(r.output, HasSubstr("CURRENT"));
}

// A retired WAL (its records not flushed yet) cut exactly at a record boundary: the WAL after it
// starts at a later sequence number, and the gap is what was lost.
TEST(IdemctlRepairWalGapTest, CountsWhatAWalCutAtARecordBoundaryLost) {
  testing::TempDir dir;
  const std::string db = dir.Sub("db");
  EngineOptions options;
  options.reclaim_interval_ms = 0;
  options.write_buffer_bytes = 256 << 10;
  options.rocksdb_options = "min_write_buffer_number_to_merge=2;max_write_buffer_number=4";
  int inserted = 0;
  {
    auto engine = Engine::Open(db, options);
    ASSERT_OK(engine);
    inserted = testing::InsertUntilOneWalRetired(**engine, db);
  }
  const std::vector<std::string> wals = testing::WalFiles(db);
  ASSERT_EQ(2u, wals.size());
  // Cut the retired WAL after its 21st record (the fence reservation, then batches of 50
  // inserts): a record boundary.
  testing::CutWalAfterRecords(wals[0], 21);
  ASSERT_FALSE(Engine::Open(db, options).ok());

  testing::CommandResult r =
      testing::RunCommand(std::string(IDEMCTL_PATH) + " --data " + db + " repair 2>&1");
  ASSERT_EQ(0, r.exit_code) << r.output;
  auto engine = Engine::Open(db, options);
  ASSERT_OK(engine);
  const int recovered = testing::CountRecords(**engine, inserted);
  EXPECT_LT(recovered, inserted) << r.output;
  EXPECT_GE(recovered, 1000) << r.output;
  EXPECT_THAT(r.output, HasSubstr("lost " + std::to_string(inserted - recovered) + " operations"));
}

// WALs are read oldest first by number, not by name: past WAL 999999 the names grow a digit
// and sort before it as strings. The same cut as above, with the two WALs numbered 999999 and
// 1000000: the gap is still found between them (read in name order, the newer WAL came first
// and no gap was seen).
TEST(IdemctlRepairWalGapTest, WalsAreReadInNumberOrderPastWal999999) {
  testing::TempDir dir;
  const std::string db = dir.Sub("db");
  EngineOptions options;
  options.reclaim_interval_ms = 0;
  options.write_buffer_bytes = 256 << 10;
  options.rocksdb_options = "min_write_buffer_number_to_merge=2;max_write_buffer_number=4";
  {
    auto engine = Engine::Open(db, options);
    ASSERT_OK(engine);
    testing::InsertUntilOneWalRetired(**engine, db);
  }
  const std::vector<std::string> wals = testing::WalFiles(db);
  ASSERT_EQ(2u, wals.size());
  testing::CutWalAfterRecords(wals[0], 21);
  std::filesystem::rename(wals[0], db + "/999999.log");
  std::filesystem::rename(wals[1], db + "/1000000.log");
  RepairOptions repair;
  repair.backup_dir = dir.Sub("backup");
  repair.engine = options;
  Result<RepairReport> report = RepairDatabase(db, repair);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  std::string lines;
  for (const std::string& line : report->lines) lines += line + "\n";
  EXPECT_THAT(lines, HasSubstr("are missing before 1000000.log"));
  EXPECT_GT(report->lost_operations, 0u) << lines;
  EXPECT_LT(lines.find("WAL 999999.log"), lines.find("WAL 1000000.log")) << lines;
}

// A path that cannot be examined (here a symbolic-link loop) is an I/O error naming the cause,
// not "no directory" (std::filesystem::is_directory's error was ignored).
TEST(IdemctlRepairPathTest, APathThatCannotBeExaminedIsAnIoError) {
  testing::TempDir dir;
  std::filesystem::create_directory_symlink(dir.Sub("loop"), dir.Sub("loop"));
  RepairOptions repair;
  repair.backup_dir = dir.Sub("backup");
  Result<RepairReport> report = RepairDatabase(dir.Sub("loop") + "/db", repair);
  EXPECT_TRUE(report.status().IsIOError()) << report.status().ToString();
  EXPECT_THAT(report.status().ToString(), HasSubstr("symbolic links"));
}

TEST_F(IdemctlRepairTest, SaysWhenTheLossCannotBeCounted) {
  {
    auto engine = Engine::Open(db_, options_);  // records 0..3999 reach a table file
    ASSERT_TRUE(engine.ok());
    ASSERT_OK((*engine)->Flush());
  }
  for (const auto& e : std::filesystem::directory_iterator(db_)) {
    if (e.path().extension() == ".sst") std::filesystem::remove(e.path());
  }
  testing::CommandResult r = Repair();
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_EQ(0, Recovered());
  EXPECT_THAT(r.output, HasSubstr("cannot be counted"));
  EXPECT_THAT(r.output, HasSubstr("uncounted"));
}

// The repair opens the database without the expiry compaction filter and without automatic
// compactions: run by the wall clock (not the engine's anchored time, nor its grace), the filter
// could physically delete records that are live by the engine's time. Records are cleaned later
// by the engine's own compactions. RocksDB writes the options of each open to an OPTIONS file;
// the latest is the repair's last open.
TEST_F(IdemctlRepairTest, OpensWithoutTheExpiryFilterOrAutomaticCompactions) {
  RepairOptions repair;
  repair.backup_dir = dir_.Sub("backup");
  // A wall clock a year ahead: by it, every record with an expiry has long expired.
  repair.engine.clock = std::make_shared<ManualClock>(1'700'000'000'000 + 365LL * 86'400'000);
  Result<RepairReport> report = RepairDatabase(db_, repair);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(static_cast<uint64_t>(kRecords), report->records);
  std::filesystem::path latest;
  for (const auto& e : std::filesystem::directory_iterator(db_)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("OPTIONS-") && !name.ends_with(".dbtmp") &&
        (latest.empty() ||
         std::stoull(name.substr(8)) > std::stoull(latest.filename().string().substr(8)))) {
      latest = e.path();
    }
  }
  ASSERT_FALSE(latest.empty());
  std::stringstream text;
  text << std::ifstream(latest).rdbuf();
  auto option = [&](const std::string& name) {
    std::smatch m;
    const std::string all = text.str();
    return std::regex_search(all, m, std::regex("\\n  " + name + "=(\\S+)")) ? m[1].str() : "?";
  };
  EXPECT_EQ("true", option("disable_auto_compactions"));
  EXPECT_EQ("nullptr", option("compaction_filter_factory"));
  EXPECT_EQ("nullptr", option("compaction_filter"));
  EXPECT_EQ(kRecords, Recovered());
}

// A database with an expiry-window column family and a WAL garbled in the middle: the salvage
// opens every family, replays the readable records of each (also after the damage), counts them
// all, and the loss is exactly the operations the damage destroyed.
TEST(IdemctlRepairWindowsTest, SalvagesTheRecordsOfEveryExpiryWindow) {
  testing::TempDir dir;
  const std::string db = dir.Sub("db");
  RepairOptions repair;
  repair.backup_dir = dir.Sub("backup");
  repair.engine.clock = std::make_shared<ManualClock>();
  rocksdb::Options rocks = *MakeTunedRocksOptions(repair.engine);
  constexpr int kBatches = 2000;  // each: a window record, then a default one
  testing::WriteWindowDatabase(
      db, rocks, {.default_records = kBatches, .window_records = kBatches, .flush = false});
  testing::Garble16BytesMidWal(testing::WalFiles(db).back());

  Result<RepairReport> report = RepairDatabase(db, repair);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  std::string lines;
  for (const std::string& line : report->lines) lines += line + "\n";
  EXPECT_THAT(lines, HasSubstr("checksum mismatch"));
  EXPECT_GT(report->lost_operations, 0u) << lines;
  EXPECT_EQ(uint64_t{2 * kBatches}, report->records + report->lost_operations) << lines;
  EXPECT_FALSE(report->loss_uncounted) << lines;
  EXPECT_THAT(lines, HasSubstr("in 1 expiry window"));

  auto repaired = OpenAllFamilies(rocks, rocks, db, OpenMode::kReadOnly);
  ASSERT_OK(repaired);
  ASSERT_EQ((std::vector<std::string>{"default", testing::kWindowFamily}), (*repaired)->names());
  std::string value;  // the last batch, after the damage
  const std::string last = std::to_string(kBatches - 1);
  ASSERT_TRUE((*repaired)
                  ->db()
                  ->Get(rocksdb::ReadOptions(), (*repaired)->handles()[1],
                        RecordKey("win", "w" + last), &value)
                  .ok());
  EXPECT_EQ(testing::WindowRecordValue(100 + kBatches - 1), value);
  EXPECT_TRUE(
      (*repaired)->db()->Get(rocksdb::ReadOptions(), RecordKey("win", "d" + last), &value).ok());
}

// A database of the journal layout with a segment garbled in the middle: a start refuses it and
// names the repair, which keeps every intact entry (also after the damage) and counts the ones
// it destroyed, with the real idemctl (which knows neither the segment size nor compression).
TEST(IdemctlRepairJournalTest, SalvagesADamagedJournalSegmentAndCountsWhatWasLost) {
  testing::TempDir dir;
  const std::string db = dir.Sub("db");
  EngineOptions options;
  options.reclaim_interval_ms = 0;
  options.layout = EngineOptions::Layout::kJournal;
  options.journal_segment_bytes = EngineOptions::kMinJournalSegmentBytes;
  options.limits.max_payload_bytes = 16 << 10;
  {
    auto engine = Engine::Open(db, options);
    ASSERT_OK(engine);
    testing::InsertRecords(**engine, kRecords, /*batch=*/1);
  }
  std::filesystem::remove(db + "/journal/index");  // a start then replays, and checks, it all
  testing::Garble16BytesAt(db + "/journal/0000000000000002.jnl", 30'000);
  Result<std::unique_ptr<Engine>> refused = Engine::Open(db, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("idemctl --data " + db + " repair"));

  testing::CommandResult r =
      testing::RunCommand(std::string(IDEMCTL_PATH) + " --data " + db + " repair 2>&1");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_THAT(r.output, HasSubstr("0000000000000002.jnl: damaged at offset"));
  EXPECT_THAT(r.output, HasSubstr("rewrote the journal from the"));
  auto engine = Engine::Open(db, options);
  ASSERT_OK(engine);
  const int recovered = testing::CountRecords(**engine, kRecords);
  EXPECT_GE(recovered, kRecords - 2) << "16 bytes destroy one entry, or two at a boundary";
  EXPECT_LT(recovered, kRecords);
  const int lost = kRecords - recovered;
  EXPECT_THAT(r.output, HasSubstr("lost 0 operations and " + std::to_string(lost) +
                                  (lost == 1 ? " journal entry" : " journal entries")));
  EXPECT_THAT(r.output, HasSubstr("the database now holds " + std::to_string(recovered)));
  // Every fence the journal's records carry is below what is handed out next.
  auto next = (*engine)->Insert({.ns = "dmg", .key = "after-repair", .status = "S"});
  ASSERT_OK(next);
  EXPECT_GT(next->record->fence, uint64_t{1} << 40);
}

// A column family this build does not know: the repair refuses before it changes or copies
// anything (rebuilding could only lose what that family holds).
TEST(IdemctlRepairWindowsTest, RefusesADatabaseWithAnUnknownColumnFamily) {
  testing::TempDir dir;
  const std::string db = dir.Sub("db");
  RepairOptions repair;
  repair.backup_dir = dir.Sub("backup");
  repair.engine.clock = std::make_shared<ManualClock>();
  rocksdb::Options rocks = *MakeTunedRocksOptions(repair.engine);
  rocks.create_if_missing = true;
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocks, db, &raw).ok());
    std::unique_ptr<rocksdb::DB> owned(raw);
    rocksdb::ColumnFamilyHandle* sessions = nullptr;
    ASSERT_TRUE(owned->CreateColumnFamily(rocks, "sessions", &sessions).ok());
    ASSERT_TRUE(owned->Put(rocksdb::WriteOptions(), sessions, "k", "v").ok());
    ASSERT_TRUE(owned->DestroyColumnFamilyHandle(sessions).ok());
    ASSERT_TRUE(owned->Close().ok());
  }
  const testing::DirSnapshot before = testing::Snapshot(db);
  Result<RepairReport> report = RepairDatabase(db, repair);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(Status::Code::kCorruption, report.status().code()) << report.status().ToString();
  EXPECT_THAT(report.status().message(), HasSubstr("'sessions'"));
  EXPECT_TRUE(before == testing::Snapshot(db)) << "the repair changed the directory";
  EXPECT_FALSE(std::filesystem::exists(repair.backup_dir));
}

// CURRENT gone from a database whose WAL writes an expiry window that has no table file yet:
// RocksDB's rebuild cannot replay those operations (it learns a family's id from its table
// files) and drops the rest of each such batch. The repair says so and counts the loss as
// uncounted instead of reporting an exact loss.
TEST(IdemctlRepairWindowsTest, SaysARebuildLosesWindowOperationsUncounted) {
  testing::TempDir dir;
  const std::string db = dir.Sub("db");
  RepairOptions repair;
  repair.backup_dir = dir.Sub("backup");
  repair.engine.clock = std::make_shared<ManualClock>();
  testing::WriteWindowDatabase(db, *MakeTunedRocksOptions(repair.engine),
                               {.default_records = 3, .window_records = 2, .flush = false});
  std::filesystem::remove(db + "/CURRENT");
  Result<RepairReport> report = RepairDatabase(db, repair);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  std::string lines;
  for (const std::string& line : report->lines) lines += line + "\n";
  EXPECT_TRUE(report->loss_uncounted) << lines;
  EXPECT_THAT(lines, HasSubstr("the WALs hold 2 operations on expiry windows"));
  EXPECT_LT(report->records, 5u) << lines;
}

TEST_F(IdemctlRepairTest, RefusesWithoutADataDirectory) {
  testing::CommandResult r = testing::RunCommand(std::string(IDEMCTL_PATH) + " --data " +
                                                 dir_.Sub("nowhere") + " repair 2>&1");
  EXPECT_NE(0, r.exit_code) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("nowhere")));
}

}  // namespace
}  // namespace idem
