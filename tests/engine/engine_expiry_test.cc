// Expiry: enforced on every read before compaction, physically reclaimed by the compaction
// filter (checked in RocksDB itself), and by the statistics-driven reclaimer. Time only moves
// through the ManualClock: nothing here sleeps to wait for expiry.
#include <chrono>
#include <thread>

#include <rocksdb/db.h>

#include "expiry_stats.h"
#include "key_codec.h"
#include "support/engine_fixture.h"

namespace idem {
namespace {

using testing::EngineTest;
using testing::Name;

// Record keys physically present in the database at `path` (the engine must be closed, or
// `read_only` used on a live one).
size_t RawRecordCount(const std::string& path) {
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(rocksdb::Options(), path, &raw);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return 0;
  std::unique_ptr<rocksdb::DB> db(raw);
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  size_t n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (!IsMetaKey(std::string_view(it->key().data(), it->key().size()))) ++n;
  }
  return n;
}

TEST_F(EngineTest, ExpiredRecordIsAbsentForEveryOperationBeforeAnyCompaction) {
  ASSERT_EQ("INSERTED", Insert("x", "k", "PENDING", "old", "", 1000));
  clock_->Advance(999);
  EXPECT_EQ("FOUND", Get("x", "k"));
  clock_->Advance(1);  // exactly at expires_at: gone
  EXPECT_EQ("NOT_FOUND", Get("x", "k"));
  EXPECT_EQ("NOT_FOUND",
            Name(engine().CompareAndSet({.ns = "x", .key = "k", .update = {"S", {}, {}}})));
  EXPECT_EQ("NOT_FOUND", Name(engine().Delete({.ns = "x", .key = "k"})));
  auto again = engine().Insert({.ns = "x", .key = "k", .status = "NEW"});
  ASSERT_OK(again);
  EXPECT_EQ(Outcome::kInserted, again->outcome);  // a new life, not EXISTS
  EXPECT_EQ(1u, again->record->version);
  EXPECT_EQ("", again->record->payload);
}

TEST_F(EngineTest, ExpiryIsCheckedInsideBatchesToo) {
  ASSERT_EQ("INSERTED", Insert("x", "k", "S", "", "", 1000));
  clock_->Advance(1000);
  std::vector<Op> ops = {Op::Get({.ns = "x", .key = "k"}),
                         Op::Insert({.ns = "x", .key = "k", .status = "S"})};
  std::vector<Result<OpResult>> results;
  ASSERT_TRUE(engine().Apply(ops, &results).ok());
  EXPECT_EQ("NOT_FOUND", Name(results[0]));
  EXPECT_EQ("INSERTED", Name(results[1]));
}

TEST_F(EngineTest, ExpiredRecordsStayAbsentAcrossReopen) {
  ASSERT_EQ("INSERTED", Insert("x", "k", "S", "", "", 1000));
  clock_->Advance(5000);
  Reopen();
  EXPECT_EQ("NOT_FOUND", Get("x", "k"));
}

// EngineOptions::rocksdb_options tunes RocksDB; it must not switch expiry reclaim off.
TEST_F(EngineTest, RocksDbOptionsCannotReplaceTheExpiryCompactionFilter) {
  engine_.reset();
  options_.rocksdb_options = "compaction_filter_factory=nullptr";
  Open();
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ("INSERTED", Insert("x", "short" + std::to_string(i), "S", "", "", 1000));
  }
  ASSERT_EQ("INSERTED", Insert("x", "long", "S", "", "", 10 * kHour));
  clock_->Advance(1000);
  ASSERT_TRUE(engine().CompactAll().ok());
  engine_.reset();
  EXPECT_EQ(1u, RawRecordCount(dir_.Sub("db")));  // only "long" is left
}

TEST_F(EngineTest, CompactionPhysicallyRemovesOnlyExpiredRecords) {
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ("INSERTED", Insert("x", "short" + std::to_string(i), "S", "", "", 1000));
    ASSERT_EQ("INSERTED", Insert("x", "long" + std::to_string(i), "S", "", "", 10 * kHour));
  }
  ASSERT_EQ("INSERTED", Insert("forever", "k", "S", "", "", kForever));
  ASSERT_TRUE(engine().CompactAll().ok());
  engine_.reset();
  EXPECT_EQ(401u, RawRecordCount(dir_.Sub("db")));  // nothing expired yet: nothing removed
  Open();
  clock_->Advance(1000);
  ASSERT_TRUE(engine().CompactAll().ok());
  engine_.reset();
  EXPECT_EQ(201u, RawRecordCount(dir_.Sub("db")));
  Open();
  EXPECT_EQ("FOUND", Get("x", "long7"));
  EXPECT_EQ("FOUND", Get("forever", "k"));
  // The fence reservation (a meta key) survived compaction: fences keep increasing.
  auto r = engine().Insert({.ns = "x", .key = "after", .status = "S"});
  ASSERT_OK(r);
  EXPECT_GT(r->record->fence, 401u);
}

TEST_F(EngineTest, CompactionKeepsUndecodableValues) {
  engine_.reset();
  {
    rocksdb::DB* raw = nullptr;
    rocksdb::Options o;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_.Sub("db"), &raw).ok());
    ASSERT_TRUE(raw->Put(rocksdb::WriteOptions(), RecordKey("x", "bad"), "junk").ok());
    delete raw;
  }
  Open();
  clock_->Advance(365LL * 24 * kHour);
  ASSERT_TRUE(engine().CompactAll().ok());
  EXPECT_EQ("CORRUPTION", Get("x", "bad"));
}

TEST_F(EngineTest, ReclaimerCompactsOnlyFilesThatAreMostlyExpired) {
  for (int i = 0; i < 300; ++i) {
    ASSERT_EQ("INSERTED", Insert("x", "k" + std::to_string(i), "S", "", "", 1000));
  }
  ASSERT_TRUE(engine().Flush().ok());
  auto before = engine().ReclaimExpired();
  ASSERT_OK(before);
  EXPECT_GE(before->files_examined, 1u);
  EXPECT_EQ(0u, before->files_compacted);  // nothing expired yet

  clock_->Advance(1000);
  auto after = engine().ReclaimExpired();
  ASSERT_OK(after);
  EXPECT_GE(after->files_compacted, 1u);
  engine_.reset();
  EXPECT_EQ(0u, RawRecordCount(dir_.Sub("db")));
}

TEST_F(EngineTest, BackgroundReclaimerRemovesExpiredDataWithoutNewWrites) {
  options_.reclaim_interval_ms = 10;
  Reopen();
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ("INSERTED", Insert("x", "k" + std::to_string(i), "S", "", "", 1000));
  }
  ASSERT_TRUE(engine().Flush().ok());
  clock_->Advance(1000);
  // No more writes: only the background thread can reclaim. Poll RocksDB itself, with a deadline.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  size_t count = RawRecordCount(dir_.Sub("db"));
  while (count > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    count = RawRecordCount(dir_.Sub("db"));
  }
  EXPECT_EQ(0u, count);
}

TEST_F(EngineTest, StatsAccountForFlushesCompactionsAndDroppedRecords) {
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ("INSERTED",
              Insert("x", "k" + std::to_string(i), "S", std::string(100, 'p'), "", 1000));
  }
  ASSERT_TRUE(engine().Flush().ok());
  clock_->Advance(1000);
  ASSERT_TRUE(engine().CompactAll().ok());
  auto stats = engine().Stats();
  ASSERT_OK(stats);
  EXPECT_GT(stats->user_bytes_written, 100u * 100);
  EXPECT_GT(stats->flush_bytes_written, 0u);
  EXPECT_GE(stats->compactions, 1u);
  EXPECT_GT(stats->compaction_bytes_read, 0u);
  EXPECT_GE(stats->records_dropped_by_compaction, 100u);
  // Only the fence reservation (a meta key) is left on disk.
  EXPECT_LT(stats->live_sst_bytes, stats->flush_bytes_written / 2);
}

// With BlobDB (EngineOptions::rocksdb_options "enable_blob_files=true"), a flush writes the
// values to blob files and only keys and references to the table file: the bytes written, and
// so write amplification, count both kinds of file.
TEST_F(EngineTest, StatsCountBlobFilesInTheBytesFlushesWrite) {
  options_.rocksdb_options = "enable_blob_files=true;min_blob_size=0";
  Reopen();
  uint64_t x = 1;
  for (int i = 0; i < 100; ++i) {
    std::string payload(1000, ' ');  // letters in no pattern: nothing compresses them
    for (char& c : payload)
      c = static_cast<char>('A' + ((x = x * 6364136223846793005ULL + 1) >> 59));
    ASSERT_EQ("INSERTED", Insert("x", "k" + std::to_string(i), "S", payload, "", 60'000));
  }
  ASSERT_TRUE(engine().Flush().ok());
  auto stats = engine().Stats();
  ASSERT_OK(stats);
  EXPECT_GT(stats->user_bytes_written, 100u * 1000);
  EXPECT_LT(stats->sst_bytes, 100u * 1000 / 2) << "the values went to a blob file";
  EXPECT_GE(stats->flush_bytes_written, stats->user_bytes_written);
}

TEST_F(EngineTest, StatsEstimateExpiredRecordsCompactionHasNotRemovedYet) {
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ("INSERTED", Insert("x", "k" + std::to_string(i), "S", "", "", 1000));
  }
  ASSERT_TRUE(engine().Flush().ok());
  auto stats = engine().Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(0u, stats->expired_unreclaimed_records);  // none expired yet
  clock_->Advance(1000);
  stats = engine().Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(100u, stats->expired_unreclaimed_records);  // all expired, still on disk
  ASSERT_TRUE(engine().CompactAll().ok());
  stats = engine().Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(0u, stats->expired_unreclaimed_records);  // reclaimed
}

TEST_F(EngineTest, WaitForBackgroundWorkReturnsOnceRocksDbIsIdle) {
  options_.write_buffer_bytes = 64 << 10;  // tiny memtables: writes trigger flushes and compactions
  Reopen();
  for (int i = 0; i < 3000; ++i) {
    ASSERT_EQ("INSERTED", Insert("x", "k" + std::to_string(i), "S", std::string(100, 'p')));
  }
  ASSERT_TRUE(engine().WaitForBackgroundWork(60'000).ok());
  auto stats = engine().Stats();
  ASSERT_OK(stats);
  EXPECT_GT(stats->flush_bytes_written, 0u);
  // Idle now: a second wait returns at once, and nothing was left half-done.
  ASSERT_TRUE(engine().WaitForBackgroundWork(0).ok());
}

TEST(ExpiryStats, EstimatesTheExpiredFraction) {
  ExpiryStats stats;
  stats.records = 200;
  stats.records_expiring = 100;  // the other half never expires
  for (int i = 0; i < 64; ++i) stats.samples.push_back(i * 10);
  EXPECT_DOUBLE_EQ(0.0, stats.ExpiredFraction(-1));
  EXPECT_DOUBLE_EQ(0.25, stats.ExpiredFraction(315));  // 32 of 64 samples, times half
  EXPECT_DOUBLE_EQ(0.5, stats.ExpiredFraction(10'000));
  auto decoded = ExpiryStats::Decode(stats.Encode());
  ASSERT_TRUE(decoded);
  EXPECT_EQ(stats.samples, decoded->samples);
  EXPECT_EQ(200u, decoded->records);
  EXPECT_FALSE(ExpiryStats::Decode("\x05").has_value());
}

}  // namespace
}  // namespace idem
