// The expiry-window layout (EngineOptions::Layout::kExpiryWindows): where each record is stored,
// that it moves atomically when its death changes, that dropping a window never takes a record
// that is still live (or may be live again after a restart up to the grace behind), and that a
// database written under either layout opens under the other. What the engine answers is checked
// through its API; where a record is stored is checked in RocksDB itself, with the engine closed.
// Time only moves through the ManualClock.
#include "expiry_windows.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/perf_context.h>
#include <rocksdb/perf_level.h>

#include "column_families.h"
#include "engine/expiry_windows_crash.h"
#include "idem/engine.h"
#include "key_codec.h"
#include "record_codec.h"
#include "support/child_process.h"
#include "support/engine_fixture.h"

namespace idem {
namespace {

using testing::EngineTest;
using testing::Name;
using Layout = EngineOptions::Layout;

constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kWidth = kMinute;  // expiry_window_ms in these tests
constexpr int64_t kGrace = kSecond;  // expiry_grace_ms in these tests
constexpr int64_t kRemember = 10 * kMinute;

// The end of the window [k·W, (k+1)·W) that holds deaths at `death_ms`.
int64_t WindowEnd(int64_t death_ms, int64_t width_ms) {
  return (death_ms / width_ms + 1) * width_ms;
}

// The column family of that window, named by its end (engine/src/expiry_windows.h: the end stays
// right when the width changes between runs).
std::string WindowFamily(int64_t end_ms) { return "expires-" + std::to_string(end_ms); }

// A closed database opened read-only with every column family it has, to see where the engine
// put each key.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    auto all = OpenAllFamilies(rocksdb::Options(), rocksdb::ColumnFamilyOptions(), path,
                               OpenMode::kReadOnly);
    if (!all.ok()) {
      ADD_FAILURE() << "OpenAllFamilies: " << all.status().ToString();
      return;
    }
    all_ = std::move(*all);
    names_ = all_->names();
    std::sort(names_.begin(), names_.end());
  }

  const std::vector<std::string>& Families() const { return names_; }
  std::vector<std::string> Windows() const {
    std::vector<std::string> windows;
    for (const std::string& name : names_) {
      if (name.starts_with("expires-")) windows.push_back(name);
    }
    return windows;
  }

  // Every family that holds a value for (ns, key), with the expiry that value carries.
  std::map<std::string, int64_t> Copies(std::string_view ns, std::string_view key) const {
    std::map<std::string, int64_t> copies;
    for (rocksdb::ColumnFamilyHandle* handle : Handles()) {
      std::string value;
      rocksdb::Status s =
          all_->db()->Get(rocksdb::ReadOptions(), handle, RecordKey(ns, key), &value);
      if (s.ok()) {
        copies[handle->GetName()] = PeekExpiry(value).value_or(-1);
      } else if (!s.IsNotFound()) {
        ADD_FAILURE() << handle->GetName() << ": " << s.ToString();
      }
    }
    return copies;
  }
  std::vector<std::string> Holders(std::string_view ns, std::string_view key) const {
    std::vector<std::string> holders;
    for (const auto& [family, expiry] : Copies(ns, key)) holders.push_back(family);
    return holders;
  }

  // The families that hold meta keys (the fence reservation, the clock mark).
  std::vector<std::string> FamiliesWithMetaKeys() const {
    std::vector<std::string> families;
    for (rocksdb::ColumnFamilyHandle* handle : Handles()) {
      std::unique_ptr<rocksdb::Iterator> it(
          all_->db()->NewIterator(rocksdb::ReadOptions(), handle));
      it->SeekToFirst();  // meta keys sort first: they start with a zero byte
      if (it->Valid() && IsMetaKey(std::string_view(it->key().data(), it->key().size()))) {
        families.push_back(handle->GetName());
      }
    }
    std::sort(families.begin(), families.end());
    return families;
  }

 private:
  std::vector<rocksdb::ColumnFamilyHandle*> Handles() const {
    return all_ ? all_->handles() : std::vector<rocksdb::ColumnFamilyHandle*>();
  }

  std::unique_ptr<AllFamilies> all_;
  std::vector<std::string> names_;  // sorted
};

std::string PayloadOf(std::string_view key) { return "payload-of-" + std::string(key); }

class ExpiryWindowsTest : public EngineTest {
 protected:
  ExpiryWindowsTest() {
    options_.layout = Layout::kExpiryWindows;
    options_.expiry_window_ms = kWidth;
    options_.expiry_grace_ms = kGrace;
    options_.durability = Durability::kAsync;
    options_.retention["w"] = RetentionPolicy{10 * kMinute, 24 * kHour, /*allow_forever=*/true};
    options_.lifecycle["w"] =
        LifecyclePolicy{30 * kSecond, kHour, /*completed_ttl_ms=*/20 * kMinute};
    options_.retention["rem"] = RetentionPolicy{2 * kMinute, 24 * kHour, false, kRemember};
  }

  int64_t Now() const { return clock_->NowMillis(); }
  std::string WindowOf(int64_t death_ms) const {
    return WindowFamily(WindowEnd(death_ms, options_.expiry_window_ms));
  }
  void UseLayout(Layout layout) {
    options_.layout = layout;
    Reopen();
  }

  // Closes the engine, lets `look` see the raw database, opens the engine again.
  template <class Look>
  void Inspect(Look look) {
    engine_.reset();
    {
      RawDb raw(dir_.Sub("db"));
      look(raw);
    }
    Open();
  }
  std::vector<std::string> Holders(std::string_view ns, std::string_view key) {
    std::vector<std::string> holders;
    Inspect([&](const RawDb& raw) { holders = raw.Holders(ns, key); });
    return holders;
  }
  std::vector<std::string> Windows() {
    std::vector<std::string> windows;
    Inspect([&](const RawDb& raw) { windows = raw.Windows(); });
    return windows;
  }

  // Inserts (ns, key) with its PayloadOf and `ttl_ms` (kForever: forever); returns its expiry.
  int64_t Put(std::string_view ns, std::string_view key, int64_t ttl_ms) {
    auto r = engine().Insert({.ns = ns,
                              .key = key,
                              .status = "S",
                              .payload = PayloadOf(key),
                              .ttl = testing::TtlMs(ttl_ms)});
    EXPECT_EQ("INSERTED", Name(r)) << key;
    if (!r.ok() || !r->record) return 0;
    EXPECT_EQ(ttl_ms == kForever ? kNeverExpires : Now() + ttl_ms, r->record->expires_at_ms);
    return r->record->expires_at_ms;
  }
  // A CompareAndSet that changes the status and, if given, the TTL; returns the new expiry.
  int64_t Touch(std::string_view ns, std::string_view key, std::optional<int64_t> ttl_ms = {}) {
    auto r = engine().CompareAndSet(
        {.ns = ns, .key = key, .update = {.status = "T", .ttl = testing::TtlMs(ttl_ms)}});
    EXPECT_EQ("APPLIED", Name(r)) << key;
    return r.ok() && r->record ? r->record->expires_at_ms : 0;
  }
  // "FOUND" with the payload Put stored, or what Get answered instead.
  std::string Found(std::string_view ns, std::string_view key) {
    auto r = engine().Get({.ns = ns, .key = key});
    if (!r.ok() || r->outcome != Outcome::kFound) return Name(r);
    return r->record->payload == PayloadOf(key) ? "FOUND"
                                                : "FOUND with payload " + r->record->payload;
  }
  // Begin as owner "w"; returns the fence (0 if not STARTED).
  uint64_t Begin(std::string_view ns, std::string_view key, std::optional<int64_t> ttl_ms = {},
                 std::chrono::milliseconds lease = std::chrono::seconds(30)) {
    auto r = engine().Execute(Op::Begin(
        {.ns = ns, .key = key, .owner = "w", .lease = lease, .ttl = testing::TtlMs(ttl_ms)}));
    EXPECT_EQ("STARTED", Name(r)) << key;
    return r.ok() && r->record ? r->record->fence : 0;
  }
  uint64_t Reclaim() {
    auto report = engine().ReclaimExpired();
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? report->windows_dropped : 0;
  }
};

using Names = std::vector<std::string>;

// --- Placement ---------------------------------------------------------------------------------

TEST_F(ExpiryWindowsTest, RecordWithATtlLivesInTheWindowOfItsDeath) {
  const int64_t soon = Put("w", "soon", 90 * kSecond);
  const int64_t later = Put("w", "later", 5 * kMinute);
  ASSERT_NE(WindowOf(soon), WindowOf(later));
  Inspect([&](const RawDb& raw) {
    EXPECT_EQ(Names{WindowOf(soon)}, raw.Holders("w", "soon"));
    EXPECT_EQ(Names{WindowOf(later)}, raw.Holders("w", "later"));
    EXPECT_EQ(Names({"default", WindowOf(soon), WindowOf(later)}), raw.Families());
  });
  EXPECT_EQ("FOUND", Found("w", "soon"));
  EXPECT_EQ("FOUND", Found("w", "later"));
}

TEST_F(ExpiryWindowsTest, DeathOnAWindowBoundaryBelongsToTheWindowItStarts) {
  const int64_t boundary = WindowEnd(Now(), kWidth) + kWidth;  // a multiple of W, ahead of now
  const int64_t at = Put("w", "at", boundary - Now());
  const int64_t before = Put("w", "before", boundary - 1 - Now());
  ASSERT_EQ(boundary, at);
  Inspect([&](const RawDb& raw) {
    EXPECT_EQ(Names{WindowFamily(boundary + kWidth)}, raw.Holders("w", "at"));
    EXPECT_EQ(Names{WindowFamily(boundary)}, raw.Holders("w", "before"));
  });
  clock_->Set(before);
  EXPECT_EQ("NOT_FOUND", Found("w", "before"));
  EXPECT_EQ("FOUND", Found("w", "at"));
}

TEST_F(ExpiryWindowsTest, RecordThatNeverExpiresStaysInTheDefaultFamily) {
  Put("w", "forever", kForever);
  Inspect([&](const RawDb& raw) {
    EXPECT_EQ(Names{"default"}, raw.Holders("w", "forever"));
    EXPECT_EQ(Names{}, raw.Windows());
  });
  EXPECT_EQ("FOUND", Found("w", "forever"));
}

TEST_F(ExpiryWindowsTest, MetaKeysStayInTheDefaultFamily) {
  for (int i = 0; i < 5; ++i) Put("w", "k" + std::to_string(i), (i + 1) * 2 * kMinute);
  clock_->Advance(3 * kSecond);  // past the clock mark's interval, for engines that keep one
  Put("w", "late", 7 * kMinute);
  Inspect([&](const RawDb& raw) {
    ASSERT_GE(raw.Windows().size(), 5u);
    EXPECT_EQ(Names{"default"}, raw.FamiliesWithMetaKeys());
  });
}

TEST_F(ExpiryWindowsTest, LeveledLayoutKeepsEveryRecordInTheDefaultFamily) {
  UseLayout(Layout::kLeveled);
  Put("w", "soon", 90 * kSecond);
  Put("w", "later", 5 * kMinute);
  Put("w", "forever", kForever);
  Inspect([&](const RawDb& raw) {
    EXPECT_EQ(Names{"default"}, raw.Families());
    EXPECT_EQ(Names{"default"}, raw.Holders("w", "soon"));
  });
  EXPECT_EQ("FOUND", Found("w", "later"));
}

TEST_F(ExpiryWindowsTest, OpenRefusesAWindowWidthOutsideItsRange) {
  engine_.reset();
  for (int64_t width :
       {EngineOptions::kMinExpiryWindowMs - 1, int64_t{0}, EngineOptions::kMaxExpiryWindowMs + 1}) {
    options_.expiry_window_ms = width;
    auto refused = ServingEngine::Open(dir_.Sub("refused"), options_);
    ASSERT_FALSE(refused.ok()) << width;
    EXPECT_EQ(Status::Code::kInvalidArgument, refused.status().code()) << width;
    EXPECT_NE(std::string::npos, refused.status().message().find("expiry_window_ms"))
        << refused.status().ToString();
  }
  for (int64_t width : {EngineOptions::kMinExpiryWindowMs, EngineOptions::kMaxExpiryWindowMs}) {
    options_.expiry_window_ms = width;
    ASSERT_OK(ServingEngine::Open(dir_.Sub("accepted-" + std::to_string(width)), options_));
  }
}

// --- Moves -------------------------------------------------------------------------------------

// Moves ("w", "k") back and forth between the windows of a 10- and a 30-minute TTL with
// CompareAndSet, on a thread of its own, until Stop() or its destruction.
class RecordMover {
 public:
  explicit RecordMover(Store& store)
      : thread_([this, &store] {
          for (int i = 0; !stop_.load(); ++i) {
            auto r = store.CompareAndSet(
                {.ns = "w",
                 .key = "k",
                 .update = {.status = "T", .ttl = testing::TtlMs((i % 2 ? 10 : 30) * kMinute)}});
            if (r.ok() && r->outcome == Outcome::kApplied) moves_.fetch_add(1);
          }
        }) {}
  ~RecordMover() { Stop(); }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  int moves() const { return moves_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> moves_{0};
  std::thread thread_;  // declared last: it starts once the counters exist
};

TEST_F(ExpiryWindowsTest, CompleteWithTheCompletedTtlMovesTheAttemptToItsNewWindow) {
  const uint64_t fence = Begin("w", "req", 2 * kMinute);
  const int64_t in_progress_expiry = Now() + 2 * kMinute;
  EXPECT_EQ(Names{WindowOf(in_progress_expiry)}, Holders("w", "req"));
  auto done = engine().Execute(
      Op::Complete({.ns = "w", .key = "req", .fence = fence, .response = "HTTP 201"}));
  ASSERT_EQ("APPLIED", Name(done));
  const int64_t expiry = done->record->expires_at_ms;
  EXPECT_EQ(Now() + 20 * kMinute, expiry);  // the namespace's completed_ttl_ms
  ASSERT_NE(WindowOf(in_progress_expiry), WindowOf(expiry));
  EXPECT_EQ(Names{WindowOf(expiry)}, Holders("w", "req"));
  auto replay = engine().Execute(Op::Begin({.ns = "w", .key = "req", .owner = "w"}));
  ASSERT_EQ("COMPLETED", Name(replay));
  EXPECT_EQ("HTTP 201", replay->record->payload);
}

TEST_F(ExpiryWindowsTest, CompleteWithAnExplicitTtlMovesTheAttempt) {
  const uint64_t fence = Begin("w", "req", 2 * kMinute);
  auto done = engine().Execute(Op::Complete({.ns = "w",
                                             .key = "req",
                                             .fence = fence,
                                             .response = "HTTP 201",
                                             .ttl = std::chrono::minutes(45)}));
  ASSERT_EQ("APPLIED", Name(done));
  EXPECT_EQ(Names{WindowOf(Now() + 45 * kMinute)}, Holders("w", "req"));
  auto got = engine().Get({.ns = "w", .key = "req"});
  ASSERT_EQ("FOUND", Name(got));
  EXPECT_EQ("HTTP 201", got->record->payload);
}

TEST_F(ExpiryWindowsTest, CompareAndSetWithANewTtlMovesTheRecord) {
  const int64_t first = Put("w", "k", 2 * kMinute);
  const int64_t moved = Touch("w", "k", 30 * kMinute);
  ASSERT_EQ(Now() + 30 * kMinute, moved);
  ASSERT_NE(WindowOf(first), WindowOf(moved));
  EXPECT_EQ(Names{WindowOf(moved)}, Holders("w", "k"));
  EXPECT_EQ(moved, Touch("w", "k"));  // no TTL: the expiry, and so the window, are kept
  EXPECT_EQ(Names{WindowOf(moved)}, Holders("w", "k"));
  auto got = engine().Get({.ns = "w", .key = "k"});
  ASSERT_EQ("FOUND", Name(got));
  EXPECT_EQ(3u, got->record->version);
}

TEST_F(ExpiryWindowsTest, CompareAndSetCanMoveARecordOutOfTheWindowsForEver) {
  Put("w", "k", 2 * kMinute);
  Touch("w", "k", kForever);
  EXPECT_EQ(Names{"default"}, Holders("w", "k"));
  clock_->Advance(kHour);
  ASSERT_GE(Reclaim(), 1u);             // its old window is dropped...
  EXPECT_EQ("FOUND", Found("w", "k"));  // ...without it
}

TEST_F(ExpiryWindowsTest, HeartbeatThatLeavesTheExpiryKeepsTheWindow) {
  const uint64_t fence = Begin("w", "req", 10 * kMinute);
  const int64_t expiry = Now() + 10 * kMinute;
  clock_->Advance(10 * kSecond);
  auto beat = engine().Execute(
      Op::Heartbeat({.ns = "w", .key = "req", .fence = fence, .lease = std::chrono::seconds(30)}));
  ASSERT_EQ("APPLIED", Name(beat));
  EXPECT_EQ(expiry, beat->record->expires_at_ms);  // the lease ends well before the expiry
  EXPECT_EQ(Names{WindowOf(expiry)}, Holders("w", "req"));
  EXPECT_EQ(fence, engine().Get({.ns = "w", .key = "req"})->record->fence);
}

TEST_F(ExpiryWindowsTest, HeartbeatWhoseLeaseOutlastsTheExpiryMovesTheAttempt) {
  const uint64_t fence = Begin("w", "req", kMinute);
  auto beat = engine().Execute(
      Op::Heartbeat({.ns = "w", .key = "req", .fence = fence, .lease = std::chrono::minutes(50)}));
  ASSERT_EQ("APPLIED", Name(beat));
  const int64_t expiry = beat->record->expires_at_ms;
  ASSERT_EQ(Now() + 50 * kMinute, expiry);  // a live lease keeps the attempt
  EXPECT_EQ(Names{WindowOf(expiry)}, Holders("w", "req"));
  clock_->Advance(40 * kMinute);
  Reclaim();  // drops the window the attempt started in
  auto taken = engine().Execute(Op::Begin({.ns = "w", .key = "req", .owner = "other"}));
  EXPECT_EQ("IN_PROGRESS", Name(taken));  // the holder still holds it
}

TEST_F(ExpiryWindowsTest, RememberedKeyLivesInTheWindowOfTheEndOfItsRememberPeriod) {
  const uint64_t fence = Begin("rem", "req");
  auto done =
      engine().Execute(Op::Complete({.ns = "rem", .key = "req", .fence = fence, .response = "r"}));
  ASSERT_EQ("APPLIED", Name(done));
  const int64_t expiry = done->record->expires_at_ms;
  ASSERT_EQ(Now() + 2 * kMinute, expiry);
  const int64_t death = expiry + kRemember;
  ASSERT_NE(WindowOf(expiry), WindowOf(death));
  EXPECT_EQ(Names{WindowOf(death)}, Holders("rem", "req"));
  // Through the whole remember period the key answers EXPIRED, whatever the drops take.
  for (int64_t t = expiry; t < death; t += kMinute / 2) {
    clock_->Set(t);
    EXPECT_EQ(0u, Reclaim()) << "at expiry+" << t - expiry;
    auto late = engine().Execute(Op::Begin({.ns = "rem", .key = "req", .owner = "w"}));
    ASSERT_EQ("EXPIRED", Name(late)) << "at expiry+" << t - expiry;
  }
  clock_->Set(death - 1);
  EXPECT_EQ("EXPIRED", Name(engine().Get({.ns = "rem", .key = "req"})));
  clock_->Set(death);
  EXPECT_EQ("NOT_FOUND", Name(engine().Get({.ns = "rem", .key = "req"})));
  const uint64_t again = Begin("rem", "req");  // forgotten: a new attempt
  EXPECT_GT(again, fence);
}

// --- Drops -------------------------------------------------------------------------------------

TEST_F(ExpiryWindowsTest, DropsTakeEndedWindowsAndNeverALiveRecord) {
  struct Planned {
    std::string key;
    int64_t death;
  };
  std::vector<Planned> planned;
  std::set<int64_t> ends;
  for (int i = 0; i < 120; ++i) {
    const std::string key = "k" + std::to_string(i);
    const int64_t death = Put("w", key, 30 * kSecond + (i * 7919) % (10 * kMinute));
    planned.push_back({key, death});
    ends.insert(WindowEnd(death, kWidth));
  }
  for (int i = 0; i < 5; ++i) Put("w", "forever" + std::to_string(i), kForever);
  ASSERT_GE(ends.size(), 10u);

  const int64_t stop = *ends.rbegin() + kGrace + kWidth;
  size_t dropped = 0;
  while (Now() < stop) {
    // 20 s steps: the clock lands on window ends too, where a window has ended but its grace has
    // not, so it must stay.
    clock_->Advance(20 * kSecond);
    SCOPED_TRACE("now " + std::to_string(Now()));
    const uint64_t dropped_now = Reclaim();
    const int64_t bound = Now() - kGrace;
    std::vector<std::string> kept;
    size_t droppable = 0;
    for (int64_t end : ends) {
      if (end <= bound) {
        ++droppable;
      } else {
        kept.push_back(WindowFamily(end));
      }
    }
    EXPECT_EQ(droppable - dropped, dropped_now);
    dropped = droppable;
    std::vector<std::string> lost;
    for (const Planned& p : planned) {
      const std::string found = Found("w", p.key);
      if (found != (p.death > Now() ? "FOUND" : "NOT_FOUND")) lost.push_back(p.key + ": " + found);
    }
    EXPECT_EQ(std::vector<std::string>{}, lost);
    for (int i = 0; i < 5; ++i) EXPECT_EQ("FOUND", Found("w", "forever" + std::to_string(i)));
    EXPECT_EQ(kept, Windows());
    ASSERT_FALSE(HasFailure()) << "stopped at the first step that went wrong";
  }
  EXPECT_EQ(ends.size(), dropped);
}

TEST_F(ExpiryWindowsTest, EndedWindowStaysForTheGraceSoARestartBehindFindsItsRecords) {
  const int64_t end = WindowEnd(Now() + 5 * kMinute, kWidth);
  const int64_t death = Put("w", "k", end - 1 - Now());  // the window's last instant
  clock_->Set(end + kGrace - 1);                         // the window has ended, its grace has not
  EXPECT_EQ(0u, Reclaim());
  EXPECT_EQ(Names{WindowFamily(end)}, Windows());
  clock_->Set(death - kGrace + 1);  // a restart continuing up to the grace behind
  EXPECT_EQ("FOUND", Found("w", "k"));
  clock_->Set(end + kGrace);
  EXPECT_EQ(1u, Reclaim());
  EXPECT_EQ(Names{}, Windows());
}

TEST_F(ExpiryWindowsTest, CompactAllDropsEndedWindowsToo) {
  const int64_t gone = Put("w", "gone", 90 * kSecond);
  const int64_t kept = Put("w", "kept", 30 * kMinute);
  clock_->Set(WindowEnd(gone, kWidth) + kGrace);
  ASSERT_OK(engine().CompactAll());
  EXPECT_EQ(Names{WindowOf(kept)}, Windows());
  EXPECT_EQ("FOUND", Found("w", "kept"));
}

TEST_F(ExpiryWindowsTest, NarrowerWindowsAfterAReopenNeverDropAWiderWindowEarly) {
  constexpr int64_t kWide = 10 * kMinute;
  options_.expiry_window_ms = kWide;
  Reopen();
  const int64_t wide_death = Put("w", "wide", 6 * kMinute);
  const int64_t wide_end = WindowEnd(wide_death, kWide);
  options_.expiry_window_ms = kWidth;
  Reopen();
  const int64_t narrow_death = Put("w", "narrow", 20 * kMinute);
  for (; Now() < wide_death; clock_->Advance(30 * kSecond)) {
    Reclaim();
    ASSERT_EQ("FOUND", Found("w", "wide")) << "at death-" << wide_death - Now();
  }
  clock_->Set(wide_end + kGrace);
  EXPECT_EQ(1u, Reclaim());
  EXPECT_EQ(Names{WindowFamily(WindowEnd(narrow_death, kWidth))}, Windows());
  EXPECT_EQ("FOUND", Found("w", "narrow"));
}

// --- New lives, deletes, batches ---------------------------------------------------------------

TEST_F(ExpiryWindowsTest, KeyInsertedAgainAfterExpiryStartsANewLifeInItsNewWindow) {
  const int64_t old_death = Put("w", "k", 90 * kSecond);
  clock_->Set(old_death);
  auto again = engine().Insert({.ns = "w",
                                .key = "k",
                                .status = "S",
                                .payload = "second life",
                                .ttl = std::chrono::minutes(10)});
  ASSERT_EQ("INSERTED", Name(again));
  EXPECT_EQ(1u, again->record->version);
  const int64_t new_death = again->record->expires_at_ms;
  Inspect([&](const RawDb& raw) {
    std::map<std::string, int64_t> copies = raw.Copies("w", "k");
    EXPECT_EQ(1u, copies.count(WindowOf(new_death)));
    for (const auto& [family, expiry] : copies) {
      if (family != WindowOf(new_death)) {
        EXPECT_LE(expiry, Now()) << family << " holds a live copy";
      }
    }
  });
  clock_->Set(WindowEnd(old_death, kWidth) + kGrace);
  EXPECT_EQ(1u, Reclaim());
  auto got = engine().Get({.ns = "w", .key = "k"});
  ASSERT_EQ("FOUND", Name(got));
  EXPECT_EQ("second life", got->record->payload);
  EXPECT_EQ(1u, got->record->version);
  EXPECT_EQ(Names{WindowOf(new_death)}, Windows());
}

// Creating a family writes the MANIFEST, stripe locks held: the background reclaimer creates
// the windows that default-TTL records will need before they arrive.
TEST_F(ExpiryWindowsTest, TheReclaimerCreatesUpcomingWindowsBeforeAWriteNeedsThem) {
  options_.reclaim_interval_ms = 20;
  Reopen();
  const int64_t end = WindowEnd(Now() + 10 * kMinute, kWidth);  // namespace "w"'s default TTL
  // Until a pass has created them all: the count holds for ten intervals.
  uint64_t windows = 0;
  for (int i = 0, same = 0; i < 500 && (windows == 0 || same < 10); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto stats = engine().Stats();
    ASSERT_OK(stats.status());
    same = stats->expiry_windows == windows ? same + 1 : 0;
    windows = stats->expiry_windows;
  }
  ASSERT_GT(windows, 0u) << "no window was created ahead of the writes";
  Put("w", "k", 10 * kMinute);
  auto stats = engine().Stats();
  ASSERT_OK(stats.status());
  EXPECT_EQ(windows, stats->expiry_windows) << "the write had to create its window";
  EXPECT_EQ(std::vector<std::string>{WindowFamily(end)}, Holders("w", "k"));
}

// A Get takes no stripe lock: a CompareAndSet moving the record between two windows commits
// while the Get looks in one family after the other, and the Get must still find it.
TEST_F(ExpiryWindowsTest, AGetRacingMovesBetweenWindowsAlwaysFindsTheRecord) {
  Put("w", "k", 10 * kMinute);
  Touch("w", "k", 30 * kMinute);  // both windows exist before the race: creating one is slow
  Touch("w", "k", 10 * kMinute);
  RecordMover mover(engine());
  // Gets until the mover has made its moves (however the two threads are scheduled), bounded.
  int gets = 0;
  int missed = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((gets < 20'000 || mover.moves() <= 1000) && std::chrono::steady_clock::now() < deadline) {
    auto r = engine().Get({.ns = "w", .key = "k"});
    if (!r.ok() || r->outcome != Outcome::kFound) ++missed;
    ++gets;
  }
  mover.Stop();
  EXPECT_GT(mover.moves(), 1000);
  EXPECT_EQ(0, missed) << "of " << gets << " Gets during " << mover.moves() << " moves";
}

// --- Key filters (window_key_filter.h) -----------------------------------------------------

// RocksDB's counts of what `run` did on this thread.
template <typename Run>
rocksdb::PerfContext PerfCountsOf(Run run) {
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
  rocksdb::get_perf_context()->Reset();
  run();
  rocksdb::PerfContext counts = *rocksdb::get_perf_context();
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  return counts;
}

// Memtables queried by the lookups of `run` on this thread: one per family that holds anything
// and is read. Every window here has records in its memtable, so a window the lookup reads
// counts.
template <typename Run>
uint64_t MemtablesRead(Run run) {
  return PerfCountsOf(run).get_from_memtable_count;
}

// Holds ExpiryWindows::FillFilters back (the filters of windows opened with the database stay
// not ready) until Release, or until it goes out of scope, before the engine closes.
class HeldFilterFill {
 public:
  HeldFilterFill() : released_(release_.get_future().share()) {
    ExpiryWindows::SetBeforeFillForTesting([f = released_] { f.wait(); });
  }
  ~HeldFilterFill() {
    Release();
    ExpiryWindows::SetBeforeFillForTesting(nullptr);
  }
  void Release() {
    if (!done_) release_.set_value();
    done_ = true;
  }

 private:
  std::promise<void> release_;
  std::shared_future<void> released_;
  bool done_ = false;
};

class WindowFiltersTest : public ExpiryWindowsTest {
 protected:
  static constexpr int kWindows = 4;
  static constexpr int kPerWindow = 50;

  // TTLs that end in kWindows different windows.
  static int64_t TtlOfWindow(int w) { return (2 + 5 * w) * kMinute; }
  static std::string KeyIn(int w, int i) {
    return "k" + std::to_string(w) + "-" + std::to_string(i);
  }

  // kPerWindow records in each of kWindows windows (the first half flushed, the rest in the
  // memtables) and one that never expires, so the default family's memtable holds something too.
  void Fill() {
    for (int half = 0; half < 2; ++half) {
      for (int w = 0; w < kWindows; ++w) {
        for (int i = half * kPerWindow / 2; i < (half + 1) * kPerWindow / 2; ++i) {
          Put("w", KeyIn(w, i), TtlOfWindow(w));
        }
      }
      if (half == 0) ASSERT_OK(engine().Flush());
    }
    Put("w", "forever", kForever);
  }
  // The records Fill wrote that Found does not find.
  std::vector<std::string> Missing() {
    std::vector<std::string> missing;
    for (int w = 0; w < kWindows; ++w) {
      for (int i = 0; i < kPerWindow; ++i) {
        if (Found("w", KeyIn(w, i)) != "FOUND") missing.push_back(KeyIn(w, i));
      }
    }
    if (Found("w", "forever") != "FOUND") missing.push_back("forever");
    return missing;
  }
  // Memtables read by `n` inserts of new keys, round the windows.
  uint64_t MemtablesReadByNewInserts(int n, std::string_view prefix) {
    return MemtablesRead([&] {
      for (int i = 0; i < n; ++i)
        Put("w", std::string(prefix) + std::to_string(i), TtlOfWindow(i % kWindows));
    });
  }
};

TEST_F(WindowFiltersTest, AnInsertOfANewKeyReadsOnlyTheDefaultFamily) {
  Fill();
  constexpr int kInserts = 40;
  const uint64_t read = MemtablesReadByNewInserts(kInserts, "new");
  // The default family's memtable once per insert; a window's only on a false positive (~1 %).
  EXPECT_GE(read, uint64_t{kInserts}) << "the lookups did not read the default family";
  EXPECT_LE(read, uint64_t{kInserts} + kInserts / 8)
      << "without the filters: about " << kInserts * (kWindows + 1);
}

TEST_F(WindowFiltersTest, RecordsInEveryWindowAreFoundAfterAReopenBeforeAndOnceFiltersAreReady) {
  Fill();
  HeldFilterFill held;
  Reopen();
  EXPECT_EQ(Names{}, Missing()) << "filters not ready";
  // Written to windows opened with the database while their filters wait to be filled (the
  // reopen flushed the memtables: these make every family's memtable hold something again).
  for (int w = 0; w < kWindows; ++w) Put("w", "during-fill" + std::to_string(w), TtlOfWindow(w));
  Put("w", "forever-too", kForever);
  // Not ready: a new key is looked up in every window.
  EXPECT_GE(MemtablesReadByNewInserts(8, "while-held"), 8u * (kWindows + 1));
  held.Release();
  ASSERT_OK(engine().WaitForBackgroundWork(30'000));
  EXPECT_EQ(Names{}, Missing()) << "filters ready";
  for (int i = 0; i < 8; ++i) EXPECT_EQ("FOUND", Found("w", "while-held" + std::to_string(i)));
  for (int w = 0; w < kWindows; ++w) {
    EXPECT_EQ("FOUND", Found("w", "during-fill" + std::to_string(w)));
  }
  constexpr int kInserts = 40;
  EXPECT_LE(MemtablesReadByNewInserts(kInserts, "after"), uint64_t{kInserts} + kInserts / 8)
      << "the filters of the reopened windows are not in use";
}

// Moves between windows opened with the database, while their filters go from not ready (the
// fill held back) to filled, and Gets, alone and batched (MultiGet), look for the record.
TEST_F(WindowFiltersTest, GetsRacingMovesWhileFiltersAreFilledAlwaysFindTheRecord) {
  Put("w", "k", 10 * kMinute);
  Put("w", "other", 30 * kMinute);  // both windows exist before the reopen
  HeldFilterFill held;
  Reopen();
  RecordMover mover(engine());
  const std::vector<Op> batch{Op::Get({.ns = "w", .key = "absent"}),
                              Op::Get({.ns = "w", .key = "k"})};
  // Lookups until the mover has made its moves too (however the threads are scheduled), bounded.
  int missed = 0;
  int i = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (; (i < 20'000 || mover.moves() <= 100) && std::chrono::steady_clock::now() < deadline; ++i) {
    if (i == 5'000) held.Release();
    if (i % 2 == 0) {
      auto r = engine().Get({.ns = "w", .key = "k"});
      if (!r.ok() || r->outcome != Outcome::kFound) ++missed;
    } else {
      std::vector<Result<OpResult>> results;
      if (!engine().Apply(batch, &results).ok() || !results[1].ok() ||
          results[1]->outcome != Outcome::kFound) {
        ++missed;
      }
    }
  }
  mover.Stop();
  ASSERT_OK(engine().WaitForBackgroundWork(30'000));
  EXPECT_GT(mover.moves(), 100);
  EXPECT_EQ(0, missed) << "of " << i << " lookups during " << mover.moves() << " moves";
}

// The default family takes only a clock mark now and then; a WAL file stays until every family
// with writes in it has flushed them, so the WAL must be bounded by size, not by the default
// family's memtable filling up.
TEST_F(ExpiryWindowsTest, TheWalStaysBoundedWhileOnlyWindowsTakeWrites) {
  options_.write_buffer_bytes = 256 << 10;
  Reopen();
  const std::string payload(1000, 'p');
  for (int i = 0; i < 8000; ++i) {  // ~8 MB: 32 memtables
    auto r = engine().Insert({.ns = "w",
                              .key = "k" + std::to_string(i),
                              .status = "S",
                              .payload = payload,
                              .ttl = testing::TtlMs(10 * kMinute)});
    ASSERT_EQ("INSERTED", Name(r));
  }
  ASSERT_OK(engine().WaitForBackgroundWork(30'000));
  auto stats = engine().Stats();
  ASSERT_OK(stats.status());
  EXPECT_LT(stats->wal_bytes, 8 * options_.write_buffer_bytes) << stats->wal_bytes;
}

// Every window family has its own memtables, and all of them draw on one budget: a memtable
// that holds little must cost little of it, or a store with many windows keeps flushing full
// memtables early (and tiny ones), which is the compaction work windows exist to avoid.
TEST_F(ExpiryWindowsTest, WindowsThatHoldLittleCostLittleMemtableMemory) {
  options_.write_buffer_bytes = 64 << 20;
  Reopen();
  constexpr int kWindows = 12;
  for (int w = 0; w < kWindows; ++w) Put("w", "k" + std::to_string(w), (2 + w) * kMinute);
  auto stats = engine().Stats();
  ASSERT_OK(stats);
  ASSERT_GE(stats->expiry_windows, static_cast<uint64_t>(kWindows));
  // One record each: an arena block (1 MiB) and the hash buckets (a 16th of the write buffer).
  const uint64_t kPerWindowWithARecord = (1 << 20) + options_.write_buffer_bytes / 16;
  EXPECT_LE(stats->memtable_bytes, (kWindows + 1) * (kPerWindowWithARecord + (256 << 10)));
  ASSERT_OK(engine().Flush());
  stats = engine().Stats();
  ASSERT_OK(stats);
  EXPECT_LE(stats->memtable_bytes, (kWindows + 1) * (64 << 10)) << "the windows' empty memtables";
}

TEST_F(ExpiryWindowsTest, DeleteRemovesTheRecordFromItsWindow) {
  Put("w", "k", 5 * kMinute);
  Put("w", "moved", 2 * kMinute);
  Touch("w", "moved", 40 * kMinute);
  EXPECT_EQ("DELETED", Name(engine().Delete({.ns = "w", .key = "k"})));
  EXPECT_EQ("DELETED", Name(engine().Delete({.ns = "w", .key = "moved"})));
  EXPECT_EQ("NOT_FOUND", Found("w", "k"));
  EXPECT_EQ("NOT_FOUND", Found("w", "moved"));
  Inspect([&](const RawDb& raw) {
    EXPECT_EQ(Names{}, raw.Holders("w", "k"));
    EXPECT_EQ(Names{}, raw.Holders("w", "moved"));
  });
  EXPECT_EQ("NOT_FOUND", Found("w", "k"));
}

TEST_F(ExpiryWindowsTest, OneBatchWritesToSeveralWindowsInOneWrite) {
  Put("w", "moved", 2 * kMinute);
  auto before = engine().Stats();
  ASSERT_OK(before);
  std::vector<Op> ops = {
      Op::Insert({.ns = "w", .key = "a", .status = "S", .ttl = std::chrono::minutes(2)}),
      Op::Insert({.ns = "w", .key = "b", .status = "S", .ttl = std::chrono::minutes(30)}),
      Op::Insert({.ns = "w", .key = "c", .status = "S", .ttl = Ttl::Forever()}),
      Op::CompareAndSet({.ns = "w", .key = "moved", .update = {.ttl = std::chrono::hours(3)}}),
      Op::Get({.ns = "w", .key = "a"}),
      Op::Insert({.ns = "w", .key = "b", .status = "S"}),
  };
  std::vector<Result<OpResult>> results;
  ASSERT_OK(engine().Apply(ops, &results));
  ASSERT_EQ(6u, results.size());
  EXPECT_EQ("INSERTED", Name(results[0]));
  EXPECT_EQ("INSERTED", Name(results[1]));
  EXPECT_EQ("INSERTED", Name(results[2]));
  EXPECT_EQ("APPLIED", Name(results[3]));
  EXPECT_EQ("FOUND", Name(results[4]));   // sees the insert before it
  EXPECT_EQ("EXISTS", Name(results[5]));  // as does this
  auto after = engine().Stats();
  ASSERT_OK(after);
  EXPECT_EQ(1u, after->writes - before->writes);  // every window's change in one write batch
  Inspect([&](const RawDb& raw) {
    EXPECT_EQ(Names{WindowOf(Now() + 2 * kMinute)}, raw.Holders("w", "a"));
    EXPECT_EQ(Names{WindowOf(Now() + 30 * kMinute)}, raw.Holders("w", "b"));
    EXPECT_EQ(Names{"default"}, raw.Holders("w", "c"));
    EXPECT_EQ(Names{WindowOf(Now() + 3 * kHour)}, raw.Holders("w", "moved"));
  });
}

// --- Migration ---------------------------------------------------------------------------------

TEST_F(ExpiryWindowsTest, LeveledDatabaseServedUnderWindowsMovesARecordOnItsNextWrite) {
  UseLayout(Layout::kLeveled);
  std::vector<int64_t> deaths;
  for (int i = 0; i < 20; ++i)
    deaths.push_back(Put("w", "k" + std::to_string(i), (i + 2) * kMinute));
  Put("w", "forever", kForever);
  UseLayout(Layout::kExpiryWindows);
  for (int i = 0; i < 20; ++i) EXPECT_EQ("FOUND", Found("w", "k" + std::to_string(i)));
  EXPECT_EQ("FOUND", Found("w", "forever"));

  Touch("w", "k3");  // a write without a new TTL: the record moves to the window of its death
  const int64_t moved = Touch("w", "k7", kHour);
  Inspect([&](const RawDb& raw) {
    EXPECT_EQ(Names{WindowOf(deaths[3])}, raw.Holders("w", "k3"));
    EXPECT_EQ(Names{WindowOf(moved)}, raw.Holders("w", "k7"));
    EXPECT_EQ(Names{"default"}, raw.Holders("w", "k4"));  // not written: still where it was
    EXPECT_EQ(Names{"default"}, raw.Holders("w", "forever"));
  });
  for (int i = 0; i < 20; ++i) EXPECT_EQ("FOUND", Found("w", "k" + std::to_string(i))) << i;
  clock_->Set(deaths[3]);
  EXPECT_EQ("NOT_FOUND", Found("w", "k3"));
  EXPECT_EQ("FOUND", Found("w", "k4"));
}

TEST_F(ExpiryWindowsTest, WindowsDatabaseServedUnderLeveledMovesARecordBackOnItsNextWrite) {
  const int64_t a = Put("w", "a", 5 * kMinute);
  const int64_t b = Put("w", "b", 7 * kMinute);
  UseLayout(Layout::kLeveled);
  EXPECT_EQ("FOUND", Found("w", "a"));
  EXPECT_EQ("FOUND", Found("w", "b"));
  Touch("w", "a");
  Inspect([&](const RawDb& raw) {
    EXPECT_EQ(Names{"default"}, raw.Holders("w", "a"));
    EXPECT_EQ(Names{WindowOf(b)}, raw.Holders("w", "b"));  // not written: still in its window
  });
  EXPECT_EQ("FOUND", Found("w", "b"));
  auto got = engine().Get({.ns = "w", .key = "a"});
  ASSERT_EQ("FOUND", Name(got));
  EXPECT_EQ("T", got->record->status);
  EXPECT_EQ(a, got->record->expires_at_ms);
}

// Adds a column family named `name` to the closed database at `path` (`add` false: drops it), as
// a program other than the engine could.
rocksdb::Status ChangeFamilyRaw(const std::string& path, const std::string& name, bool add) {
  std::vector<std::string> names;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names);
  if (!s.ok()) return s;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const std::string& n : names) families.emplace_back(n, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  s = rocksdb::DB::Open(rocksdb::DBOptions(), path, families, &handles, &raw);
  if (!s.ok()) return s;
  std::unique_ptr<rocksdb::DB> db(raw);
  if (add) {
    rocksdb::ColumnFamilyHandle* added = nullptr;
    s = db->CreateColumnFamily(rocksdb::ColumnFamilyOptions(), name, &added);
    if (s.ok()) handles.push_back(added);
  }
  for (rocksdb::ColumnFamilyHandle* handle : handles) {
    if (!add && handle->GetName() == name && s.ok()) s = db->DropColumnFamily(handle);
    db->DestroyColumnFamilyHandle(handle);
  }
  return s;
}

TEST_F(ExpiryWindowsTest, OpenRefusesAColumnFamilyItDoesNotKnow) {
  Put("w", "k", kForever);
  engine_.reset();
  for (const std::string name : {"foo", "expires-", "expires-soon"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(ChangeFamilyRaw(dir_.Sub("db"), name, /*add=*/true).ok());
    for (Layout layout : {Layout::kExpiryWindows, Layout::kLeveled}) {
      options_.layout = layout;
      auto refused = ServingEngine::Open(dir_.Sub("db"), options_);
      ASSERT_FALSE(refused.ok());
      EXPECT_EQ(Status::Code::kCorruption, refused.status().code()) << refused.status().ToString();
      EXPECT_NE(std::string::npos, refused.status().message().find(name))
          << refused.status().ToString();
    }
    ASSERT_TRUE(ChangeFamilyRaw(dir_.Sub("db"), name, /*add=*/false).ok());
  }
  options_.layout = Layout::kExpiryWindows;
  Open();  // nothing was changed by the refusals
  EXPECT_EQ("FOUND", Found("w", "k"));
}

// --- Stats, scans, purges ----------------------------------------------------------------------

TEST_F(ExpiryWindowsTest, StatsCountTheWindowsAndTheirBytes) {
  std::mt19937 rng(23);
  constexpr int kPerWindow = 100;
  constexpr size_t kPayloadBytes = 1024;
  for (int w = 0; w < 3; ++w) {
    for (int i = 0; i < kPerWindow; ++i) {
      std::string payload(kPayloadBytes, '\0');
      for (char& c : payload) c = static_cast<char>(rng());  // incompressible
      auto r = engine().Insert({.ns = "w",
                                .key = "k" + std::to_string(w) + "-" + std::to_string(i),
                                .status = "S",
                                .payload = payload,
                                .ttl = std::chrono::minutes(2 + 5 * w)});
      ASSERT_EQ("INSERTED", Name(r));
    }
  }
  constexpr uint64_t kBytes = 3 * kPerWindow * kPayloadBytes;
  auto stats = engine().Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(3u, stats->expiry_windows);
  EXPECT_GE(stats->memtable_bytes, kBytes);
  // Three windows' key filters at their smallest size (window_key_filter.h).
  EXPECT_EQ(3 * WindowKeyFilter::kMinKeys * 10 / 8, stats->expiry_window_filter_bytes);
  ASSERT_OK(engine().Flush());  // every family's memtable
  ASSERT_OK(engine().WaitForBackgroundWork(10'000));
  stats = engine().Stats();
  ASSERT_OK(stats);
  EXPECT_GE(stats->sst_bytes, kBytes);
  EXPECT_GE(stats->live_sst_bytes, kBytes);
  EXPECT_GE(stats->estimated_live_records, 3u * kPerWindow);
  EXPECT_GT(stats->flush_bytes_written, kBytes);

  clock_->Advance(kHour);
  EXPECT_EQ(3u, Reclaim());
  stats = engine().Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(0u, stats->expiry_windows);
  EXPECT_LT(stats->sst_bytes, kBytes / 10);          // the files left with their windows
  EXPECT_EQ(0u, stats->expiry_window_filter_bytes);  // and the filters with them
}

// A wide window is flushed many times while it takes writes. Merging those files rewrites their
// bytes, the write amplification the layout exists to avoid, so they stay as they are until
// expiry_window_merge_files of them have accumulated, and are merged once then.
class WindowMergeTest : public ExpiryWindowsTest {
 protected:
  // `count` flushes of 10 records each into the window of a 5-minute TTL.
  void Flushes(int from, int count) {
    for (int f = from; f < from + count; ++f) {
      for (int i = 0; i < 10; ++i) Put("w", Key(f, i), 5 * kMinute);
      ASSERT_OK(engine().Flush());
      ASSERT_OK(engine().WaitForBackgroundWork(10'000));
    }
  }
  static std::string Key(int flush, int i) {
    return "f" + std::to_string(flush) + "-" + std::to_string(i);
  }
  uint64_t WindowFiles() {
    auto report = engine().ReclaimExpired();
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? report->window_files_max : 0;
  }
  // WindowFiles once the window's merge, if one is due, has run: a flush schedules it as it ends,
  // and WaitForBackgroundWork does not wait for a window's pending compaction (its comment says
  // why), so the merge may start just after it returns. Bounded: 10 s, then whatever is there.
  uint64_t WindowFilesOnceAtMost(uint64_t files) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    uint64_t now = WindowFiles();
    while (now > files && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      EXPECT_TRUE(engine().WaitForBackgroundWork(10'000).ok());
      now = WindowFiles();
    }
    return now;
  }
  uint64_t CompactedBytes() {
    auto stats = engine().Stats();
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    return stats.ok() ? stats->compaction_bytes_written : 0;
  }
};

TEST_F(WindowMergeTest, AWindowKeepsItsFlushedFilesUntilTheMergeCountThenMergesThemOnce) {
  options_.expiry_window_merge_files = 6;
  Reopen();
  Flushes(0, 5);
  EXPECT_EQ(5u, WindowFiles());
  EXPECT_EQ(0u, CompactedBytes());

  Flushes(5, 1);  // the sixth: merged into one
  EXPECT_EQ(1u, WindowFilesOnceAtMost(1));
  const uint64_t merged = CompactedBytes();
  EXPECT_GT(merged, 0u);

  Flushes(6, 5);  // five more stay as they are, and the merged file is not rewritten
  EXPECT_EQ(6u, WindowFiles());
  EXPECT_EQ(merged, CompactedBytes());
  for (int f = 0; f < 11; ++f) EXPECT_EQ("FOUND", Found("w", Key(f, 9))) << f;
}

TEST_F(WindowMergeTest, ZeroNeverMergesAWindowsFiles) {
  options_.expiry_window_merge_files = 0;
  Reopen();
  Flushes(0, 40);  // well past RocksDB's own default trigger (4 files)
  EXPECT_EQ(40u, WindowFiles());
  EXPECT_EQ(0u, CompactedBytes());
  for (int f = 0; f < 40; ++f) EXPECT_EQ("FOUND", Found("w", Key(f, 0))) << f;
}

// A table file's Bloom filter is about 10 bits per record: a window merged into one file of
// millions of records has a filter of megabytes, more than a shard of the block cache can keep.
// A lookup must not read it again (measured before: the whole 10 MB filter read and checksummed
// by every lookup that reached the file, three quarters of the server's CPU). Here a cache far
// smaller than one file's filter stands for that.
class LargeTableFilesTest : public WindowMergeTest {
 protected:
  static constexpr int kRecords = 120'000;  // a filter of ~150 KB in one file

  // Block bytes read from table files by `gets` lookups of records in the file, per lookup.
  uint64_t BytesReadPerLookup(int gets) {
    std::mt19937 random(7);
    const rocksdb::PerfContext perf = PerfCountsOf([&] {
      for (int i = 0; i < gets; ++i) {
        const std::string key = "r" + std::to_string(random() % kRecords);
        EXPECT_EQ("FOUND", Found("w", key)) << key;
      }
    });
    return perf.block_read_byte / gets;
  }
  // Writes `records` keys `prefix`0... to window "w" in `flushes` files, then lets it merge them.
  void Fill(int flushes, const std::string& prefix = "r", int records = kRecords) {
    for (int f = 0; f < flushes; ++f) {
      for (int i = f; i < records; i += flushes) Put("w", prefix + std::to_string(i), 5 * kMinute);
      ASSERT_OK(engine().Flush());
    }
    ASSERT_OK(engine().WaitForBackgroundWork(60'000));
  }
};

TEST_F(LargeTableFilesTest, ALookupInAMergedWindowDoesNotReadItsWholeFilter) {
  options_.expiry_window_merge_files = 4;
  options_.block_cache_bytes = 32 << 10;
  // RocksDB pins flushed files' filters; a merged file larger than 1.5 write buffers is not a
  // flushed file to it.
  options_.write_buffer_bytes = 256 << 10;
  Reopen();
  Fill(4);
  ASSERT_GT(CompactedBytes(), 0u) << "no window file was merged";
  EXPECT_LT(BytesReadPerLookup(200), 32u << 10);
}

// A window of many records holds merged files of millions of records next to its flushed ones,
// all spanning the key range, and a hit checks the filter of every newer file. Those filters
// must be in memory, not behind the block cache: RocksDB pins only flushed files' filters, so a
// merged file's was looked up in the cache (a partition of it) or read again by every lookup,
// and with 11M records in one window these checks took a quarter of the server's CPU.
TEST_F(LargeTableFilesTest, AHitChecksTheNewerMergedFilesFiltersWithoutTheBlockCache) {
  options_.expiry_window_merge_files = 4;
  options_.write_buffer_bytes = 256 << 10;  // merged files are then > 1.5 write buffers
  Reopen();
  Fill(4, "a", kRecords / 2);  // merged files, then newer ones of "b"
  Fill(4, "b", kRecords / 2);
  ASSERT_GT(CompactedBytes(), 0u) << "no window file was merged";
  const rocksdb::PerfContext perf = PerfCountsOf([&] {
    for (int i = 0; i < 100; ++i) EXPECT_EQ("FOUND", Found("w", "a" + std::to_string(i * 557)));
  });
  EXPECT_GE(perf.bloom_sst_hit_count + perf.bloom_sst_miss_count, 100u)
      << "a hit checks its file's filter, after newer files'";
  EXPECT_EQ(0u, perf.block_cache_filter_hit_count);
  EXPECT_EQ(0u, perf.filter_block_read_count);
}

// The window files' filters and indexes are memory the operator must see.
TEST_F(LargeTableFilesTest, StatsCountTheWindowFilesMetadataHeldInMemory) {
  options_.expiry_window_merge_files = 0;
  Reopen();
  Fill(2);
  auto stats = engine().Stats();
  ASSERT_OK(stats);
  EXPECT_GE(stats->table_readers_bytes, uint64_t(kRecords) * 10 / 8) << "at least the filters";
}

TEST_F(WindowMergeTest, OpenRefusesAMergeCountOutsideItsRange) {
  engine_.reset();
  for (int n : {-1, 1, EngineOptions::kMaxExpiryWindowMergeFiles + 1}) {
    options_.expiry_window_merge_files = n;
    auto refused = ServingEngine::Open(dir_.Sub("refused"), options_);
    ASSERT_FALSE(refused.ok()) << n;
    EXPECT_EQ(Status::Code::kInvalidArgument, refused.status().code()) << n;
    EXPECT_NE(std::string::npos, refused.status().message().find("expiry_window_merge_files"))
        << refused.status().ToString();
  }
  for (int n : {0, 2, EngineOptions::kMaxExpiryWindowMergeFiles}) {
    options_.expiry_window_merge_files = n;
    ASSERT_OK(ServingEngine::Open(dir_.Sub("accepted-" + std::to_string(n)), options_));
  }
}

TEST_F(ExpiryWindowsTest, ScanSeesEveryFamilyInKeyOrderOnceAndPurgeEmptiesThemAll) {
  std::map<std::string, std::string> expected;  // key -> payload
  UseLayout(Layout::kLeveled);
  for (int i = 0; i < 10; ++i) Put("w", "k0" + std::to_string(i), 5 * kMinute);  // default
  UseLayout(Layout::kExpiryWindows);
  for (int i = 0; i < 10; ++i) Put("w", "k1" + std::to_string(i), (i + 2) * kMinute);  // windows
  for (int i = 0; i < 5; ++i) Put("w", "k2" + std::to_string(i), kForever);            // default
  Touch("w", "k03", 2 * kHour);  // default -> window
  Touch("w", "k12", 3 * kHour);  // window -> window
  Put("w", "k30", 30 * kSecond);
  for (int i = 0; i < 10; ++i)
    expected["k0" + std::to_string(i)] = PayloadOf("k0" + std::to_string(i));
  for (int i = 0; i < 10; ++i)
    expected["k1" + std::to_string(i)] = PayloadOf("k1" + std::to_string(i));
  for (int i = 0; i < 5; ++i)
    expected["k2" + std::to_string(i)] = PayloadOf("k2" + std::to_string(i));
  Put("x", "other-namespace", 5 * kMinute);
  clock_->Advance(30 * kSecond);  // k30 expired, its window not dropped

  using KeysAndPayloads = std::vector<std::pair<std::string, std::string>>;
  KeysAndPayloads seen;
  std::string cursor;
  do {
    auto page = engine().Scan({.ns = "w", .cursor = cursor, .limit = 7});
    ASSERT_OK(page);
    for (const ScanEntry& e : page->records) seen.emplace_back(e.key, e.record.payload);
    cursor = page->cursor;
  } while (!cursor.empty());
  const KeysAndPayloads in_order(expected.begin(), expected.end());
  EXPECT_EQ(in_order, seen);

  uint64_t deleted = 0;
  do {
    auto step = engine().Purge({.ns = "w", .cursor = cursor});
    ASSERT_OK(step);
    deleted += step->deleted;
    cursor = step->cursor;
  } while (!cursor.empty());
  EXPECT_EQ(expected.size(), deleted);
  for (const auto& [key, payload] : expected) EXPECT_EQ("NOT_FOUND", Found("w", key));
  EXPECT_EQ("FOUND", Found("x", "other-namespace"));
  Inspect([&](const RawDb& raw) {
    for (const auto& [key, payload] : expected) EXPECT_EQ(Names{}, raw.Holders("w", key)) << key;
  });
}

// --- A crash during a drop -----------------------------------------------------------------------

// Every record of the plan that is live at `now_ms` is readable with its payload; the names of
// the records that are not.
std::vector<std::string> MissingLiveRecords(Engine& engine, int64_t now_ms) {
  using namespace testing;
  std::vector<std::string> missing;
  auto expect_found = [&](const std::string& key) {
    auto r = engine.Get({.ns = kCrashNs, .key = key});
    if (!r.ok() || r->outcome != Outcome::kFound || r->record->payload != CrashPayload(key)) {
      missing.push_back(key + ": " + Name(r));
    }
  };
  for (int i = 0; i < kCrashRecords; ++i) {
    if (kCrashStartMs + CrashTtlMs(i) > now_ms) expect_found(CrashKey(i));
  }
  for (int i = 0; i < kCrashForeverRecords; ++i) expect_found(CrashForeverKey(i));
  return missing;
}

// The windows the plan's records need at `now_ms`: those whose grace has not ended.
std::vector<std::string> WindowsNeeded(int64_t now_ms) {
  using namespace testing;
  std::set<int64_t> ends;
  for (int i = 0; i < kCrashRecords; ++i) {
    const int64_t end = WindowEnd(kCrashStartMs + CrashTtlMs(i), kCrashWidthMs);
    if (end > now_ms - kCrashGraceMs) ends.insert(end);
  }
  std::vector<std::string> names;
  for (int64_t end : ends) names.push_back(WindowFamily(end));
  return names;
}

// Writes the plan's records into a new database at `path`, all at kCrashStartMs.
void WriteCrashDatabase(const std::string& path) {
  using namespace testing;
  auto engine =
      Engine::Open(path, CrashEngineOptions(std::make_shared<ManualClock>(kCrashStartMs)));
  ASSERT_OK(engine);
  for (int i = 0; i < kCrashRecords + kCrashForeverRecords; ++i) {
    const bool forever = i >= kCrashRecords;
    const std::string key = forever ? CrashForeverKey(i - kCrashRecords) : CrashKey(i);
    auto r = (*engine)->Insert(
        {.ns = kCrashNs,
         .key = key,
         .status = "DONE",
         .payload = CrashPayload(key),
         .ttl = forever ? Ttl::Forever() : Ttl(std::chrono::milliseconds(CrashTtlMs(i)))});
    ASSERT_EQ("INSERTED", Name(r)) << key;
  }
}

// Starts the child (expiry_windows_crash_child.cc) on `path`, reporting into `report_fd`.
pid_t StartCrashChild(const std::string& path, int report_fd) {
  return testing::StartChildProcess({EXPIRY_WINDOWS_CRASH_CHILD, path, std::to_string(report_fd)});
}

TEST(ExpiryWindowsCrashTest, KillDuringDropsLosesNoLiveRecordAndTheDropsFinishLater) {
  using namespace testing;
  TempDir dir;
  // Written once (creating a window family costs tens of milliseconds); each run kills a copy.
  ASSERT_NO_FATAL_FAILURE(WriteCrashDatabase(dir.Sub("written")));
  for (int run = 0; run < 10; ++run) {
    std::mt19937 rng(run);  // a different, reproducible moment each run
    // Steps 3.. each drop a window. The kill comes a random part of one step's duration (the
    // one before, as measured here) after step k began: in the middle of that drop, or of the
    // next, with windows left to drop.
    const int kill_after_step = std::uniform_int_distribution<int>(4, 20)(rng);
    const double into_step = std::uniform_real_distribution<double>(0, 1)(rng);
    SCOPED_TRACE("run " + std::to_string(run) + ": killed " + std::to_string(into_step) +
                 " of a step into step " + std::to_string(kill_after_step));
    const std::string path = dir.Sub("run" + std::to_string(run));
    std::filesystem::copy(dir.Sub("written"), path);

    int fds[2];
    ASSERT_EQ(0, pipe(fds));
    ASSERT_EQ(0, fcntl(fds[0], F_SETFD, FD_CLOEXEC));
    const pid_t pid = StartCrashChild(path, fds[1]);
    ASSERT_GT(pid, 0);
    close(fds[1]);
    // Report 0: the database is open; report k: step k's drop is starting.
    std::vector<int64_t> reports;
    std::vector<std::chrono::steady_clock::time_point> received;
    int64_t now_ms = 0;
    while (static_cast<int>(reports.size()) <= kill_after_step &&
           read(fds[0], &now_ms, sizeof now_ms) == sizeof now_ms) {
      reports.push_back(now_ms);
      received.push_back(std::chrono::steady_clock::now());
    }
    if (received.size() >= 2) {
      std::this_thread::sleep_for((received.back() - received[received.size() - 2]) * into_step);
    }
    ASSERT_EQ(0, kill(pid, SIGKILL));
    while (read(fds[0], &now_ms, sizeof now_ms) == sizeof now_ms) reports.push_back(now_ms);
    close(fds[0]);
    int wstatus = 0;
    ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "the child exited with " << WEXITSTATUS(wstatus);
    ASSERT_GT(static_cast<int>(reports.size()), kill_after_step);
    const int64_t last = reports.back();  // the latest clock a drop may have run at
    ASSERT_FALSE(WindowsNeeded(last).empty()) << "the child got through every drop before the kill";

    auto clock = std::make_shared<ManualClock>(last - kCrashGraceMs);
    {
      auto engine = Engine::Open(path, CrashEngineOptions(clock));
      ASSERT_TRUE(engine.ok()) << engine.status().ToString();
      // A restart may continue up to the grace behind the clock of the killed drop.
      EXPECT_EQ(std::vector<std::string>{}, MissingLiveRecords(**engine, clock->NowMillis()));
      clock->Set(last);
      ASSERT_OK((*engine)->ReclaimExpired());  // finishes what the killed drop left
      clock->Set(last - kCrashGraceMs);
      EXPECT_EQ(std::vector<std::string>{}, MissingLiveRecords(**engine, clock->NowMillis()));
    }
    RawDb raw(path);
    EXPECT_EQ(WindowsNeeded(last), raw.Windows());
  }
}

}  // namespace
}  // namespace idem
