// Engine time under a misbehaving wall clock. The engine's time is fed by a fake wall clock and a
// fake monotonic clock: a test steps the wall clock as an operator or NTP would (only the wall
// moves), and lets real time pass by advancing both. Nothing sleeps.
//
// What must hold: a step of the wall clock neither ends a live lease nor lets compaction remove a
// live record; physical removal lags expiry by EngineOptions::expiry_grace_ms while reads treat a
// record as gone at its expiry exactly; after a restart with the wall clock behind the time the
// database already reached, time continues from there; and the operator is told.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "clock_mark.h"
#include "expiry_compaction_filter.h"
#include "idem/engine.h"
#include "key_codec.h"
#include "support/outcome_name.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

using testing::Name;

constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kDay = 24 * kHour;
constexpr int64_t kLease = 30 * kSecond;
constexpr int64_t kStartWallMs = 1'700'000'000'000;

class EngineClockTest : public ::testing::Test {
 protected:
  EngineClockTest()
      : wall_(std::make_shared<ManualClock>(kStartWallMs)),
        mono_(std::make_shared<ManualClock>(42 * kSecond)) {
    options_.wall_clock = wall_;
    options_.monotonic_clock = mono_;
    options_.log = [this](const LogRecord& record) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.emplace_back(record.message);
    };
    options_.reclaim_interval_ms = 0;  // tests reclaim explicitly
    options_.lifecycle["pay"] = LifecyclePolicy{kLease, kHour};
  }
  void SetUp() override { Open(); }

  void Open() {
    auto engine = Engine::Open(dir_.Sub("db"), options_);
    ASSERT_OK(engine);
    engine_ = std::move(*engine);
  }
  void Close() { engine_.reset(); }

  // Real time passes: both clocks move.
  void Pass(int64_t ms) {
    wall_->Advance(ms);
    mono_->Advance(ms);
  }
  // The wall clock is stepped (date -s, settimeofday, an NTP step): only it moves.
  void StepWall(int64_t ms) { wall_->Advance(ms); }

  Result<OpResult> Do(const Op& op) { return engine_->Execute(op); }
  std::string Insert(std::string_view key, int64_t ttl_ms) {
    return Name(engine_->Insert(
        {.ns = "rec", .key = key, .status = "DONE", .ttl = std::chrono::milliseconds(ttl_ms)}));
  }
  std::string Get(std::string_view key) { return Name(engine_->Get({.ns = "rec", .key = key})); }
  // The engine's "now", as the time a new record is stamped with.
  int64_t EngineNow() {
    auto r =
        engine_->Insert({.ns = "probe", .key = "t" + std::to_string(probes_++), .status = "S"});
    EXPECT_TRUE(r.ok() && r->record) << Name(r);
    return r.ok() && r->record ? r->record->updated_ms : 0;
  }

  // Record keys physically present on disk (the engine must be closed).
  size_t RecordsOnDisk(std::string_view ns = "rec") {
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::OpenForReadOnly(rocksdb::Options(), dir_.Sub("db"), &raw);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok()) return 0;
    std::unique_ptr<rocksdb::DB> db(raw);
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    size_t n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      std::string_view record_ns, key;
      if (ParseRecordKey(std::string_view(it->key().data(), it->key().size()), &record_ns, &key) &&
          record_ns == ns) {
        ++n;
      }
    }
    return n;
  }

  // The clock's high-water mark on disk (the engine must be closed).
  std::optional<int64_t> StoredMark() {
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::OpenForReadOnly(rocksdb::Options(), dir_.Sub("db"), &raw);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok()) return std::nullopt;
    std::unique_ptr<rocksdb::DB> db(raw);
    ClockMark mark;
    auto loaded = mark.Load(db.get());
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    return loaded.ok() ? *loaded : std::nullopt;
  }

  std::string Logged() {
    std::lock_guard<std::mutex> lock(log_mu_);
    std::string all;
    for (const std::string& line : log_) all += line + "\n";
    return all;
  }

  testing::TempDir dir_;
  std::shared_ptr<ManualClock> wall_;
  std::shared_ptr<ManualClock> mono_;
  std::mutex log_mu_;
  std::vector<std::string> log_;  // guarded by log_mu_; outlives the engine, which logs
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
  int probes_ = 0;
};

TEST_F(EngineClockTest, ForwardWallClockStepDoesNotEndALiveLease) {
  auto started = Do(Op::Begin({.ns = "pay",
                               .key = "order-1",
                               .fingerprint = "fp",
                               .owner = "worker-a",
                               .lease = std::chrono::milliseconds(kLease)}));
  ASSERT_OK(started);
  ASSERT_EQ(Outcome::kStarted, started->outcome);
  const uint64_t fence = started->record->fence;

  Pass(10 * kSecond);
  StepWall(+kHour);  // worker-a has 20 s of lease left in real time
  Pass(1 * kSecond);

  // A retry must not take over the attempt worker-a is still working on...
  auto retry = Do(Op::Begin({.ns = "pay",
                             .key = "order-1",
                             .fingerprint = "fp",
                             .owner = "worker-b",
                             .lease = std::chrono::milliseconds(kLease)}));
  ASSERT_OK(retry);
  EXPECT_EQ("IN_PROGRESS", Name(retry));
  EXPECT_EQ(fence, retry->record->fence);
  // ...and worker-a still owns it: its heartbeat and its result are accepted.
  EXPECT_EQ("APPLIED", Name(Do(Op::Heartbeat({.ns = "pay", .key = "order-1", .fence = fence}))));
  EXPECT_EQ(
      "APPLIED",
      Name(Do(Op::Complete({.ns = "pay", .key = "order-1", .fence = fence, .response = "paid"}))));
}

TEST_F(EngineClockTest, ForwardWallClockStepDoesNotLetCompactionRemoveLiveRecords) {
  ASSERT_EQ("INSERTED", Insert("live", 10 * kMinute));
  ASSERT_OK(engine_->Flush());

  StepWall(+kHour);
  Pass(1 * kSecond);
  ASSERT_OK(engine_->ReclaimExpired());
  ASSERT_OK(engine_->CompactAll());
  StepWall(-kHour);  // the operator notices and puts the clock back
  Pass(1 * kSecond);

  EXPECT_EQ("FOUND", Get("live"));
  Close();
  EXPECT_EQ(1u, RecordsOnDisk());
}

TEST_F(EngineClockTest, ExpiredRecordIsGoneForReadsAtOnceButStaysOnDiskForTheGrace) {
  ASSERT_EQ(5 * kMinute, EngineOptions().expiry_grace_ms);  // the default
  options_.expiry_grace_ms = 2 * kMinute;
  Close();
  Open();
  ASSERT_EQ("INSERTED", Insert("short", 1 * kSecond));
  ASSERT_EQ("INSERTED", Insert("long", kHour));
  ASSERT_OK(engine_->Flush());

  Pass(1 * kSecond);  // "short" expires exactly now
  EXPECT_EQ("NOT_FOUND", Get("short"));
  auto reclaim = engine_->ReclaimExpired();
  ASSERT_OK(reclaim);
  EXPECT_EQ(0u, reclaim->files_compacted);
  ASSERT_OK(engine_->CompactAll());
  Close();
  EXPECT_EQ(2u, RecordsOnDisk());  // within the grace: still there
  Open();
  EXPECT_EQ("NOT_FOUND", Get("short"));

  Pass(2 * kMinute - 1);
  ASSERT_OK(engine_->CompactAll());
  Close();
  EXPECT_EQ(2u, RecordsOnDisk());  // 1 ms short of the grace
  Open();

  Pass(1);
  ASSERT_OK(engine_->CompactAll());
  Close();
  EXPECT_EQ(1u, RecordsOnDisk());  // only "long" is left
}

TEST_F(EngineClockTest, ExpiryGraceIsValidated) {
  Close();
  for (int64_t bad : {int64_t{-1}, 7 * kDay + 1}) {
    options_.expiry_grace_ms = bad;
    auto engine = Engine::Open(dir_.Sub("db"), options_);
    ASSERT_FALSE(engine.ok());
    EXPECT_TRUE(engine.status().IsInvalidArgument());
    EXPECT_NE(std::string::npos, engine.status().message().find("expiry_grace_ms"));
  }
}

TEST_F(EngineClockTest, RestartWithTheWallClockBehindContinuesFromTheHighWaterMark) {
  auto started = Do(Op::Begin({.ns = "pay",
                               .key = "order-1",
                               .fingerprint = "fp",
                               .owner = "worker-a",
                               .lease = std::chrono::milliseconds(kLease)}));
  ASSERT_OK(started);
  const uint64_t old_fence = started->record->fence;
  ASSERT_EQ("INSERTED", Insert("minute", kMinute));
  Pass(5 * kSecond);
  const int64_t before_restart = EngineNow();
  Close();
  EXPECT_EQ(std::optional<int64_t>(before_restart), StoredMark());  // written at close

  // The machine comes back a day in the past (a dead RTC battery), with a new monotonic clock.
  StepWall(-kDay);
  mono_->Set(7);
  Open();
  EXPECT_NE(std::string::npos, Logged().find("behind")) << Logged();
  const int64_t after_restart = EngineNow();
  EXPECT_GE(after_restart, before_restart);
  EXPECT_LT(after_restart, before_restart + kSecond);

  // The lease (granted 5 s before the restart) ends 30 s after it was granted, give or take the
  // 5 % the engine may run slower while it converges on the wall clock.
  EXPECT_EQ("IN_PROGRESS", Name(Do(Op::Begin({.ns = "pay",
                                              .key = "order-1",
                                              .fingerprint = "fp",
                                              .owner = "worker-b",
                                              .lease = std::chrono::milliseconds(kLease)}))));
  Pass(kLease);
  auto takeover = Do(Op::Begin({.ns = "pay",
                                .key = "order-1",
                                .fingerprint = "fp",
                                .owner = "worker-b",
                                .lease = std::chrono::milliseconds(kLease)}));
  ASSERT_OK(takeover);
  EXPECT_EQ("STARTED", Name(takeover));
  EXPECT_GT(takeover->record->fence, old_fence);
  Pass(kMinute - kLease);
  EXPECT_EQ("NOT_FOUND", Get("minute"));
}

// Without a clean close: the high-water mark travels in the write batches themselves.
TEST_F(EngineClockTest, HighWaterMarkSurvivesACrash) {
  Close();
  int64_t last_now = 0;
  int fds[2];
  ASSERT_EQ(0, pipe(fds));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto engine = Engine::Open(dir_.Sub("db"), options_);
    if (!engine.ok()) _exit(2);
    int64_t now = 0;
    for (int i = 0; i < 30; ++i) {
      Pass(kSecond);
      auto r = (*engine)->Insert({.ns = "rec", .key = "k" + std::to_string(i), .status = "DONE"});
      if (!r.ok()) _exit(3);
      now = r->record->updated_ms;
    }
    if (write(fds[1], &now, sizeof now) != sizeof now) _exit(4);
    _exit(0);  // no destructor: the engine does not get to write anything at close
  }
  close(fds[1]);
  ASSERT_EQ(static_cast<ssize_t>(sizeof last_now), read(fds[0], &last_now, sizeof last_now));
  close(fds[0]);
  int wstatus = 0;
  ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
  ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);

  wall_->Set(kStartWallMs - kDay);
  mono_->Set(0);
  Open();
  // The engine continues from the last mark: at most one mark interval (1 s) behind.
  EXPECT_GE(EngineNow(), last_now - kSecond);
}

TEST_F(EngineClockTest, WallClockStepsAreLogged) {
  Pass(3 * kSecond);
  EXPECT_EQ("NOT_FOUND", Get("k"));
  EXPECT_EQ("", Logged());  // no step, nothing to say

  StepWall(+kHour);
  Pass(1 * kSecond);
  EXPECT_EQ("NOT_FOUND", Get("k"));
  const std::string forward = Logged();
  EXPECT_NE(std::string::npos, forward.find("wall clock stepped")) << forward;
  EXPECT_NE(std::string::npos, forward.find("+3600")) << forward;

  StepWall(-kHour);
  Pass(1 * kSecond);
  EXPECT_EQ("NOT_FOUND", Get("k"));
  const std::string back = Logged().substr(forward.size());
  EXPECT_NE(std::string::npos, back.find("-3600")) << back;
}

TEST_F(EngineClockTest, WallClockStepsAreCountedInStats) {
  auto stats = engine_->Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(0u, stats->clock_steps);
  StepWall(+kHour);
  Pass(1 * kSecond);
  EXPECT_EQ("NOT_FOUND", Get("k"));  // a read finds the check due
  stats = engine_->Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(1u, stats->clock_steps);
  StepWall(-kHour);
  Pass(1 * kSecond);
  EXPECT_EQ("NOT_FOUND", Get("k"));
  stats = engine_->Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(2u, stats->clock_steps);
}

// The high-water mark is written only by the engine's own time: a clock the caller supplies
// (ManualClock in tests and simulations) is read as is, even backwards.
TEST_F(EngineClockTest, SuppliedClockIsReadAsIsAndLeavesNoMark) {
  Close();
  std::filesystem::remove_all(dir_.Sub("db"));  // SetUp's engine left a mark
  auto manual = std::make_shared<ManualClock>(kStartWallMs);
  options_.clock = manual;
  Open();
  ASSERT_EQ("INSERTED", Insert("k", kMinute));
  ASSERT_OK(engine_->CompactAll());
  Close();
  EXPECT_EQ(std::nullopt, StoredMark());
  manual->Set(kStartWallMs - kDay);
  Open();
  EXPECT_EQ(kStartWallMs - kDay, EngineNow());
}

// What compaction may remove: expired for the grace before both now and the persisted mark, so a
// restart (which continues from the mark at the earliest) finds nothing removed that is live.
TEST(ClockMarkTest, BoundsPhysicalRemoval) {
  constexpr int64_t kNow = kStartWallMs;
  constexpr int64_t kGrace = 5 * kMinute;
  EXPECT_EQ(kNow - kGrace, RemovableUntil(kNow, kGrace, nullptr));  // a supplied clock: no mark

  ClockMark mark;  // not loaded yet (RocksDB may compact while opening): nothing is removable
  EXPECT_EQ(std::numeric_limits<int64_t>::min(), RemovableUntil(kNow, kGrace, &mark));

  testing::TempDir dir;
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(options, dir.Sub("db"), &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  auto none = mark.Load(db.get());  // a database without a mark: no bound but now's
  ASSERT_OK(none);
  EXPECT_EQ(std::nullopt, *none);
  EXPECT_EQ(kNow - kGrace, RemovableUntil(kNow, kGrace, &mark));

  rocksdb::WriteOptions synced;
  synced.sync = true;
  ASSERT_OK(mark.Write(db.get(), synced, kNow - 10 * kSecond));
  EXPECT_EQ(kNow - 10 * kSecond - kGrace, RemovableUntil(kNow, kGrace, &mark));
  rocksdb::WriteBatch batch;
  std::unique_lock<std::mutex> held;
  EXPECT_EQ(std::nullopt, mark.MaybeAddTo(&batch, kNow - 9500, &held));  // < 1 s later: not due
  EXPECT_EQ(std::optional<int64_t>(kNow), mark.MaybeAddTo(&batch, kNow, &held));
  EXPECT_TRUE(held.owns_lock());
  std::unique_lock<std::mutex> other;
  EXPECT_EQ(std::nullopt, mark.MaybeAddTo(&batch, kNow, &other));  // one batch carries it
  ASSERT_TRUE(db->Write(synced, &batch).ok());
  mark.Synced(kNow);
  held = {};
  EXPECT_EQ(kNow - kGrace, RemovableUntil(kNow + kHour, kGrace, &mark));

  ClockMark reloaded;
  auto loaded = reloaded.Load(db.get());
  ASSERT_OK(loaded);
  EXPECT_EQ(std::optional<int64_t>(kNow), *loaded);
}

// Compaction output is synced: a mark that bounds removal must be durable, or a power cut can
// restart the engine before records the compaction already removed expired.
TEST(ClockMarkTest, OnlyASyncedMarkBoundsPhysicalRemoval) {
  constexpr int64_t kNow = kStartWallMs;
  testing::TempDir dir;
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(options, dir.Sub("db"), &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  ClockMark mark;
  ASSERT_OK(mark.Write(db.get(), rocksdb::WriteOptions(), kNow - kMinute));  // an old store
  rocksdb::WriteOptions synced;
  synced.sync = true;
  ClockMark reopened;
  ASSERT_OK(reopened.Load(db.get()));
  ASSERT_OK(reopened.Write(db.get(), rocksdb::WriteOptions(), kNow));  // async mode, say
  EXPECT_EQ(kNow - kMinute, RemovableUntil(kNow, 0, &reopened)) << "an unsynced mark counted";
  ASSERT_OK(reopened.Write(db.get(), synced, kNow + kSecond));
  EXPECT_EQ(kNow + kSecond, RemovableUntil(kNow + kMinute, 0, &reopened));
}

// A batch reads its now_ms before it waits for its key locks, so marks can reach the database
// out of order: the stored mark must still never go back.
TEST(ClockMarkTest, TheStoredMarkNeverGoesBack) {
  constexpr int64_t kNow = kStartWallMs;
  testing::TempDir dir;
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(options, dir.Sub("db"), &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  ClockMark mark;
  ASSERT_OK(mark.Load(db.get()));
  ASSERT_OK(mark.Write(db.get(), rocksdb::WriteOptions(), kNow));
  ASSERT_OK(mark.Write(db.get(), rocksdb::WriteOptions(), kNow - 300));  // read 300 ms earlier
  ClockMark reloaded;
  auto loaded = reloaded.Load(db.get());
  ASSERT_OK(loaded);
  EXPECT_EQ(std::optional<int64_t>(kNow), *loaded);
}

}  // namespace
}  // namespace idem
