// The hash memtable (engine/src/hash_memtable.h) under RocksDB itself: what a Get, a snapshot, an
// iterator, a flush and a log replay return must be what RocksDB's own skiplist would return.
#include "hash_memtable.h"

#include <atomic>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "idem/clock.h"
#include "idem/options.h"
#include "rocks_options.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

class HashMemtableTest : public ::testing::Test {
 protected:
  // The engine's own RocksDB options (hash memtable, bloom, LZ4), with a small write buffer so
  // a few thousand writes go through several memtables and flushes.
  rocksdb::Options Options(size_t write_buffer_bytes = 256 << 10) {
    EngineOptions engine;
    engine.clock = SystemClock::Default();
    engine.write_buffer_bytes = write_buffer_bytes;
    rocksdb::Options o = MakeRocksOptions(engine);
    EXPECT_NE(nullptr, dynamic_cast<HashMemTableRepFactory*>(o.memtable_factory.get()));
    return o;
  }

  void Open(const rocksdb::Options& options) {
    db_.reset();
    rocksdb::DB* db = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(options, dir_.Sub("db"), &db);
    ASSERT_TRUE(s.ok()) << s.ToString();
    db_.reset(db);
  }

  std::string Get(const std::string& key, const rocksdb::Snapshot* snapshot = nullptr) {
    rocksdb::ReadOptions read;
    read.snapshot = snapshot;
    std::string value;
    rocksdb::Status s = db_->Get(read, key, &value);
    if (s.IsNotFound()) return "<absent>";
    EXPECT_TRUE(s.ok()) << s.ToString();
    return value;
  }

  uint64_t Property(const std::string& name) {
    std::string value;
    EXPECT_TRUE(db_->GetProperty(name, &value)) << name;
    return value.empty() ? 0 : std::stoull(value);
  }

  // Everything the database holds, in its iteration order.
  std::vector<std::pair<std::string, std::string>> Scan() {
    std::vector<std::pair<std::string, std::string>> out;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      out.emplace_back(it->key().ToString(), it->value().ToString());
    }
    EXPECT_TRUE(it->status().ok()) << it->status().ToString();
    return out;
  }

  testing::TempDir dir_;
  std::unique_ptr<rocksdb::DB> db_;
};

// Keys built to defeat the ordering shortcut: shared prefixes longer than its 32 bytes, keys
// that are prefixes of others, embedded and trailing zero bytes, the empty key, 0xff bytes.
std::string TrickyKey(std::mt19937_64& rng) {
  static const std::vector<std::string> stems = {"",
                                                 "a",
                                                 std::string(1, '\0'),
                                                 std::string("ab\0", 3),
                                                 "ab",
                                                 std::string(40, 'p'),
                                                 "\x01payments",
                                                 std::string(8, '\xff'),
                                                 "order-"};
  std::string key = stems[rng() % stems.size()];
  size_t tail = rng() % 12;
  for (size_t i = 0; i < tail; ++i) key.push_back(static_cast<char>("\0\x01z\xff"[rng() % 4]));
  return key;
}

TEST_F(HashMemtableTest, GetsAndScansMatchAModelThroughOverwritesDeletesAndFlushes) {
  Open(Options());
  std::mt19937_64 rng(20261129);
  std::map<std::string, std::string> model;
  for (int i = 0; i < 20'000; ++i) {
    std::string key = TrickyKey(rng);
    if (rng() % 5 == 0) {
      ASSERT_TRUE(db_->Delete(rocksdb::WriteOptions(), key).ok());
      model.erase(key);
    } else {
      std::string value = "v" + std::to_string(i) + std::string(rng() % 300, 'x');
      ASSERT_TRUE(db_->Put(rocksdb::WriteOptions(), key, value).ok());
      model[key] = value;
    }
    if (i % 997 == 0) {  // reads reach the active memtable, immutable ones and table files
      std::string probe = TrickyKey(rng);
      auto m = model.find(probe);
      ASSERT_EQ(m == model.end() ? "<absent>" : m->second, Get(probe)) << i;
    }
  }
  std::vector<std::pair<std::string, std::string>> expected(model.begin(), model.end());
  EXPECT_EQ(expected, Scan());  // the live memtable's sorted snapshot merged with the files
  ASSERT_TRUE(db_->Flush(rocksdb::FlushOptions()).ok());
  EXPECT_EQ(expected, Scan());  // every entry came out of a flush in order
  for (const auto& [key, value] : model) ASSERT_EQ(value, Get(key));
}

TEST_F(HashMemtableTest, ASnapshotReadsTheVersionOfItsTimeAndAKeysVersionsStayApart) {
  Open(Options(64 << 20));  // everything below stays in one memtable
  ASSERT_TRUE(db_->Put(rocksdb::WriteOptions(), "k", "v1").ok());
  const rocksdb::Snapshot* at_v1 = db_->GetSnapshot();
  ASSERT_TRUE(db_->Put(rocksdb::WriteOptions(), "k", "v2").ok());
  const rocksdb::Snapshot* at_v2 = db_->GetSnapshot();
  ASSERT_TRUE(db_->Delete(rocksdb::WriteOptions(), "k").ok());
  // One batch writing the same key twice: the later write wins.
  rocksdb::WriteBatch batch;
  ASSERT_TRUE(batch.Put("twice", "first").ok());
  ASSERT_TRUE(batch.Put("twice", "second").ok());
  ASSERT_TRUE(db_->Write(rocksdb::WriteOptions(), &batch).ok());

  EXPECT_EQ("v1", Get("k", at_v1));
  EXPECT_EQ("v2", Get("k", at_v2));
  EXPECT_EQ("<absent>", Get("k"));
  EXPECT_EQ("second", Get("twice"));
  EXPECT_EQ("<absent>", Get("twice", at_v2));
  ASSERT_TRUE(db_->Flush(rocksdb::FlushOptions()).ok());  // a flush keeps what snapshots need
  EXPECT_EQ("v1", Get("k", at_v1));
  EXPECT_EQ("v2", Get("k", at_v2));
  EXPECT_EQ("<absent>", Get("k"));
  EXPECT_EQ("second", Get("twice"));
  db_->ReleaseSnapshot(at_v1);
  db_->ReleaseSnapshot(at_v2);
}

TEST_F(HashMemtableTest, ReopeningReplaysTheLogIntoTheHashMemtable) {
  rocksdb::Options options = Options(64 << 20);
  options.avoid_flush_during_recovery = true;  // so the reads below are served by the memtable
  Open(options);
  for (int i = 0; i < 5'000; ++i) {
    ASSERT_TRUE(db_->Put(rocksdb::WriteOptions(), "key" + std::to_string(i * 7919 % 10'007),
                         "v" + std::to_string(i))
                    .ok());
  }
  const auto before = Scan();
  Open(options);  // closing does not flush: the reopened memtable is rebuilt from the log
  ASSERT_EQ(5'000u, Property("rocksdb.num-entries-active-mem-table"));
  ASSERT_EQ(0u, Property("rocksdb.num-files-at-level0"));
  EXPECT_EQ(before, Scan());
  EXPECT_EQ("v4999", Get("key" + std::to_string(4'999 * 7919 % 10'007)));
}

// Seeks in both directions and a reverse scan, served by the live memtable's sorted snapshot
// (RocksDB seeks the memtables, e.g., before compacting a key range).
TEST_F(HashMemtableTest, SeeksAndAReverseScanOfTheLiveMemtableMatchAModel) {
  Open(Options(64 << 20));
  std::mt19937_64 rng(7);
  std::map<std::string, std::string> model;
  for (int i = 0; i < 3'000; ++i) {
    std::string key = TrickyKey(rng);
    ASSERT_TRUE(db_->Put(rocksdb::WriteOptions(), key, "v" + std::to_string(i)).ok());
    model[key] = "v" + std::to_string(i);
  }
  ASSERT_EQ(0u, Property("rocksdb.num-files-at-level0"));
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  std::vector<std::string> reversed, expected;
  for (it->SeekToLast(); it->Valid(); it->Prev()) reversed.push_back(it->key().ToString());
  for (auto m = model.rbegin(); m != model.rend(); ++m) expected.push_back(m->first);
  EXPECT_EQ(expected, reversed);
  for (int i = 0; i < 500; ++i) {
    const std::string target = TrickyKey(rng);
    auto at_or_after = model.lower_bound(target);
    it->Seek(target);
    ASSERT_EQ(at_or_after != model.end(), it->Valid());
    if (it->Valid()) {
      ASSERT_EQ(at_or_after->first, it->key().ToString());
    }
    auto after = model.upper_bound(target);
    it->SeekForPrev(target);
    ASSERT_EQ(after != model.begin(), it->Valid());
    if (it->Valid()) {
      ASSERT_EQ(std::prev(after)->first, it->key().ToString());
    }
  }
}

// RocksDB's in-memory purge rewrites a memtable's live entries into a new one, newest versions
// first, so a key's chain ends up oldest first: Get must still answer newest first, and a
// snapshot must still see its own version. (Also exercises UniqueRandomSample, which the purge
// uses to decide.)
TEST_F(HashMemtableTest, AChainHoldingOlderVersionsFirstStillAnswersNewestFirst) {
  rocksdb::Options options = Options(256 << 10);
  options.experimental_mempurge_threshold = 10.0;  // purge in memory instead of flushing
  Open(options);
  for (int k = 0; k < 10; ++k) {
    ASSERT_TRUE(db_->Put(rocksdb::WriteOptions(), "k" + std::to_string(k), "A").ok());
  }
  const rocksdb::Snapshot* at_a = db_->GetSnapshot();
  for (int k = 0; k < 10; ++k) {
    ASSERT_TRUE(db_->Put(rocksdb::WriteOptions(), "k" + std::to_string(k), "B").ok());
  }
  // Overwrite one key until the memtable fills and is purged rather than flushed.
  for (int i = 0; i < 20'000; ++i) {
    ASSERT_TRUE(db_->Put(rocksdb::WriteOptions(), "filler", std::string(100, 'f')).ok());
  }
  ASSERT_TRUE(db_->Put(rocksdb::WriteOptions(), "last", "x").ok());
  ASSERT_EQ(0u, Property("rocksdb.num-files-at-level0"));  // purged, not flushed
  ASSERT_GE(Property("rocksdb.num-immutable-mem-table"), 1u);
  for (int k = 0; k < 10; ++k) {
    EXPECT_EQ("B", Get("k" + std::to_string(k)));
    EXPECT_EQ("A", Get("k" + std::to_string(k), at_a));
  }
  db_->ReleaseSnapshot(at_a);
}

// One writer, readers racing it: every write a reader has seen acknowledged is found, with
// the value written last before the acknowledgement or a later one. (On x86-64 a release store
// compiles like a relaxed one, so a weakened memory order would pass here; only a
// ThreadSanitizer build or a weakly ordered CPU would show it. What this catches is a reader
// missing a published entry: a lost or half-linked node.)
// RocksDB makes a memtable for a column family as soon as the previous one is switched out, and
// many sit empty (a family per expiry window): until its first write, a memtable holds no bucket
// array, and still answers every lookup, scan and flush as the empty memtable it is.
TEST_F(HashMemtableTest, AMemtableBeforeItsFirstWriteTakesNoBucketsAndReadsAsEmpty) {
  constexpr size_t kWriteBuffer = 16 << 20;
  constexpr uint64_t kBuckets = kWriteBuffer / 16;  // HashMemTableBucketsFor: 8 bytes per 128
  rocksdb::Options options = Options(kWriteBuffer);
  options.memtable_prefix_bloom_size_ratio = 0;  // every lookup reaches the memtable itself
  Open(options);
  EXPECT_LT(Property("rocksdb.cur-size-all-mem-tables"), kBuckets / 4);
  EXPECT_EQ("<absent>", Get("k"));
  EXPECT_TRUE(Scan().empty());
  ASSERT_TRUE(db_->Flush(rocksdb::FlushOptions()).ok());

  ASSERT_TRUE(db_->Put(rocksdb::WriteOptions(), "k", "v").ok());
  EXPECT_GE(Property("rocksdb.cur-size-all-mem-tables"), kBuckets);
  ASSERT_TRUE(db_->Flush(rocksdb::FlushOptions()).ok());  // a new, empty memtable
  EXPECT_LT(Property("rocksdb.cur-size-all-mem-tables"), kBuckets / 4);
  EXPECT_EQ("v", Get("k"));
  EXPECT_EQ("<absent>", Get("other"));
  EXPECT_EQ((std::vector<std::pair<std::string, std::string>>{{"k", "v"}}), Scan());
}

TEST_F(HashMemtableTest, ReadersRacingTheWriterFindEveryAcknowledgedWrite) {
  Open(Options(1 << 20));  // small memtables: readers also race flushes
  constexpr int kKeys = 30'000;
  std::atomic<int> acknowledged{-1};
  std::atomic<bool> failed{false};
  std::thread writer([&] {
    for (int i = 0; i < kKeys; ++i) {
      if (!db_->Put(rocksdb::WriteOptions(), "key" + std::to_string(i), std::to_string(i)).ok()) {
        failed = true;
      }
      acknowledged.store(i, std::memory_order_release);
    }
  });
  std::vector<std::thread> readers;
  std::atomic<long> reads{0};
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&, r] {
      std::mt19937 rng(r);
      while (acknowledged.load(std::memory_order_acquire) < kKeys - 1 && !failed) {
        int last = acknowledged.load(std::memory_order_acquire);
        if (last < 0) continue;
        int i = static_cast<int>(rng() % (last + 1));
        std::string value;
        rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), "key" + std::to_string(i), &value);
        if (!s.ok() || value != std::to_string(i)) failed = true;
        ++reads;
      }
    });
  }
  writer.join();
  for (auto& t : readers) t.join();
  EXPECT_FALSE(failed);
  EXPECT_GT(reads.load(), 1000);
}

}  // namespace
}  // namespace idem
