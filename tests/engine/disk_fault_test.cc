// A failing disk under the engine: ENOSPC and EIO injected underneath RocksDB (a FileSystem
// wrapper), with Debian's librocksdb, whose assertions are on. The contract for every fault:
// - the process does not abort, and no call hangs;
// - a refused write is answered IO_ERROR with a message naming the cause;
// - reads keep working;
// - once the fault clears, writes work again within a bounded time, without a restart;
// - every acknowledged write is there afterwards, also after reopening.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <rocksdb/env.h>

#include "engine_open.h"
#include "idem/engine.h"
#include "idem/serving.h"
#include "support/fault_injection_fs.h"
#include "support/outcome_name.h"
#include "support/temp_dir.h"
#include "write_health.h"

namespace idem {
namespace {

using testing::FaultInjectionFs;
using Fault = FaultInjectionFs::Fault;
using testing::Name;

constexpr auto kRecoveryBound = std::chrono::seconds(10);

// Makes every table file RocksDB creates take 200 ms more to write, and counts them: a flush
// still running when a call returns is seen as a table begun and not written.
class SlowTableFiles {
 public:
  explicit SlowTableFiles(FaultInjectionFs& fs) : fs_(fs) {
    fs_.OnCreate([this](const std::string& name) {
      if (name.size() < 4 || name.compare(name.size() - 4, 4, ".sst") != 0) return;
      ++begun_;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ++written_;
    });
  }
  ~SlowTableFiles() { fs_.OnCreate(nullptr); }
  int begun() const { return begun_.load(); }
  int written() const { return written_.load(); }

 private:
  FaultInjectionFs& fs_;
  std::atomic<int> begun_{0};
  std::atomic<int> written_{0};
};

class DiskFaultTest : public ::testing::TestWithParam<Durability> {
 protected:
  DiskFaultTest() : fs_(std::make_shared<FaultInjectionFs>()) {
    options_.durability = GetParam();
    options_.reclaim_interval_ms = 0;
    options_.log = [this](const LogRecord& record) {
      std::lock_guard<std::mutex> lock(mu_);
      log_.emplace_back(record.event + " " + record.message);
    };
  }
  void SetUp() override { ASSERT_OK(Open()); }
  ~DiskFaultTest() override { engine_.reset(); }

  Status Open() {
    auto engine = OpenEngineOnFileSystem(dir_.Sub("db"), options_, fs_);
    if (!engine.ok()) return engine.status();
    engine_ = std::move(*engine);
    return Status::Ok();
  }
  void Reopen() {
    engine_.reset();
    ASSERT_OK(Open());
  }

  // Inserts `key`; an acknowledged insert is remembered, to be checked at the end.
  Result<OpResult> Insert(const std::string& key) {
    Result<OpResult> r = engine_->Insert({.ns = "pay", .key = key, .status = "PENDING"});
    if (r.ok() && r->outcome == Outcome::kInserted) acknowledged_.push_back(key);
    return r;
  }
  std::string Get(const std::string& key) { return Name(engine_->Get({.ns = "pay", .key = key})); }

  // Polls with inserts (the way a client would retry) until one is acknowledged.
  ::testing::AssertionResult WaitUntilWritable() {
    const auto deadline = std::chrono::steady_clock::now() + kRecoveryBound;
    Result<OpResult> last = Status::IOError("no insert tried");
    for (int i = 0; std::chrono::steady_clock::now() < deadline; ++i) {
      last = Insert("probe-" + std::to_string(i));
      if (Name(last) == "INSERTED") return ::testing::AssertionSuccess();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return ::testing::AssertionFailure() << "still refused after " << kRecoveryBound.count()
                                         << " s: " << last.status().ToString() << "\nlog:\n"
                                         << LogText();
  }
  std::string LogText() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string text;
    for (const std::string& line : log_) text += "  " + line + "\n";
    return text;
  }
  void ExpectEveryAcknowledgedRecord() {
    for (const std::string& key : acknowledged_) EXPECT_EQ("FOUND", Get(key)) << key;
  }
  bool Logged(std::string_view text) { return LoggedTimes(text) > 0; }
  // Log records (event, then message) that contain `text`.
  int LoggedTimes(std::string_view text) {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(std::count_if(log_.begin(), log_.end(), [&](const std::string& line) {
      return line.find(text) != std::string::npos;
    }));
  }
  uint64_t ReclaimFailures() {
    auto stats = engine_->Stats();
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    return stats.ok() ? stats->reclaim_failures : 0;
  }

  testing::TempDir dir_;
  std::shared_ptr<FaultInjectionFs> fs_;
  EngineOptions options_;
  std::unique_ptr<ServingEngine> engine_;
  std::vector<std::string> acknowledged_;
  std::mutex mu_;
  std::vector<std::string> log_;  // guarded by mu_
};

INSTANTIATE_TEST_SUITE_P(Durability, DiskFaultTest,
                         ::testing::Values(Durability::kSync, Durability::kAsync),
                         [](const auto& param_info) {
                           return param_info.param == Durability::kSync ? "Sync" : "Async";
                         });

TEST_P(DiskFaultTest, NoSpaceForTheWalSuspendsWritesUntilSpaceReturns) {
  for (int i = 0; i < 10; ++i) ASSERT_EQ("INSERTED", Name(Insert("k" + std::to_string(i))));

  fs_->FailWalAppends(Fault::kNoSpace);
  Result<OpResult> failed = Insert("during-1");
  ASSERT_EQ("IO_ERROR", Name(failed));
  EXPECT_NE(std::string::npos, failed.status().message().find("No space left on device"))
      << failed.status().ToString();
  Result<OpResult> refused = Insert("during-2");
  ASSERT_EQ("IO_ERROR", Name(refused));
  EXPECT_NE(std::string::npos, refused.status().message().find("writes suspended after"))
      << refused.status().ToString();
  EXPECT_TRUE(Logged("writes suspended after"));

  EXPECT_EQ("FOUND", Get("k3"));  // reads keep working
  EXPECT_EQ("NOT_FOUND", Get("never-written"));
  ASSERT_OK(engine_->Stats());  // (Stats listed the WAL files: an abort in async mode)

  fs_->ClearAll();
  ASSERT_TRUE(WaitUntilWritable());
  EXPECT_TRUE(Logged("writes resumed"));
  ASSERT_EQ("INSERTED", Name(Insert("after")));
  ExpectEveryAcknowledgedRecord();
  Reopen();
  ExpectEveryAcknowledgedRecord();
}

TEST_P(DiskFaultTest, ClosingWhileTheWalIsFullDoesNotAbort) {
  ASSERT_EQ("INSERTED", Name(Insert("before")));
  fs_->FailWalAppends(Fault::kNoSpace);
  ASSERT_EQ("IO_ERROR", Name(Insert("during")));
  engine_.reset();  // the destructor synced the WAL: SIGABRT
  fs_->ClearAll();
  ASSERT_OK(Open());
  ExpectEveryAcknowledgedRecord();
}

TEST_P(DiskFaultTest, NoSpaceForAFlushSuspendsWritesUntilSpaceReturns) {
  for (int i = 0; i < 10; ++i) ASSERT_EQ("INSERTED", Name(Insert("k" + std::to_string(i))));
  fs_->FailTableWrites(Fault::kNoSpace);
  Status flushed = engine_->Flush();
  ASSERT_TRUE(flushed.IsIOError()) << flushed.ToString();
  Result<OpResult> refused = Insert("during");
  ASSERT_EQ("IO_ERROR", Name(refused));
  EXPECT_NE(std::string::npos, refused.status().message().find("writes suspended after"))
      << refused.status().ToString();
  EXPECT_EQ("FOUND", Get("k7"));
  ASSERT_OK(engine_->Stats());

  fs_->ClearAll();
  ASSERT_TRUE(WaitUntilWritable());
  ExpectEveryAcknowledgedRecord();
  Reopen();
  ExpectEveryAcknowledgedRecord();
}

TEST_P(DiskFaultTest, NoSpaceAtOpenIsAClearErrorAndAnOpenLaterWorks) {
  ASSERT_EQ("INSERTED", Name(Insert("before")));
  engine_.reset();
  fs_->FailFileCreation(Fault::kNoSpace);
  Status opened = Open();
  ASSERT_TRUE(opened.IsIOError()) << opened.ToString();
  EXPECT_NE(std::string::npos, opened.message().find("No space left on device"))
      << opened.ToString();
  fs_->ClearAll();
  ASSERT_OK(Open());
  ExpectEveryAcknowledgedRecord();
}

// RocksDB's info LOG on a full disk: its lines are lost, nothing else (it aborted at open).
TEST_P(DiskFaultTest, AnInfoLogThatCannotBeWrittenIsNoReasonToStop) {
  ASSERT_EQ("INSERTED", Name(Insert("before")));
  engine_.reset();
  fs_->FailInfoLogWrites(Fault::kNoSpace);
  ASSERT_OK(Open());
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ("INSERTED", Name(Insert("k" + std::to_string(i))));
    ASSERT_OK(engine_->Flush());  // each flush logs, and flushes the LOG
  }
  ExpectEveryAcknowledgedRecord();
  Reopen();
  ExpectEveryAcknowledgedRecord();
}

TEST_P(DiskFaultTest, NoSpaceWhenCreatingANewDatabaseIsAClearError) {
  engine_.reset();
  fs_->FailFileCreation(Fault::kNoSpace);
  auto engine = OpenEngineOnFileSystem(dir_.Sub("fresh"), options_, fs_);
  ASSERT_FALSE(engine.ok());
  EXPECT_TRUE(engine.status().IsIOError()) << engine.status().ToString();
}

// Faults of the WAL's sync: only Durability::kSync syncs it (async mode syncs at close).
// The background reclaimer retries a failed pass every interval: the operator hears of the first
// failure and of the recovery, not of every retry, and the counter shows them all.
TEST_P(DiskFaultTest, FailingReclaimPassesAreCountedAndLoggedOncePerEpisode) {
  options_.reclaim_interval_ms = 20;
  Reopen();
  EXPECT_EQ(0u, ReclaimFailures());
  fs_->FailWalSyncs(Fault::kIoError);  // a pass first syncs the clock mark
  const auto deadline = std::chrono::steady_clock::now() + kRecoveryBound;
  while (ReclaimFailures() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(ReclaimFailures(), 3u);
  EXPECT_EQ(1, LoggedTimes("reclaim_failed "));

  fs_->ClearAll();
  ASSERT_TRUE(WaitUntilWritable());
  const auto resumed_by = std::chrono::steady_clock::now() + kRecoveryBound;
  while (!Logged("reclaim_resumed ") && std::chrono::steady_clock::now() < resumed_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(Logged("reclaim_resumed "));
  EXPECT_EQ(1, LoggedTimes("reclaim_failed "));
}

class SyncDiskFaultTest : public DiskFaultTest {};
// Compaction output is synced, so the clock mark that bounds what it removes must be synced
// before it, in async mode too: else a power cut could restart the engine at an older time, at
// which records the compaction removed were still live (clock_mark.h).
TEST_P(DiskFaultTest, TheClockMarkIsSyncedBeforeExpiredRecordsAreReclaimed) {
  ASSERT_EQ("INSERTED", Name(Insert("a")));
  std::atomic<int> wal_syncs{0};
  fs_->OnWalSync([&] {
    ++wal_syncs;
    return false;
  });
  ASSERT_OK(engine_->ReclaimExpired());
  EXPECT_LE(1, wal_syncs.load());
  fs_->OnWalSync(nullptr);
}

INSTANTIATE_TEST_SUITE_P(Durability, SyncDiskFaultTest, ::testing::Values(Durability::kSync),
                         [](const auto&) { return "Sync"; });

// A burst of EIO from fdatasync: each synced write in it fails; nothing is wedged afterwards.
TEST_P(SyncDiskFaultTest, ABurstOfFailedSyncsEndsWithoutARestart) {
  for (int i = 0; i < 10; ++i) ASSERT_EQ("INSERTED", Name(Insert("k" + std::to_string(i))));
  fs_->FailWalSyncs(Fault::kIoError);
  Result<OpResult> failed = Insert("during-1");
  ASSERT_EQ("IO_ERROR", Name(failed));
  EXPECT_NE(std::string::npos, failed.status().message().find("Input/output error"))
      << failed.status().ToString();
  // The burst goes on while the engine tries to recover (its flushes sync too: they fail).
  const auto burst_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < burst_end) {
    EXPECT_EQ("IO_ERROR", Name(Insert("during")));
    EXPECT_EQ("FOUND", Get("k5"));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  fs_->ClearAll();
  ASSERT_TRUE(WaitUntilWritable());
  EXPECT_TRUE(Logged("writes resumed"));
  ExpectEveryAcknowledgedRecord();
  Reopen();
  ExpectEveryAcknowledgedRecord();
}

// Recovery vouches for the writes of a failed WAL by flushing the memtables that hold them to
// synced table files: writes must not resume before that flush is done. (RocksDB's Flush can
// return while the flush it scheduled after a DB::Resume has not run: were writes resumed then,
// and a sync failed again before it ran, the flush would be dropped and the next Resume would
// wait for it for ever.)
TEST_P(SyncDiskFaultTest, WritesResumeOnlyOnceTheRecoveryFlushHasWrittenItsTableFiles) {
  for (int i = 0; i < 10; ++i) ASSERT_EQ("INSERTED", Name(Insert("k" + std::to_string(i))));
  fs_->FailWalSyncs(Fault::kIoError);
  ASSERT_EQ("IO_ERROR", Name(Insert("during")));
  SlowTableFiles tables(*fs_);
  fs_->ClearAll();
  ASSERT_TRUE(WaitUntilWritable());
  const int begun = tables.begun(), written = tables.written();
  // Resume's flush (the records) and the recovery's own (the switch to a new WAL).
  EXPECT_EQ(2, begun);
  EXPECT_EQ(begun, written);
  ExpectEveryAcknowledgedRecord();
  Reopen();
  ExpectEveryAcknowledgedRecord();
}

// The same RocksDB behaviour, seen by ServingEngine::Flush after a recovery.
TEST_P(SyncDiskFaultTest, FlushAfterARecoveryReturnsOnceTheTableFileIsWritten) {
  fs_->FailWalSyncs(Fault::kIoError);
  ASSERT_EQ("IO_ERROR", Name(Insert("during")));
  fs_->ClearAll();
  ASSERT_TRUE(WaitUntilWritable());
  ASSERT_EQ("INSERTED", Name(Insert("after")));
  SlowTableFiles tables(*fs_);
  ASSERT_OK(engine_->Flush());
  const int begun = tables.begun(), written = tables.written();
  EXPECT_EQ(1, begun);
  EXPECT_EQ(begun, written);
}

// Writes that wait for the lock a failing SyncWal holds must not append to its WAL once it is
// released: their own fdatasync may well succeed (Linux reports a writeback error once per file
// and then forgets it), which would acknowledge a write on a WAL whose earlier pages were lost.
TEST_P(SyncDiskFaultTest, SyncedWritesQueuedBehindAFailingSyncAreRefused) {
  ASSERT_EQ("INSERTED", Name(Insert("a")));
  std::promise<void> syncing, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> first{true};
  fs_->OnWalSync([&] {  // the next WAL sync waits for the test, then fails; later ones succeed
    if (!first.exchange(false)) return false;
    syncing.set_value();
    released.wait();
    return true;
  });
  std::future<Status> sync = std::async(std::launch::async, [&] { return engine_->SyncWal(); });
  syncing.get_future().wait();  // SyncWal holds the synced-write lock, in fdatasync
  std::future<Result<OpResult>> insert = std::async(std::launch::async, [&] {
    return engine_->Insert({.ns = "pay", .key = "b", .status = "PENDING"});
  });
  std::future<Status> compact =  // writes the clock mark, synced, first
      std::async(std::launch::async, [&] { return engine_->CompactAll(); });
  // Time to reach the lock: were they slower, they would find writes suspended anyway, and the
  // test would pass without showing anything, never fail.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  release.set_value();
  Status synced = sync.get();
  EXPECT_TRUE(synced.IsIOError()) << synced.ToString();
  Result<OpResult> b = insert.get();
  EXPECT_EQ("IO_ERROR", Name(b));
  EXPECT_NE(std::string::npos, b.status().message().find("writes suspended after"))
      << b.status().ToString();
  Status compacted = compact.get();
  EXPECT_NE(std::string::npos, compacted.message().find("writes suspended after"))
      << compacted.ToString();
  fs_->OnWalSync(nullptr);
  ASSERT_TRUE(WaitUntilWritable());
  ExpectEveryAcknowledgedRecord();
}

// The server's path under kSync: writes applied without a sync (ApplyDeferSync), then SyncWal
// on another thread (net/src/commit_queue.h).

Status ApplyDeferred(ServingEngine& engine, Op op, std::string* outcome, bool* needs_sync) {
  std::vector<Result<OpResult>> results;
  Status s = engine.ApplyDeferSync(std::span<const Op>(&op, 1), &results, needs_sync);
  if (s.ok()) *outcome = Name(results[0]);
  return s;
}

TEST_P(SyncDiskFaultTest, NoSpaceForTheWalThenTheSyncThreadSyncs) {
  std::string outcome;
  bool needs_sync = false;
  ASSERT_OK(ApplyDeferred(*engine_, Op::Insert({.ns = "pay", .key = "a", .status = "PENDING"}),
                          &outcome, &needs_sync));
  ASSERT_OK(engine_->SyncWal());
  acknowledged_.push_back("a");

  fs_->FailWalAppends(Fault::kNoSpace);
  Status failed = ApplyDeferred(
      *engine_, Op::Insert({.ns = "pay", .key = "b", .status = "PENDING"}), &outcome, &needs_sync);
  ASSERT_TRUE(failed.IsIOError()) << failed.ToString();
  Status synced = engine_->SyncWal();  // the sync thread's next sync: SIGABRT before
  EXPECT_TRUE(synced.IsIOError()) << synced.ToString();
  EXPECT_NE(std::string::npos, synced.message().find("writes suspended after"))
      << synced.ToString();
  // A read of a synced key needs no sync, and is answered.
  ASSERT_OK(ApplyDeferred(*engine_, Op::Get({.ns = "pay", .key = "a"}), &outcome, &needs_sync));
  EXPECT_EQ("FOUND", outcome);
  EXPECT_FALSE(needs_sync);

  fs_->ClearAll();
  ASSERT_TRUE(WaitUntilWritable());
  ASSERT_OK(ApplyDeferred(*engine_, Op::Insert({.ns = "pay", .key = "c", .status = "PENDING"}),
                          &outcome, &needs_sync));
  ASSERT_OK(engine_->SyncWal());
  acknowledged_.push_back("c");
  ExpectEveryAcknowledgedRecord();
  Reopen();
  ExpectEveryAcknowledgedRecord();
}

TEST_P(SyncDiskFaultTest, AFailedSyncSuspendsUntilTheMemtableIsFlushed) {
  std::string outcome;
  bool needs_sync = false;
  ASSERT_OK(ApplyDeferred(*engine_, Op::Insert({.ns = "pay", .key = "a", .status = "PENDING"}),
                          &outcome, &needs_sync));
  ASSERT_OK(engine_->SyncWal());
  acknowledged_.push_back("a");

  fs_->FailWalSyncs(Fault::kIoError);
  ASSERT_OK(ApplyDeferred(*engine_, Op::Insert({.ns = "pay", .key = "b", .status = "PENDING"}),
                          &outcome, &needs_sync));
  ASSERT_TRUE(needs_sync);
  Status failed = engine_->SyncWal();  // b is visible, and its durability unknown: not acked
  ASSERT_TRUE(failed.IsIOError()) << failed.ToString();
  EXPECT_NE(std::string::npos, failed.message().find("Input/output error")) << failed.ToString();
  // Retrying the sync cannot vouch for b (its pages may be gone): refused until recovery.
  Status again = engine_->SyncWal();
  EXPECT_NE(std::string::npos, again.message().find("writes suspended after")) << again.ToString();
  // Reads of keys no unsynced write touched are answered at once...
  ASSERT_OK(ApplyDeferred(*engine_, Op::Get({.ns = "pay", .key = "a"}), &outcome, &needs_sync));
  EXPECT_EQ("FOUND", outcome);
  EXPECT_FALSE(needs_sync);
  // ...a read that sees b must wait for b to be durable.
  ASSERT_OK(ApplyDeferred(*engine_, Op::Get({.ns = "pay", .key = "b"}), &outcome, &needs_sync));
  EXPECT_TRUE(needs_sync);

  fs_->ClearAll();
  ASSERT_TRUE(WaitUntilWritable());  // recovery flushed the memtable, b with it
  ASSERT_OK(engine_->SyncWal());
  ASSERT_OK(ApplyDeferred(*engine_, Op::Get({.ns = "pay", .key = "b"}), &outcome, &needs_sync));
  EXPECT_EQ("FOUND", outcome);
  ExpectEveryAcknowledgedRecord();
  Reopen();
  ExpectEveryAcknowledgedRecord();
  EXPECT_EQ("FOUND", Get("b"));  // flushed by the recovery, not replayed from the failed WAL
}

// Holds every thread of RocksDB's flush pool (Env::Priority::HIGH, shared by every database in
// the process) until Release(): a flush scheduled meanwhile waits in the pool's queue.
class FlushPoolHold {
 public:
  FlushPoolHold() {
    std::shared_future<void> released = release_.get_future().share();
    rocksdb::Env* env = rocksdb::Env::Default();
    for (int i = env->GetBackgroundThreads(rocksdb::Env::Priority::HIGH); i > 0; --i) {
      env->Schedule(&FlushPoolHold::Hold, new std::shared_future<void>(released),
                    rocksdb::Env::Priority::HIGH);
    }
  }
  ~FlushPoolHold() { Release(); }
  void Release() {
    if (!released_) release_.set_value();
    released_ = true;
  }

 private:
  static void Hold(void* arg) {  // owns arg: the hold may be gone when the wait ends
    std::unique_ptr<std::shared_future<void>> released(static_cast<std::shared_future<void>*>(arg));
    released->wait();
  }
  std::promise<void> release_;
  bool released_ = false;
};

// RocksDB 7.8's DB::Resume can wait for ever: a flush scheduled before a write's sync failed,
// and run after it, finds writes stopped and gives up without taking its request off the flush
// queue; Resume's own flush is then never scheduled (write_health.h). The engine cannot end that
// wait, but it must not hide it: the log says recovery is stuck and to restart, refused writes
// say the same, reads go on, and closing does not hang.
TEST_P(SyncDiskFaultTest, ARecoveryStuckInRocksDbIsReportedAndReadsGoOn) {
  // Longer than RocksDB's own pause after a failed flush job (1 s), which Resume waits out first:
  // only a Resume that does not return is reported.
  options_.recovery_stuck_after_ms = 2000;
  Reopen();
  for (int i = 0; i < 10; ++i) ASSERT_EQ("INSERTED", Name(Insert("k" + std::to_string(i))));
  FlushPoolHold hold;
  std::promise<void> switched;  // the flush switched to a new WAL, and so is scheduled
  std::atomic<bool> first{true};
  fs_->OnCreate([&](const std::string& name) {
    if (IsWalFileName(name) && first.exchange(false)) switched.set_value();
  });
  std::future<Status> flush = std::async(std::launch::async, [&] { return engine_->Flush(); });
  switched.get_future().wait();
  fs_->OnCreate(nullptr);
  fs_->FailWalSyncs(Fault::kIoError);
  ASSERT_EQ("IO_ERROR", Name(Insert("during")));  // waits for the flush to be scheduled
  fs_->ClearAll();
  hold.Release();  // the flush runs now, before the first recovery attempt (kFirstRetryMs)

  const auto deadline = std::chrono::steady_clock::now() + kRecoveryBound;
  while (!Logged("recovery stuck") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(Logged("recovery stuck"));
  EXPECT_TRUE(Logged("restart the server"));
  Result<OpResult> refused = Insert("after");
  ASSERT_EQ("IO_ERROR", Name(refused));
  EXPECT_NE(std::string::npos, refused.status().message().find("recovery stuck"))
      << refused.status().ToString();
  EXPECT_NE(std::string::npos, refused.status().message().find("restart the server"))
      << refused.status().ToString();
  EXPECT_EQ("FOUND", Get("k5"));  // reads go on
  EXPECT_EQ("NOT_FOUND", Get("never-written"));
  EXPECT_FALSE(Logged("returned after all"));

  engine_.reset();  // closing ends Resume's wait
  EXPECT_TRUE(flush.get().IsIOError());
  ASSERT_OK(Open());  // the restart the log asked for
  ASSERT_EQ("INSERTED", Name(Insert("after-restart")));
  ExpectEveryAcknowledgedRecord();
}

// A table file whose bytes went bad under the engine: the compaction that reads it fails with
// a corruption (RocksDB's kUnrecoverableError). Writes stop and are refused with an error that
// says to restart; no recovery is attempted; reads go on.
TEST_P(DiskFaultTest, ACorruptTableFileFoundByACompactionStopsWritesUntilARestart) {
  for (int i = 0; i < 2; ++i) {  // two table files over the same key range: compacted together
    for (int k = 0; k < 500; ++k) {
      ASSERT_OK(Insert("k" + std::to_string(k) + "-" + std::to_string(i)));
    }
    ASSERT_OK(engine_->Flush());
  }
  engine_.reset();
  std::vector<std::filesystem::path> tables;
  for (const auto& e : std::filesystem::directory_iterator(dir_.Sub("db"))) {
    if (e.path().extension() == ".sst") tables.push_back(e.path());
  }
  ASSERT_EQ(2u, tables.size());
  std::sort(tables.begin(), tables.end());  // the first holds the keys "*-0"
  {
    std::fstream f(tables.front(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(tables.front()) / 4));
    f.write("GARBLEDGARBLED!!", 16);
  }
  ASSERT_OK(Open());
  Status compacted = engine_->CompactAll();
  EXPECT_TRUE(compacted.IsCorruption()) << compacted.ToString();
  const std::string refused =
      engine_->Insert({.ns = "pay", .key = "after", .status = "PENDING"}).status().ToString();
  EXPECT_NE(std::string::npos, refused.find("restart")) << refused;
  EXPECT_EQ(std::string::npos, refused.find("recovering")) << refused;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // retries would have begun
  EXPECT_FALSE(Logged("recovery attempt"));
  EXPECT_TRUE(Logged("restart the server"));
  EXPECT_EQ("FOUND", Get("k0-1"));  // in the intact file
}

// Corruption and data loss (RocksDB's kUnrecoverableError class, or a corruption of any class
// found by a background job) are not repaired by any retry: writes stop and stay stopped, no
// recovery is attempted, and the refusal and the log tell the operator to restart (and to repair
// if the start is refused). Before, Resume was retried every 2 s forever and clients read
// "recovering (N attempts)".
TEST(WriteHealthTest, ACorruptionIsNotRetriedAndTheRefusalSaysToRestart) {
  const rocksdb::Status errors[] = {
      rocksdb::Status(rocksdb::Status::Corruption("block checksum mismatch"),
                      rocksdb::Status::Severity::kUnrecoverableError),
      rocksdb::Status(rocksdb::Status::Corruption("block checksum mismatch"),
                      rocksdb::Status::Severity::kHardError),
      rocksdb::Status(rocksdb::Status::IOError("data loss"),
                      rocksdb::Status::Severity::kUnrecoverableError)};
  for (const rocksdb::Status& original : errors) {
    std::mutex mu;
    std::vector<std::string> log;
    WriteHealth health([&](const LogRecord& record) {
      std::lock_guard<std::mutex> lock(mu);
      log.emplace_back(record.message);
    });
    std::atomic<int> attempts{0};
    health.StartRecovery([&] {
      ++attempts;
      return Status::Ok();
    });
    rocksdb::Status error = original;
    health.OnBackgroundError(rocksdb::BackgroundErrorReason::kCompaction, &error);
    EXPECT_TRUE(health.suspended()) << original.ToString();
    // Retries would start after 50 ms and double: several would have run by now.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(0, attempts.load()) << original.ToString();
    EXPECT_TRUE(health.suspended()) << original.ToString();
    const std::string refusal = health.Refusal().ToString();
    EXPECT_EQ(std::string::npos, refusal.find("recovering")) << refusal;
    EXPECT_NE(std::string::npos, refusal.find("restart")) << refusal;
    EXPECT_NE(std::string::npos, refusal.find("idemctl --data DIR repair")) << refusal;
    EXPECT_NE(std::string::npos, refusal.find(original.ToString())) << refusal;
    health.StopRecovery();
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_FALSE(log.empty());
    EXPECT_NE(std::string::npos, log[0].find("restart")) << log[0];
    EXPECT_EQ(std::string::npos, log[0].find("recovering")) << log[0];
  }
}

// A recovery step that does not return (RocksDB 7.8's DB::Resume waiting for a flush it
// dropped) is reported once it has run for `stuck_after`: the log and the refusal say to
// restart. If it returns after all, recovery goes on and writes come back.
TEST(WriteHealthTest, ARecoveryThatDoesNotReturnIsReportedUntilItDoes) {
  std::mutex mu;
  std::vector<std::string> log;
  auto logged = [&](std::string_view text) {
    std::lock_guard<std::mutex> lock(mu);
    return std::any_of(log.begin(), log.end(),
                       [&](const std::string& line) { return line.find(text) != line.npos; });
  };
  WriteHealth health(
      [&](const LogRecord& record) {
        std::lock_guard<std::mutex> lock(mu);
        log.emplace_back(record.message);
      },
      std::chrono::milliseconds(100));
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  // By value: on a failed assertion the promise goes first, and its end releases the wait.
  health.StartRecovery([released] {
    released.wait();
    return Status::Ok();
  });
  health.Suspend("a failed WAL sync (IO error)");
  const auto deadline = std::chrono::steady_clock::now() + kRecoveryBound;
  while (!logged("recovery stuck") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(logged("recovery stuck"));
  EXPECT_TRUE(logged("restart the server"));
  const std::string refusal = health.Refusal().ToString();
  EXPECT_NE(std::string::npos, refusal.find("recovery stuck")) << refusal;
  EXPECT_NE(std::string::npos, refusal.find("restart the server")) << refusal;
  EXPECT_TRUE(health.suspended());

  release.set_value();
  while (!logged("writes resumed") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(logged("writes resumed"));
  EXPECT_TRUE(logged("returned after all"));
  EXPECT_FALSE(health.suspended());
  health.StopRecovery();
}

}  // namespace
}  // namespace idem
