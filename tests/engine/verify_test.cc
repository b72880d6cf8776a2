// VerifyDatabase (idem/verify.h): counts what a sound backup holds, and finds a damaged table
// file or a value that does not decode.
#include "idem/verify.h"

#include <filesystem>

#include <gmock/gmock.h>
#include <rocksdb/db.h>

#include "key_codec.h"
#include "rocks_options.h"
#include "support/data_damage.h"
#include "support/engine_fixture.h"

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

TEST_F(VerifyTest, NoDatabaseIsNotFound) {
  EXPECT_EQ(Status::Code::kNotFound, VerifyDatabase(dir_.Sub("nothing"), options_).status().code());
}

}  // namespace
}  // namespace idem
