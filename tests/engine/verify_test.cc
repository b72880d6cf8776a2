// VerifyDatabase (idem/verify.h): counts what a sound backup holds, and finds a damaged table
// file, a damaged journal segment or a value that does not decode.
#include "idem/verify.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <rocksdb/db.h>
#include <rocksdb/file_system.h>

#include "column_families.h"
#include "journal_saved_index.h"
#include "key_codec.h"
#include "record_codec.h"
#include "rocks_options.h"
#include "support/data_damage.h"
#include "support/engine_fixture.h"
#include "support/window_families.h"

namespace idem {
namespace {

using testing::EngineTest;
using ::testing::HasSubstr;

class VerifyTest : public EngineTest {
 protected:
  static constexpr int kRecords = 300;

  // A backup of kRecords records, with the source closed.
  std::string Backup() {
    for (int i = 0; i < kRecords; ++i) {
      EXPECT_EQ("INSERTED", Insert("forever", "k" + std::to_string(i)));
    }
    auto manifest = engine().Backup(dir_.Sub("backup"));
    EXPECT_TRUE(manifest.ok()) << manifest.status().ToString();
    engine_.reset();
    return dir_.Sub("backup");
  }
};

TEST_F(VerifyTest, CountsWhatASoundBackupHolds) {
  const std::string backup = Backup();
  const testing::DirSnapshot before = testing::Snapshot(backup);
  auto report = VerifyDatabase(backup, options_);
  ASSERT_OK(report);
  EXPECT_EQ(uint64_t{kRecords}, report->records);
  EXPECT_EQ(0u, report->markers);
  EXPECT_EQ(1u, report->meta_keys);  // the fence reservation (a ManualClock keeps no clock mark)
  EXPECT_EQ(testing::TableFiles(backup).size(), report->table_files);
  EXPECT_GT(report->table_bytes, 0u);
  ASSERT_TRUE(report->manifest.has_value());
  EXPECT_EQ(ReadBackupManifest(backup)->fence_floor, report->manifest->fence_floor);
  EXPECT_EQ(before, testing::Snapshot(backup)) << "verify changed the backup";
}

TEST_F(VerifyTest, FindsATableFileWithFlippedBytes) {
  const std::string backup = Backup();
  const std::vector<std::string> tables = testing::TableFiles(backup);
  ASSERT_EQ(1u, tables.size());
  testing::GarbleTableFile(tables[0]);
  auto report = VerifyDatabase(backup, options_);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(Status::Code::kCorruption, report.status().code()) << report.status().ToString();
  EXPECT_THAT(report.status().message(), HasSubstr(".sst"));
}

TEST_F(VerifyTest, FindsAValueThatDoesNotDecode) {
  const std::string backup = Backup();
  {
    EngineOptions engine = options_;
    rocksdb::Options rocks = *MakeTunedRocksOptions(engine);
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocks, backup, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), RecordKey("forever", "bad\x01"), "\x01zz").ok());
    ASSERT_TRUE(db->Close().ok());
  }
  auto report = VerifyDatabase(backup, options_);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(Status::Code::kCorruption, report.status().code());
  EXPECT_THAT(report.status().message(),
              HasSubstr("1 stored value does not decode in " + backup +
                        "; the first: namespace 'forever' key 'bad\\x01'"));
}

// A database of the journal layout: its segments are what holds the records.
class JournalVerifyTest : public VerifyTest {
 protected:
  // kRecords records of ~1 KiB in several 64 KiB segments; the engine closed. Returns the
  // segment files, oldest first.
  std::vector<std::string> WriteJournalDatabase() {
    engine_.reset();
    testing::UseSmallJournal(&options_);
    Open();
    for (int i = 0; i < kRecords; ++i) {
      EXPECT_EQ("INSERTED",
                Insert("forever", "k" + std::to_string(i), "S", std::string(1000, 'p')));
    }
    engine_.reset();
    std::vector<std::string> segments;
    for (const auto& e : std::filesystem::directory_iterator(dir_.Sub("db/journal"))) {
      if (e.path().extension() == ".jnl") segments.push_back(e.path().string());
    }
    std::sort(segments.begin(), segments.end());
    return segments;
  }
};

TEST_F(JournalVerifyTest, ReadsEverySegmentAndChangesNothing) {
  const std::vector<std::string> segments = WriteJournalDatabase();
  ASSERT_GE(segments.size(), 3u);
  const testing::DirSnapshot before = testing::WithoutInfoLogs(testing::Snapshot(dir_.Sub("db")));
  auto report = VerifyDatabase(dir_.Sub("db"), options_);
  ASSERT_OK(report);
  EXPECT_EQ(uint64_t{kRecords}, report->records);
  EXPECT_EQ(segments.size(), report->journal_segments);
  EXPECT_GT(report->journal_bytes, uint64_t{kRecords} * 1000);
  EXPECT_EQ("", report->journal_torn_tail);
  // Saved at the close, and checked against the segments.
  EXPECT_TRUE(report->journal_index_saved);
  EXPECT_EQ(uint64_t{kRecords}, report->journal_index_records);
  EXPECT_EQ("", report->journal_index_unusable);
  EXPECT_EQ(before, testing::WithoutInfoLogs(testing::Snapshot(dir_.Sub("db"))));
}

// A saved index the next open would not load is no damage (that open replays the journal);
// one it would load that does not agree with the journal is: the open would miss records.
TEST_F(JournalVerifyTest, ChecksTheSavedIndexAgainstTheJournal) {
  WriteJournalDatabase();
  const std::string journal = dir_.Sub("db/journal");
  const std::string index = journal + "/" + journal::kSavedIndexName;
  const std::string saved = testing::ReadWholeFile(index);
  ASSERT_FALSE(saved.empty());
  std::filesystem::resize_file(index, saved.size() - 1);
  auto report = VerifyDatabase(dir_.Sub("db"), options_);
  ASSERT_OK(report);
  EXPECT_TRUE(report->journal_index_saved);
  EXPECT_THAT(report->journal_index_unusable, HasSubstr(index));
  EXPECT_EQ(saved.size() - 1, std::filesystem::file_size(index));

  // Emptied, its checksums made right: it reads back, and would lose every record.
  rocksdb::FileSystem* fs = rocksdb::FileSystem::Default().get();
  { std::ofstream(index, std::ios::binary | std::ios::trunc) << saved; }
  journal::JournalIndex entries;
  Result<std::optional<journal::SavedJournal>> read =
      journal::ReadSavedIndex(fs, journal, &entries);
  ASSERT_OK(read);
  ASSERT_TRUE(read->has_value());
  const std::vector<std::vector<uint64_t>> empty(journal::JournalIndex::kShards,
                                                 std::vector<uint64_t>(64, 0));
  ASSERT_OK(journal::WriteSavedIndex(fs, journal, **read, empty));
  report = VerifyDatabase(dir_.Sub("db"), options_);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(Status::Code::kCorruption, report.status().code());
  EXPECT_THAT(report.status().message(),
              HasSubstr(index + " does not agree with the journal: " + std::to_string(kRecords) +
                        " records of the journal are not in it"));

  std::filesystem::remove(index);
  report = VerifyDatabase(dir_.Sub("db"), options_);
  ASSERT_OK(report);
  EXPECT_FALSE(report->journal_index_saved);
}

// Values compressed with their segments' dictionaries are decompressed and decoded.
TEST_F(JournalVerifyTest, DecodesValuesCompressedWithTheirSegmentsDictionaries) {
  engine_.reset();
  testing::UseSmallJournal(&options_);
  options_.journal_dictionary_bytes = EngineOptions::kDefaultJournalDictionaryBytes;
  Open();
  constexpr int kCompressed = 3000;  // a dictionary is trained once 1,024 values were written
  for (int i = 0; i < kCompressed; ++i) {
    EXPECT_EQ("INSERTED", Insert("forever", "k" + std::to_string(i), "SUCCEEDED",
                                 "{\"order\":" + std::to_string(i) +
                                     ",\"state\":\"accepted for settlement\"}"));
  }
  engine_.reset();
  size_t with_dictionary = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_.Sub("db/journal"))) {
    with_dictionary += testing::ReadWholeFile(e.path().string())[8] == 3;  // format 3
  }
  EXPECT_GE(with_dictionary, 1u);
  auto report = VerifyDatabase(dir_.Sub("db"), options_);
  ASSERT_OK(report);
  EXPECT_EQ(uint64_t{kCompressed}, report->records);
}

TEST_F(JournalVerifyTest, FindsADamagedSegmentByItsFileAndOffset) {
  const std::vector<std::string> segments = WriteJournalDatabase();
  std::string bytes = testing::ReadWholeFile(segments[0]);
  const size_t at = bytes.find(std::string(64, 'p'), bytes.size() / 2);
  ASSERT_NE(std::string::npos, at);
  {
    std::fstream f(segments[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at));
    f.put('q');  // a record's payload, as a bad sector would change it
  }
  auto report = VerifyDatabase(dir_.Sub("db"), options_);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(Status::Code::kCorruption, report.status().code()) << report.status().ToString();
  EXPECT_THAT(report.status().message(), HasSubstr(segments[0]));
  EXPECT_THAT(report.status().message(), HasSubstr("To salvage what is readable: idemctl --data " +
                                                   dir_.Sub("db") + " repair"));
}

TEST_F(JournalVerifyTest, ReportsATornTailWithoutRepairingIt) {
  const std::vector<std::string> segments = WriteJournalDatabase();
  const std::string last = testing::ReadWholeFile(segments.back());
  const size_t end = (last.find_last_not_of('\0') / 8 + 1) * 8;  // the next entry's place
  {
    std::fstream f(segments.back(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(end));
    f.write("half an entry", 13);  // what a crash in the middle of a write leaves
  }
  const testing::DirSnapshot before = testing::WithoutInfoLogs(testing::Snapshot(dir_.Sub("db")));
  auto report = VerifyDatabase(dir_.Sub("db"), options_);
  ASSERT_OK(report);
  EXPECT_EQ(uint64_t{kRecords}, report->records);
  EXPECT_THAT(report->journal_torn_tail, HasSubstr("offset " + std::to_string(end)));
  EXPECT_EQ(before, testing::WithoutInfoLogs(testing::Snapshot(dir_.Sub("db"))));
}

// A database written under the expiry-window layout: the records of its `expires-<start>` family
// are read, decoded and counted with the rest, and its table files with the others.
TEST_F(VerifyTest, CountsTheRecordsOfEveryExpiryWindow) {
  const std::string db = dir_.Sub("windows");
  testing::WriteWindowDatabase(db, *MakeTunedRocksOptions(options_),
                               {.default_records = 3, .window_records = 2, .flush = true});
  auto report = VerifyDatabase(db, options_);
  ASSERT_OK(report);
  EXPECT_EQ(5u, report->records);
  EXPECT_EQ(1u, report->expiry_windows);
  EXPECT_EQ(testing::TableFiles(db).size(), report->table_files);
  EXPECT_EQ(2u, report->table_files);  // one per family
}

// A window's records still in the WAL are read too (a read-only open replays it per family).
TEST_F(VerifyTest, CountsWindowRecordsThatAreOnlyInTheWal) {
  const std::string db = dir_.Sub("windows");
  testing::WriteWindowDatabase(db, *MakeTunedRocksOptions(options_),
                               {.default_records = 1, .window_records = 4, .flush = false});
  auto report = VerifyDatabase(db, options_);
  ASSERT_OK(report);
  EXPECT_EQ(5u, report->records);
  EXPECT_EQ(0u, report->table_files);
}

// Writes `value` under `key` into the column family `family` of `db`, creating it.
void PutInFamily(const std::string& db, const EngineOptions& engine, const std::string& family,
                 const std::string& key, const std::string& value) {
  rocksdb::Options rocks = *MakeTunedRocksOptions(engine);
  rocks.create_if_missing = true;
  rocks.create_missing_column_families = true;
  std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(rocks)},
      {family, rocksdb::ColumnFamilyOptions(rocks)}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(rocks, db, families, &handles, &raw).ok());
  std::unique_ptr<rocksdb::DB> owned(raw);
  ASSERT_TRUE(owned->Put(rocksdb::WriteOptions(), handles[1], key, value).ok());
  for (auto* h : handles) ASSERT_TRUE(owned->DestroyColumnFamilyHandle(h).ok());
  ASSERT_TRUE(owned->Close().ok());
}

// A column family that is neither `default` nor a window: this build cannot tell what it holds.
TEST_F(VerifyTest, AnUnknownColumnFamilyIsCorruption) {
  const std::string db = dir_.Sub("unknown");
  PutInFamily(db, options_, "sessions", RecordKey("win", "k"), testing::WindowRecordValue(1));
  auto report = VerifyDatabase(db, options_);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(Status::Code::kCorruption, report.status().code()) << report.status().ToString();
  EXPECT_THAT(report.status().message(), HasSubstr("column family named 'sessions'"));
}

// A value in a window that does not decode is named with its family.
TEST_F(VerifyTest, FindsAWindowValueThatDoesNotDecode) {
  const std::string db = dir_.Sub("windows");
  PutInFamily(db, options_, testing::kWindowFamily, RecordKey("win", "bad"), "\x01zz");
  auto report = VerifyDatabase(db, options_);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(Status::Code::kCorruption, report.status().code());
  EXPECT_THAT(report.status().message(),
              HasSubstr("the first: namespace 'win' key 'bad' in column family expires-60000"));
}

// A record that never expires belongs in `default`, and meta keys too: found in a window, the
// layout's placement rule was broken.
TEST_F(VerifyTest, FindsARecordThatNeverExpiresInAWindow) {
  const std::string db = dir_.Sub("windows");
  Record forever;
  forever.status = "PAID";
  forever.version = 1;
  std::string value;
  EncodeRecord(forever, &value);
  PutInFamily(db, options_, testing::kWindowFamily, RecordKey("win", "forever"), value);
  auto report = VerifyDatabase(db, options_);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(Status::Code::kCorruption, report.status().code());
  EXPECT_THAT(report.status().message(), HasSubstr("never expires"));
}

TEST_F(VerifyTest, NoDatabaseIsNotFound) {
  EXPECT_EQ(Status::Code::kNotFound, VerifyDatabase(dir_.Sub("nothing"), options_).status().code());
}

}  // namespace
}  // namespace idem
