// The WAL scan (engine/src/wal_scan.h) on logs built byte by byte: what it calls intact, a torn
// tail, a file cut short and damage that readable records follow, and how it counts what the
// damage destroyed. (data_damage_test covers WALs RocksDB wrote.)
#include "wal_scan.h"

#include <array>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include "crc32c.h"
#include "data_dir_check.h"
#include "support/data_damage.h"
#include "support/temp_dir.h"
#include "support/window_families.h"

namespace idem {
namespace {

constexpr size_t kBlock = 32 * 1024;

void PutFixed(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// Writes logical records as RocksDB's log::Writer does: fragments within 32 KiB blocks, a block's
// last < 7 bytes zero-padded. Each record is a WriteBatch header (sequence, count) and filler.
class LogBuilder {
 public:
  // Appends a batch of `count` operations starting at `sequence`, `size` bytes in all.
  void Batch(uint64_t sequence, uint32_t count, size_t size) {
    std::string payload;
    PutFixed(&payload, sequence, 8);
    PutFixed(&payload, count, 4);
    payload.resize(std::max<size_t>(size, 12), static_cast<char>('a' + sequence % 26));
    starts_.push_back(bytes_.size());
    bool first = true;
    std::string_view left = payload;
    do {
      size_t room = kBlock - bytes_.size() % kBlock;
      if (room < 7) {
        bytes_.append(room, '\0');
        room = kBlock;
      }
      const size_t n = std::min(left.size(), room - 7);
      const bool last = n == left.size();
      const uint8_t type = first && last ? 1 : first ? 2 : last ? 4 : 3;
      std::string body(1, static_cast<char>(type));
      body.append(left.substr(0, n));
      const uint32_t crc = Crc32c(body);
      const uint32_t masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
      PutFixed(&bytes_, masked, 4);
      PutFixed(&bytes_, n, 2);
      bytes_.append(body);
      left.remove_prefix(n);
      first = false;
    } while (!left.empty());
  }
  void Zeros(size_t n) { bytes_.append(n, '\0'); }

  std::string& bytes() { return bytes_; }
  size_t start(size_t record) const { return starts_[record]; }

 private:
  std::string bytes_;
  std::vector<size_t> starts_;
};

class WalScanTest : public ::testing::Test {
 protected:
  // Ten batches of 10 operations, ~9 KiB each: several blocks, most records fragmented.
  void SetUp() override {
    for (uint64_t i = 0; i < 10; ++i) log_.Batch(1 + 10 * i, 10, 9000);
  }
  WalScan Scan() {
    const std::string path = dir_.Sub("000007.log");
    std::ofstream(path, std::ios::binary) << log_.bytes();
    Result<WalScan> scan = ScanWal(path);
    EXPECT_TRUE(scan.ok()) << scan.status().ToString();
    return scan.ok() ? *scan : WalScan{};
  }

  testing::TempDir dir_;
  LogBuilder log_;
};

// WALs oldest first, by number: 1000000.log after 999999.log, although it sorts first as a
// string; other files are not WALs.
TEST(ListWalsTest, ListsWalsByNumber) {
  testing::TempDir dir;
  for (const char* name : {"1000000.log", "999999.log", "000010.log", "LOG", "x.log", "CURRENT"}) {
    std::ofstream(dir.Sub(name)) << "";
  }
  Result<std::vector<std::string>> wals = ListWals(dir.path());
  ASSERT_TRUE(wals.ok()) << wals.status().ToString();
  EXPECT_EQ((std::vector<std::string>{dir.Sub("000010.log"), dir.Sub("999999.log"),
                                      dir.Sub("1000000.log")}),
            *wals);
  EXPECT_TRUE(ListWals(dir.Sub("missing")).status().IsIOError());
}

TEST_F(WalScanTest, AWholeLogIsIntact) {
  WalScan scan = Scan();
  EXPECT_FALSE(scan.damage);
  EXPECT_EQ(10u, scan.records);
  EXPECT_EQ(1u, scan.first_sequence);
  EXPECT_EQ(101u, scan.next_sequence);
  EXPECT_EQ(log_.bytes().size(), scan.intact_bytes);
}

TEST_F(WalScanTest, ZerosAfterTheLastRecordAreItsEnd) {
  log_.Zeros(100'000);  // the prezeroed WAL's tail
  WalScan scan = Scan();
  EXPECT_FALSE(scan.damage);
  EXPECT_EQ(10u, scan.records);
}

TEST_F(WalScanTest, ALastRecordTornIntoZerosIsATailNotACut) {
  const size_t end = log_.bytes().size();
  log_.Zeros(100'000);
  std::fill(log_.bytes().begin() + static_cast<std::ptrdiff_t>(end - 3000),
            log_.bytes().begin() + static_cast<std::ptrdiff_t>(end), '\0');
  WalScan scan = Scan();
  ASSERT_TRUE(scan.damage);
  EXPECT_TRUE(scan.TailOnly());
  EXPECT_FALSE(scan.ends_inside_record);
  EXPECT_EQ(log_.start(9), scan.damage->offset);
  EXPECT_EQ(9u, scan.records);
}

TEST_F(WalScanTest, AFileCutInsideARecordEndsInsideIt) {
  log_.bytes().resize(log_.start(6) + 5000);
  WalScan scan = Scan();
  ASSERT_TRUE(scan.damage);
  EXPECT_TRUE(scan.TailOnly());
  EXPECT_TRUE(scan.ends_inside_record);
  EXPECT_EQ(log_.start(6), scan.damage->offset);
  EXPECT_EQ(61u, scan.next_sequence);
}

TEST_F(WalScanTest, AFileCutAtABlockBoundaryInsideARecordEndsInsideIt) {
  log_.bytes().resize(2 * kBlock);  // record 7 spans it: cut between its fragments
  WalScan scan = Scan();
  ASSERT_TRUE(scan.damage);
  EXPECT_TRUE(scan.ends_inside_record);
}

TEST_F(WalScanTest, GarbledBytesWithRecordsAfterThemAreDamageAndTheGapIsCounted) {
  for (size_t i = 0; i < 16; ++i) log_.bytes()[log_.start(4) + 2000 + i] ^= 0x5a;
  WalScan scan = Scan();
  ASSERT_TRUE(scan.damage);
  EXPECT_EQ("checksum mismatch", scan.damage->what);
  EXPECT_EQ(log_.start(4), scan.damage->offset);
  EXPECT_FALSE(scan.TailOnly());
  EXPECT_EQ(4u, scan.records);
  EXPECT_EQ(41u, scan.next_sequence);
  // Recovery resumes at the first whole record after the damaged block.
  EXPECT_GT(scan.resume_sequence, 41u);
  EXPECT_EQ(1u, scan.resume_sequence % 10) << "a batch's first sequence number";
  EXPECT_EQ(10u - (scan.resume_sequence - 1) / 10, scan.records_after_damage);
}

TEST_F(WalScanTest, AZeroedBlockWithRecordsAfterItIsDamage) {
  const size_t block = kBlock;  // the second block; records follow in the third
  std::fill(log_.bytes().begin() + static_cast<std::ptrdiff_t>(block),
            log_.bytes().begin() + static_cast<std::ptrdiff_t>(block + kBlock), '\0');
  WalScan scan = Scan();
  ASSERT_TRUE(scan.damage);
  EXPECT_FALSE(scan.TailOnly());
}

TEST_F(WalScanTest, AnEmptyFileIsIntact) {
  log_.bytes().clear();
  WalScan scan = Scan();
  EXPECT_FALSE(scan.damage);
  EXPECT_EQ(0u, scan.records);
}

// A WAL RocksDB wrote for a database with an expiry-window column family: batches that put to
// and delete from the window (PutCF/DeleteCF, a column family id other than 0) beside the
// default family, one of them longer than a block. Each batch is one record, its operations
// count in the sequence numbers whatever their family, those on the window are counted, and the
// engine's pre-open check passes.
TEST(WalScanWindowsTest, ReadsBatchesThatWriteAnExpiryWindow) {
  testing::TempDir dir;
  const std::string db = dir.Sub("db");
  rocksdb::Options options;
  options.create_if_missing = true;
  options.create_missing_column_families = true;
  std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(options)},
      {testing::kWindowFamily, rocksdb::ColumnFamilyOptions(options)}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(options, db, families, &handles, &raw).ok());
  std::unique_ptr<rocksdb::DB> rocks(raw);
  rocksdb::ColumnFamilyHandle* window = handles[1];
  const std::string key = RecordKey("win", "k");
  rocksdb::WriteBatch put;  // sequence 1, 2
  ASSERT_TRUE(put.Put(window, key, testing::WindowRecordValue(1)).ok());
  ASSERT_TRUE(put.Put(RecordKey("win", "d"), std::string(40'000, 'p')).ok());
  rocksdb::WriteBatch move;  // 3, 4, 5: out of the window, into default
  ASSERT_TRUE(move.Delete(window, key).ok());
  ASSERT_TRUE(move.Put(key, "v").ok());
  ASSERT_TRUE(move.Put(window, RecordKey("win", "k2"), testing::WindowRecordValue(2)).ok());
  for (rocksdb::WriteBatch* batch : {&put, &move}) {
    ASSERT_TRUE(rocks->Write(rocksdb::WriteOptions(), batch).ok());
  }
  for (auto* h : handles) ASSERT_TRUE(rocks->DestroyColumnFamilyHandle(h).ok());
  ASSERT_TRUE(rocks->Close().ok());
  rocks.reset();

  const std::vector<std::string> wals = testing::WalFiles(db);
  ASSERT_EQ(1u, wals.size());
  Result<WalScan> scan = ScanWal(wals[0]);
  ASSERT_TRUE(scan.ok()) << scan.status().ToString();
  EXPECT_FALSE(scan->damage);
  EXPECT_EQ(2u, scan->records);
  EXPECT_EQ(1u, scan->first_sequence);
  EXPECT_EQ(6u, scan->next_sequence);
  EXPECT_EQ(scan->file_bytes, scan->intact_bytes);
  EXPECT_EQ(3u, scan->other_family_operations);  // PutCF; DeleteCF, PutCF
  EXPECT_TRUE(CheckDataDirectory(db, EngineOptions()).ok());
}

}  // namespace
}  // namespace idem
