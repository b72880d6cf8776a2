// Online backups (idem/backup.h): taken while writers write, restored by opening the directory,
// and fences that never go backwards across a restore.
#include "idem/backup.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>
#include <vector>

#include <gmock/gmock.h>

#include "column_families.h"
#include "engine_open.h"
#include "idem/verify.h"
#include "online_backup.h"
#include "rocks_options.h"
#include "support/acknowledged_writers.h"
#include "support/engine_fixture.h"
#include "support/fault_injection_fs.h"
#include "support/window_families.h"

namespace idem {
namespace {

using testing::EngineTest;
using testing::FaultInjectionFs;
using ::testing::HasSubstr;
using testing::Name;

class BackupTest : public EngineTest {
 protected:
  Result<OpResult> Do(const Op& op) { return engine().Execute(op); }
  uint64_t Started(ServingEngine& engine, std::string_view key) {
    auto r = engine.Execute(Op::Begin({.ns = "pay", .key = key, .fingerprint = "fp"}));
    EXPECT_TRUE(r.ok() && r->outcome == Outcome::kStarted) << Name(r);
    return r.ok() && r->record ? r->record->fence : 0;
  }
  std::unique_ptr<ServingEngine> OpenRestored(const std::string& dir) {
    auto restored = ServingEngine::Open(dir, options_);
    EXPECT_TRUE(restored.ok()) << restored.status().ToString();
    return restored.ok() ? std::move(*restored) : nullptr;
  }
};

using Layout = EngineOptions::Layout;

// Under the journal layout, with segments small enough that the records written fill several.
void UseLayout(Layout layout, EngineOptions* options) {
  if (layout == Layout::kJournal) testing::UseSmallJournal(options);
}
// The tests every layout must pass.
class BackupLayoutTest : public BackupTest, public ::testing::WithParamInterface<Layout> {
 protected:
  BackupLayoutTest() { UseLayout(GetParam(), &options_); }
};

struct WritesCase {
  Durability durability;
  Layout layout;
};
void PrintTo(const WritesCase& c, std::ostream* os) {
  *os << DurabilityName(c.durability) << testing::LayoutName(c.layout);
}

class BackupUnderWritesTest : public BackupTest, public ::testing::WithParamInterface<WritesCase> {
 protected:
  BackupUnderWritesTest() {
    options_.durability = GetParam().durability;
    UseLayout(GetParam().layout, &options_);
  }
};

TEST_P(BackupUnderWritesTest, HoldsEveryRecordAcknowledgedBeforeItBegan) {
  constexpr int kWriters = 4;
  testing::AcknowledgedWriters writers(kWriters, "forever", [this](int) {
    return std::shared_ptr<Store>(&engine(), [](Store*) {});  // the fixture owns the engine
  });
  writers.WaitForTotal(2000);
  const std::vector<int> before = writers.Acknowledged();
  auto manifest = engine().Backup(dir_.Sub("backup"));
  writers.Stop();
  ASSERT_OK(manifest);

  engine_.reset();  // the restored store must not depend on the source
  auto restored = OpenRestored(dir_.Sub("backup"));
  ASSERT_NE(nullptr, restored);
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < before[w]; ++i) {
      const std::string key = testing::AcknowledgedWriters::Key(w, i);
      auto r = restored->Get({.ns = "forever", .key = key});
      ASSERT_TRUE(r.ok() && r->outcome == Outcome::kFound)
          << key << " was acknowledged before the backup began: " << Name(r);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BackupUnderWritesTest,
                         ::testing::Values(WritesCase{Durability::kSync, Layout::kLeveled},
                                           WritesCase{Durability::kAsync, Layout::kLeveled},
                                           WritesCase{Durability::kSync, Layout::kJournal},
                                           WritesCase{Durability::kAsync, Layout::kJournal}),
                         [](const ::testing::TestParamInfo<WritesCase>& p) {
                           return std::string(DurabilityName(p.param.durability)) +
                                  testing::LayoutName(p.param.layout);
                         });

TEST_P(BackupLayoutTest, RestoredStoreServesTheRecordsAsTheyWere) {
  EXPECT_EQ("INSERTED", Insert("forever", "a", "PENDING", "payload-a"));
  EXPECT_EQ("INSERTED", Insert("forever", "b", "DONE"));
  ASSERT_OK(engine().Backup(dir_.Sub("backup")));
  EXPECT_EQ("INSERTED", Insert("forever", "after"));  // not in the backup

  auto restored = OpenRestored(dir_.Sub("backup"));
  ASSERT_NE(nullptr, restored);
  auto a = restored->Get({.ns = "forever", .key = "a"});
  ASSERT_TRUE(a.ok() && a->record) << Name(a);
  EXPECT_EQ("PENDING", a->record->status);
  EXPECT_EQ("payload-a", a->record->payload);
  EXPECT_EQ("FOUND", Name(restored->Get({.ns = "forever", .key = "b"})));
  EXPECT_EQ("NOT_FOUND", Name(restored->Get({.ns = "forever", .key = "after"})));
  // The restored store takes writes, and the source is untouched by them.
  EXPECT_EQ("INSERTED",
            Name(restored->Insert({.ns = "forever", .key = "new", .status = "PENDING"})));
  EXPECT_EQ("NOT_FOUND", Get("forever", "new"));
}

TEST_P(BackupLayoutTest, ManifestRecordsTheBackup) {
  clock_->Advance(365 * 24 * kHour);
  for (int i = 0; i < 10; ++i) EXPECT_EQ("INSERTED", Insert("forever", "k" + std::to_string(i)));
  Started(engine(), "job");
  const uint64_t next_fence = engine().Stats()->next_fence;
  auto returned = engine().Backup(dir_.Sub("backup"));
  ASSERT_OK(returned);
  auto manifest = ReadBackupManifest(dir_.Sub("backup"));
  ASSERT_OK(manifest);
  EXPECT_EQ(clock_->NowMillis(), manifest->created_ms);
  EXPECT_EQ(16u, manifest->created_utc.size()) << manifest->created_utc;  // YYYYMMDDTHHMMSSZ
  EXPECT_FALSE(manifest->idemstore_version.empty());
  EXPECT_EQ(next_fence, manifest->fence_high_water);
  EXPECT_EQ(next_fence + kBackupFenceMargin, manifest->fence_floor);
  EXPECT_GE(manifest->estimated_records, 11u);
  EXPECT_EQ(returned->fence_floor, manifest->fence_floor);
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("backup.incomplete")));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("backup.incomplete.journal")));
}

// A holder that began after the backup may still present its fence to the restored store; a
// fence handed out again there would let a stale holder pass the fencing check.
TEST_P(BackupLayoutTest, RestoredStoreNeverHandsOutAFenceTheSourceHandedOut) {
  uint64_t highest = Started(engine(), "before");
  auto manifest = engine().Backup(dir_.Sub("backup"));
  ASSERT_OK(manifest);
  EXPECT_GT(manifest->fence_high_water, highest);
  // The source goes on: more fences, and a restart (which skips the rest of its reservation).
  for (int i = 0; i < 100; ++i)
    highest = std::max(highest, Started(engine(), "after-" + std::to_string(i)));
  Reopen();
  for (int i = 0; i < 100; ++i)
    highest = std::max(highest, Started(engine(), "again-" + std::to_string(i)));
  ASSERT_LT(highest, manifest->fence_floor) << "the source went past the margin";

  auto restored = OpenRestored(dir_.Sub("backup"));
  ASSERT_NE(nullptr, restored);
  const uint64_t first = Started(*restored, "restored");
  EXPECT_GT(first, highest);
  EXPECT_GE(first, manifest->fence_floor);
  // The manifest stays in the directory; reopening does not move fences back to its floor.
  restored.reset();
  restored = OpenRestored(dir_.Sub("backup"));
  ASSERT_NE(nullptr, restored);
  EXPECT_GT(Started(*restored, "reopened"), first);
}

INSTANTIATE_TEST_SUITE_P(Layouts, BackupLayoutTest,
                         ::testing::Values(Layout::kLeveled, Layout::kJournal),
                         [](const ::testing::TestParamInfo<Layout>& p) {
                           return testing::LayoutName(p.param);
                         });

class BackupJournalTest : public BackupTest {
 protected:
  BackupJournalTest() { UseLayout(Layout::kJournal, &options_); }
  uint64_t Segments(ServingEngine& engine) {
    Result<StoreStats> stats = engine.Stats();
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    return stats.ok() ? stats->journal_segments : 0;
  }
};

// The backup copies the journal's segments as they stand after drops (numbered with a gap):
// every one of them, and the records of each.
TEST_F(BackupJournalTest, HoldsEverySegmentLeftAfterDropsAndTheirRecords) {
  const std::string kilobyte(1000, 'p');
  for (int i = 0; i < 150; ++i) {
    ASSERT_EQ("INSERTED", Insert("short", "s" + std::to_string(i), "S", kilobyte));  // 1 s
  }
  clock_->Advance(1000);  // every "short" record is dead (the grace is 0 here)
  Result<ReclaimReport> reclaimed = engine().ReclaimExpired();
  ASSERT_OK(reclaimed);
  ASSERT_GE(reclaimed->journal_segments_dropped, 2u);
  for (int i = 0; i < 150; ++i) {
    ASSERT_EQ("INSERTED", Insert("forever", "f" + std::to_string(i), "S", kilobyte));
  }
  const uint64_t segments = Segments(engine());
  ASSERT_GE(segments, 3u);
  ASSERT_OK(engine().Backup(dir_.Sub("backup")));
  ASSERT_TRUE(std::filesystem::is_directory(dir_.Sub("backup/journal")));

  engine_.reset();  // the restored store must not depend on the source
  auto restored = OpenRestored(dir_.Sub("backup"));
  ASSERT_NE(nullptr, restored);
  for (int i = 0; i < 150; ++i) {
    auto f = restored->Get({.ns = "forever", .key = "f" + std::to_string(i)});
    ASSERT_TRUE(f.ok() && f->record) << i << ": " << Name(f);
    EXPECT_EQ(kilobyte, f->record->payload);
    EXPECT_EQ("NOT_FOUND", Name(restored->Get({.ns = "short", .key = "s" + std::to_string(i)})));
  }
  Result<StoreStats> stats = restored->Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(150u, stats->estimated_live_records);
  EXPECT_EQ(segments, stats->journal_segments);
}

TEST_F(BackupTest, RefusesADirectoryWhoseParentDoesNotExist) {
  auto r = engine().Backup(dir_.Sub("no-such-parent/backup"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(Status::Code::kInvalidArgument, r.status().code()) << r.status().ToString();
  EXPECT_THAT(r.status().message(), HasSubstr("parent"));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("no-such-parent")));
}

// The backup directory on another file system (/dev/shm, a tmpfs): the table files are copied,
// not linked, and the copy restores.
TEST_F(BackupTest, CopiesTableFilesToAnotherFileSystem) {
  struct stat db_stat {
  }, shm_stat{};
  if (::stat(dir_.path().c_str(), &db_stat) != 0 || ::stat("/dev/shm", &shm_stat) != 0 ||
      db_stat.st_dev == shm_stat.st_dev) {
    GTEST_SKIP() << "no /dev/shm on another file system than " << dir_.path();
  }
  std::string other = "/dev/shm/idem-backup-XXXXXX";
  ASSERT_NE(nullptr, ::mkdtemp(other.data()));
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{other};
  for (int i = 0; i < 20; ++i) EXPECT_EQ("INSERTED", Insert("forever", "k" + std::to_string(i)));
  ASSERT_OK(engine().Flush());  // a table file to link or copy
  auto manifest = engine().Backup(other + "/backup");
  ASSERT_OK(manifest);

  std::vector<std::string> tables;
  for (const auto& e : std::filesystem::directory_iterator(other + "/backup")) {
    if (e.path().extension() == ".sst") tables.push_back(e.path().string());
  }
  ASSERT_FALSE(tables.empty());
  for (const std::string& t : tables) {
    EXPECT_EQ(1u, std::filesystem::hard_link_count(t)) << t << " is not a copy";
  }
  auto restored = OpenRestored(other + "/backup");
  ASSERT_NE(nullptr, restored);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ("FOUND", Name(restored->Get({.ns = "forever", .key = "k" + std::to_string(i)})));
  }
}

// Backups written through a file system that fails on demand (a full disk).
class BackupFaultTest : public BackupTest {
 protected:
  BackupFaultTest() : fs_(std::make_shared<FaultInjectionFs>()) {}
  void SetUp() override {
    auto engine = OpenEngineOnFileSystem(dir_.Sub("db"), options_, fs_);
    ASSERT_OK(engine);
    engine_ = std::move(*engine);
  }
  // Nothing of a failed backup into `backup` is left: neither it nor what staged it.
  static void ExpectNothingLeftOf(const std::string& backup) {
    for (const std::string& left : {backup, backup + ".incomplete", backup + ".incomplete.tmp",
                                    backup + ".incomplete.journal"}) {
      EXPECT_FALSE(std::filesystem::exists(left)) << left << " was left behind";
    }
  }
  std::shared_ptr<FaultInjectionFs> fs_;
};

class BackupFaultLayoutTest : public BackupFaultTest, public ::testing::WithParamInterface<Layout> {
 protected:
  BackupFaultLayoutTest() { UseLayout(GetParam(), &options_); }
};

// The disk fills while RocksDB writes the checkpoint (its CURRENT, its copy of the WAL), while
// the journal is copied, or while the manifest is written: a clear error, nothing left behind,
// the store goes on serving and the next backup into the same directory succeeds.
TEST_P(BackupFaultLayoutTest, ADiskFullMidBackupLeavesNothingAndTheStoreServesOn) {
  EXPECT_EQ("INSERTED", Insert("forever", "before"));
  const std::string backup = dir_.Sub("backup");
  // The checkpoint's scratch directory, the journal's copy and the staging directory the
  // manifest goes into.
  std::vector<std::string> fills = {backup + ".incomplete.tmp/", backup + ".incomplete/"};
  if (GetParam() == Layout::kJournal) fills.push_back(backup + ".incomplete.journal/");
  for (const std::string& full : fills) {
    SCOPED_TRACE(full);
    fs_->FailWritesUnder(full, FaultInjectionFs::Fault::kNoSpace);
    auto r = engine().Backup(backup);
    fs_->ClearAll();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(Status::Code::kIOError, r.status().code()) << r.status().ToString();
    EXPECT_THAT(r.status().message(), HasSubstr("No space left"));
    ExpectNothingLeftOf(backup);
    EXPECT_TRUE(engine().WriteReadiness().ok());
    EXPECT_EQ("INSERTED", Insert("forever", "during-" + std::to_string(fs_->injected())));
  }
  EXPECT_GT(fs_->injected(), 1);
  ASSERT_OK(engine().Backup(backup));
  auto restored = OpenRestored(backup);
  ASSERT_NE(nullptr, restored);
  EXPECT_EQ("FOUND", Name(restored->Get({.ns = "forever", .key = "before"})));
}

// A rename or a directory sync fails at each step that stages or publishes the backup: the
// journal's copy moved into the checkpoint, the staging directory's entries synced, the staging
// directory renamed to its name, and that name synced into the parent (after which the complete
// backup is removed again: its name might not survive a crash). A clear error, nothing left
// behind, and the next backup into the same directory succeeds.
TEST_P(BackupFaultLayoutTest, AFailedRenameOrDirectorySyncLeavesNothing) {
  EXPECT_EQ("INSERTED", Insert("forever", "before"));
  const std::string backup = dir_.Sub("backup");
  const std::string staging = backup + ".incomplete";
  struct Step {
    std::string rename_of, sync_of;
  };
  std::vector<Step> steps = {{staging, ""}, {"", staging}, {"", dir_.path()}};
  if (GetParam() == Layout::kJournal) steps.push_back({backup + ".incomplete.journal", ""});
  for (const Step& step : steps) {
    SCOPED_TRACE("rename of '" + step.rename_of + "', sync of '" + step.sync_of + "'");
    const int injected = fs_->injected();
    fs_->FailRenamesOf(step.rename_of);
    fs_->FailDirectorySyncsOf(step.sync_of);
    auto r = engine().Backup(backup);
    fs_->ClearAll();
    EXPECT_GT(fs_->injected(), injected) << "the fault was not reached";
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(Status::Code::kIOError, r.status().code()) << r.status().ToString();
    EXPECT_THAT(r.status().message(), HasSubstr("Input/output error"));
    ExpectNothingLeftOf(backup);
    EXPECT_EQ("INSERTED", Insert("forever", "during-" + std::to_string(fs_->injected())));
  }
  ASSERT_OK(engine().Backup(backup));
  auto restored = OpenRestored(backup);
  ASSERT_NE(nullptr, restored);
  EXPECT_EQ("FOUND", Name(restored->Get({.ns = "forever", .key = "before"})));
}

INSTANTIATE_TEST_SUITE_P(Layouts, BackupFaultLayoutTest,
                         ::testing::Values(Layout::kLeveled, Layout::kJournal),
                         [](const ::testing::TestParamInfo<Layout>& p) {
                           return testing::LayoutName(p.param);
                         });

// A second backup while one is being taken is refused (Busy), whatever its directory: two
// checkpoints into one directory would share RocksDB's scratch directory and clear each other's
// files. The first completes, whole.
TEST_F(BackupFaultTest, OneBackupAtATime) {
  for (int i = 0; i < 20; ++i) EXPECT_EQ("INSERTED", Insert("forever", "k" + std::to_string(i)));
  const std::string backup = dir_.Sub("backup");
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> held{false};
  fs_->OnCreate([&](const std::string& name) {  // holds the first backup inside its checkpoint
    if (name.rfind(backup + ".incomplete.tmp/", 0) == 0 && !held.exchange(true)) {
      entered.set_value();
      released.wait();
    }
  });
  auto first = std::async(std::launch::async, [&] { return engine().Backup(backup); });
  entered.get_future().wait();
  for (const std::string& dir : {backup, dir_.Sub("other")}) {
    auto second = engine().Backup(dir);
    EXPECT_FALSE(second.ok()) << dir;  // not ASSERT: the first backup must be released below
    if (second.ok()) continue;
    EXPECT_EQ(Status::Code::kBusy, second.status().code()) << second.status().ToString();
    EXPECT_THAT(second.status().message(), HasSubstr("another backup"));
  }
  EXPECT_EQ("INSERTED", Insert("forever", "while-backing-up"));
  release.set_value();
  ASSERT_OK(first.get());
  fs_->OnCreate(nullptr);
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("other")));
  EngineOptions verify_options;
  auto report = VerifyDatabase(backup, verify_options);
  ASSERT_OK(report);
  EXPECT_EQ(20u, report->records);
}

TEST_F(BackupTest, RefusesAnExistingDirectory) {
  std::filesystem::create_directories(dir_.Sub("taken"));
  auto r = engine().Backup(dir_.Sub("taken"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(Status::Code::kInvalidArgument, r.status().code());
  EXPECT_THAT(r.status().message(), HasSubstr("already exists"));
  for (const char* left : {"half.incomplete", "half.incomplete.journal"}) {
    SCOPED_TRACE(left);
    std::filesystem::create_directories(dir_.Sub(left));
    r = engine().Backup(dir_.Sub("half"));
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("did not finish"));
    EXPECT_FALSE(std::filesystem::exists(dir_.Sub("half")));
    std::filesystem::remove_all(dir_.Sub(left));
  }
}

TEST_F(BackupTest, ADirectoryWithAnUnreadableManifestIsNotOpened) {
  ASSERT_OK(engine().Backup(dir_.Sub("backup")));
  std::ofstream(dir_.Sub("backup") + "/" + kBackupManifestFile, std::ios::trunc)
      << "idemstore-backup 1\nfence_floor twelve\n";
  auto restored = ServingEngine::Open(dir_.Sub("backup"), options_);
  ASSERT_FALSE(restored.ok());
  EXPECT_EQ(Status::Code::kCorruption, restored.status().code());
  EXPECT_THAT(restored.status().message(), HasSubstr("fence_floor"));
}

// A database with an expiry-window column family, its records still in the memtables: the
// backup holds that family's records too (the checkpoint flushes every family), they verify,
// and the manifest's estimate counts every family.
TEST(BackupWindowsTest, HoldsAndCountsTheRecordsOfEveryExpiryWindow) {
  testing::TempDir dir;
  EngineOptions options;
  options.clock = std::make_shared<ManualClock>();
  rocksdb::Options rocks = *MakeTunedRocksOptions(options);
  const std::string source = dir.Sub("db"), backup = dir.Sub("backup");
  testing::WriteWindowDatabase(source, rocks,
                               {.default_records = 3, .window_records = 2, .flush = false});
  {
    auto db = OpenAllFamilies(rocks, rocks, source, OpenMode::kReadWrite);
    ASSERT_OK(db);
    auto manifest = WriteBackup((*db)->db(), nullptr, backup, [] { return uint64_t{200}; }, 1'000);
    ASSERT_OK(manifest);
    EXPECT_EQ(5u, manifest->estimated_records);
    ASSERT_OK((*db)->Close());
  }
  auto report = VerifyDatabase(backup, options);
  ASSERT_OK(report);
  EXPECT_EQ(5u, report->records);
  EXPECT_EQ(1u, report->expiry_windows);
  EXPECT_EQ(2u, report->table_files) << "each family's memtable was flushed";
  ASSERT_TRUE(report->manifest.has_value());
  EXPECT_EQ(5u, report->manifest->estimated_records);

  auto restored = OpenAllFamilies(rocks, rocks, backup, OpenMode::kReadOnly);
  ASSERT_OK(restored);
  ASSERT_EQ((std::vector<std::string>{"default", testing::kWindowFamily}), (*restored)->names());
  for (int w = 0; w < 2; ++w) {
    std::string value;
    ASSERT_TRUE((*restored)
                    ->db()
                    ->Get(rocksdb::ReadOptions(), (*restored)->handles()[1],
                          RecordKey("win", "w" + std::to_string(w)), &value)
                    .ok());
    EXPECT_EQ(testing::WindowRecordValue(100 + w), value);
  }
}

TEST(BackupManifestTest, RoundTripsAndIgnoresLinesItDoesNotKnow) {
  BackupManifest m;
  m.created_ms = 1796179500000;
  m.created_utc = "20261202T024500Z";
  m.idemstore_version = "0.1.0";
  m.fence_high_water = 131072;
  m.fence_floor = 131072 + kBackupFenceMargin;
  m.estimated_records = 5000;
  auto decoded = DecodeBackupManifest(EncodeBackupManifest(m) + "written_by_later 7\n");
  ASSERT_OK(decoded);
  EXPECT_EQ(m.created_ms, decoded->created_ms);
  EXPECT_EQ(m.created_utc, decoded->created_utc);
  EXPECT_EQ(m.idemstore_version, decoded->idemstore_version);
  EXPECT_EQ(m.fence_high_water, decoded->fence_high_water);
  EXPECT_EQ(m.fence_floor, decoded->fence_floor);
  EXPECT_EQ(m.estimated_records, decoded->estimated_records);
}

TEST(BackupManifestTest, RefusesWhatItCannotTrust) {
  EXPECT_EQ(Status::Code::kCorruption, DecodeBackupManifest("").status().code());
  EXPECT_THAT(DecodeBackupManifest("idemstore-backup 2\nfence_floor 5\n").status().message(),
              HasSubstr("format 2"));
  EXPECT_THAT(DecodeBackupManifest("fence_floor 5\n").status().message(),
              HasSubstr("idemstore-backup"));
  EXPECT_THAT(DecodeBackupManifest("idemstore-backup 1\n").status().message(),
              HasSubstr("no fence_floor"));
}

}  // namespace
}  // namespace idem
