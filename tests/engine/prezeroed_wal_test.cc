// The pre-zeroed WAL (engine/src/prezeroed_wal.h): the data lands where RocksDB put it, zeros
// stay ahead of it and never over it, Close trims them, and a WAL whose tail is zeros — also
// after a torn last record — recovers every record written before.
#include "prezeroed_wal.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <rocksdb/file_system.h>

#include "idem/engine.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

using testing::TempDir;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Where `actual` first differs from `expected` over expected's length; npos if nowhere. (Comparing
// megabytes with EXPECT_EQ would print them.)
size_t FirstDifference(std::string_view expected, std::string_view actual) {
  if (actual.size() < expected.size()) return actual.size();
  auto [e, a] = std::mismatch(expected.begin(), expected.end(), actual.begin());
  return e == expected.end() ? std::string_view::npos : static_cast<size_t>(e - expected.begin());
}

// The file holds exactly `expected`: no byte different, none more.
void ExpectFileHolds(const std::string& path, std::string_view expected) {
  std::string actual = ReadFile(path);
  EXPECT_EQ(std::string::npos, FirstDifference(expected, actual)) << path;
  EXPECT_EQ(expected.size(), actual.size()) << path;
}

bool AllZero(std::string_view bytes) {
  return bytes.find_first_not_of('\0') == std::string_view::npos;
}

// Distinct bytes per record, never zero: a record overwritten by zeros cannot go unnoticed.
std::string Record(size_t i, size_t size) {
  std::string r(size, '\0');
  for (size_t j = 0; j < size; ++j) r[j] = static_cast<char>(1 + (i * 131 + j) % 255);
  return r;
}

struct WalUnderTest {
  std::shared_ptr<rocksdb::FileSystem> fs;
  std::unique_ptr<rocksdb::FSWritableFile> file;
  std::string path;
};

WalUnderTest OpenWal(const TempDir& dir, const std::string& name, uint64_t chunk) {
  WalUnderTest w;
  w.fs = NewPrezeroedWalFileSystem(rocksdb::FileSystem::Default(), chunk);
  w.path = dir.Sub(name);
  rocksdb::IOStatus s = w.fs->NewWritableFile(w.path, rocksdb::FileOptions(), &w.file, nullptr);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return w;
}

TEST(PrezeroedWalTest, RecognizesRocksDbWalNames) {
  EXPECT_TRUE(IsWalFileName("000012.log"));
  EXPECT_TRUE(IsWalFileName("/data/db/000012.log"));
  EXPECT_FALSE(IsWalFileName("/data/db/LOG"));
  EXPECT_FALSE(IsWalFileName("/data/db/LOG.old.1732912345"));
  EXPECT_FALSE(IsWalFileName("/data/db/MANIFEST-000005"));
  EXPECT_FALSE(IsWalFileName("/data/db/x1.log"));
  EXPECT_FALSE(IsWalFileName("/data/db/.log"));
  EXPECT_FALSE(IsWalFileName("/data/000012.log/OPTIONS-000007"));
}

TEST(PrezeroedWalTest, DataStaysWhereAppendedZerosFollowAndCloseTrimsThem) {
  TempDir dir;
  constexpr uint64_t kChunk = 64 * 1024;
  WalUnderTest w = OpenWal(dir, "000007.log", kChunk);
  rocksdb::IOOptions io;
  std::string written;
  bool saw_zeros_ahead = false;
  for (size_t i = 0; i < 200; ++i) {  // ~600 KiB: several chunks, synced every few records
    std::string r = Record(i, 1000 + i * 17 % 5000);
    ASSERT_TRUE(w.file->Append(r, io, nullptr).ok());
    written += r;
    if (i % 3 != 0) continue;
    ASSERT_TRUE(w.file->Sync(io, nullptr).ok());
    std::string on_disk = ReadFile(w.path);
    ASSERT_EQ(std::string::npos, FirstDifference(written, on_disk)) << "record " << i;
    ASSERT_TRUE(AllZero(std::string_view(on_disk).substr(written.size())));
    saw_zeros_ahead |= on_disk.size() >= written.size() + kChunk / 2;
  }
  EXPECT_TRUE(saw_zeros_ahead);
  ASSERT_TRUE(w.file->Close(io, nullptr).ok());
  ExpectFileHolds(w.path, written);
}

TEST(PrezeroedWalTest, OtherFilesAreLeftAlone) {
  TempDir dir;
  WalUnderTest w = OpenWal(dir, "MANIFEST-000001", 64 * 1024);
  rocksdb::IOOptions io;
  std::string r = Record(1, 100 * 1024);
  ASSERT_TRUE(w.file->Append(r, io, nullptr).ok());
  ASSERT_TRUE(w.file->Sync(io, nullptr).ok());
  ASSERT_TRUE(w.file->Sync(io, nullptr).ok());
  ExpectFileHolds(w.path, r);
}

// RocksDB syncs a WAL on one thread while another appends to it: zeros must never land on data.
TEST(PrezeroedWalTest, SyncsConcurrentWithAppendsNeverZeroData) {
  TempDir dir;
  WalUnderTest w = OpenWal(dir, "000009.log", 16 * 1024);  // small chunks: many extensions
  rocksdb::IOOptions io;
  std::atomic<bool> done{false};
  std::atomic<int> syncs{0};
  std::thread syncer([&] {
    while (!done.load()) {
      EXPECT_TRUE(w.file->Sync(io, nullptr).ok());
      syncs.fetch_add(1);
    }
  });
  // Append until the syncer has synced (and so zeroed) many times over.
  std::string written;
  for (size_t i = 0; syncs.load() < 100 && written.size() < (64u << 20); ++i) {
    std::string r = Record(i, 50 + i % 700);
    if (!w.file->Append(r, io, nullptr).ok()) {
      ADD_FAILURE() << "append " << i;
      break;
    }
    written += r;
  }
  done = true;
  syncer.join();
  ASSERT_GE(syncs.load(), 100);
  EXPECT_EQ(std::string::npos, FirstDifference(written, ReadFile(w.path)));
  ASSERT_TRUE(w.file->Close(io, nullptr).ok());
  ExpectFileHolds(w.path, written);
}

// --- Recovery: crash images of a live sync-mode engine, whose WAL ends in zeros ---

std::string OnlyWal(const std::string& db) {
  std::string wal;
  for (const auto& e : std::filesystem::directory_iterator(db)) {
    if (IsWalFileName(e.path().string())) {
      EXPECT_TRUE(wal.empty()) << "more than one WAL in " << db;
      wal = e.path().string();
    }
  }
  return wal;
}

// Copies the database while `engine` is open and idle: what a power cut would leave, since
// every acknowledged write was fsynced.
void CopyCrashImage(const std::string& from, const std::string& to) {
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
  std::filesystem::remove(to + "/LOCK");
}

class PrezeroedWalRecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.durability = Durability::kSync;
    options_.reclaim_interval_ms = 0;
    options_.wal_prezero_chunk_bytes = 64 * 1024;
  }
  // Inserts records 0..n-1 with payloads of `size` bytes.
  void InsertAll(Engine& e, int from, int n, size_t size) {
    for (int i = from; i < from + n; ++i) {
      auto r = e.Insert({.ns = "wal",
                         .key = "k" + std::to_string(i),
                         .status = "DONE",
                         .payload = Record(i, size)});
      ASSERT_TRUE(r.ok() && r->outcome == Outcome::kInserted) << i;
    }
  }
  // Opens `db` and counts which of records 0..n-1 are there, each with its payload.
  int CountRecovered(const std::string& db, int n, size_t size) {
    auto e = Engine::Open(db, options_);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok()) return -1;
    int found = 0;
    for (int i = 0; i < n; ++i) {
      auto r = (*e)->Get({.ns = "wal", .key = "k" + std::to_string(i)});
      EXPECT_TRUE(r.ok());
      if (r.ok() && r->outcome == Outcome::kFound) {
        EXPECT_EQ(Record(i, size), r->record->payload) << i;
        ++found;
      }
    }
    return found;
  }

  void ExpectTornLastRecordLosesOnlyItself(size_t last_size, size_t torn_bytes);

  TempDir dir_;
  EngineOptions options_;
};

TEST_F(PrezeroedWalRecoveryTest, WalEndingInZerosRecoversEveryRecord) {
  const std::string db = dir_.Sub("db");
  auto engine = Engine::Open(db, options_);
  ASSERT_TRUE(engine.ok());
  InsertAll(**engine, 0, 600, 300);  // ~200 KiB of WAL: past the first extensions
  std::string wal = ReadFile(OnlyWal(db));
  size_t data_end = wal.find_last_not_of('\0') + 1;
  ASSERT_GT(wal.size() - data_end, 16 * 1024u) << "the live WAL should end in zeros";
  CopyCrashImage(db, dir_.Sub("image"));
  EXPECT_EQ(600, CountRecovered(dir_.Sub("image"), 600, 300));
  // And the image keeps working: it takes writes and recovers them again.
  {
    auto reopened = Engine::Open(dir_.Sub("image"), options_);
    ASSERT_TRUE(reopened.ok());
    InsertAll(**reopened, 600, 100, 300);
  }
  EXPECT_EQ(700, CountRecovered(dir_.Sub("image"), 700, 300));
}

// A power cut in the middle of the last write: the last `torn_bytes` of its record never reached
// the disk, and zeros (written ahead) are there instead. Recovery stops at the torn record
// (point-in-time), with every record before it.
void PrezeroedWalRecoveryTest::ExpectTornLastRecordLosesOnlyItself(size_t last_size,
                                                                   size_t torn_bytes) {
  const std::string db = dir_.Sub("db");
  auto engine = Engine::Open(db, options_);
  ASSERT_TRUE(engine.ok());
  InsertAll(**engine, 0, 400, 300);
  InsertAll(**engine, 400, 1, last_size);
  CopyCrashImage(db, dir_.Sub("image"));
  const std::string wal_path = OnlyWal(dir_.Sub("image"));
  std::string wal = ReadFile(wal_path);
  size_t data_end = wal.find_last_not_of('\0') + 1;
  ASSERT_LT(data_end, wal.size());
  {
    std::fstream f(wal_path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(data_end - torn_bytes));
    std::string zeros(torn_bytes, '\0');
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  EXPECT_EQ(400, CountRecovered(dir_.Sub("image"), 400, 300));
  auto e = Engine::Open(dir_.Sub("image"), options_);
  ASSERT_TRUE(e.ok());
  auto last = (*e)->Get({.ns = "wal", .key = "k400"});
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(Outcome::kNotFound, last->outcome);
}

// Within one of the log's 32 KiB blocks: the record's checksum fails.
TEST_F(PrezeroedWalRecoveryTest, TornLastRecordFollowedByZerosRecoversTheRecordsBefore) {
  ExpectTornLastRecordLosesOnlyItself(300, 100);
}

// Across blocks: the record's second fragment is zeros (or fails its checksum).
TEST_F(PrezeroedWalRecoveryTest, TornFragmentedLastRecordRecoversTheRecordsBefore) {
  ExpectTornLastRecordLosesOnlyItself(40'000, 20'000);
}

TEST_F(PrezeroedWalRecoveryTest, OffMeansAPlainWal) {
  options_.wal_prezero_chunk_bytes = 0;
  const std::string db = dir_.Sub("db");
  auto engine = Engine::Open(db, options_);
  ASSERT_TRUE(engine.ok());
  InsertAll(**engine, 0, 600, 300);
  std::string wal = ReadFile(OnlyWal(db));
  EXPECT_LT(wal.size() - (wal.find_last_not_of('\0') + 1), 16u);
}

}  // namespace
}  // namespace idem
