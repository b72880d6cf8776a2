// The engine under EngineOptions::Layout::kJournal: records live in the journal (the operations'
// rules are the conformance suite's, run under this layout too: tests/net/store_conformance.h),
// dead ones leave the disk with their segments, live ones never do, a database of one kind of
// layout is never opened with the other, and a leveled or window database is converted whole,
// whatever point a crash interrupts the conversion at. Time moves only through the ManualClock.
#include "journal_layout.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "engine_open.h"
#include "journal.h"
#include "journal_conversion.h"
#include "support/engine_fixture.h"
#include "support/journal_fault_fs.h"

namespace idem {
namespace {

using testing::Name;

class JournalLayoutTest : public testing::EngineTest {
 protected:
  JournalLayoutTest() { testing::UseSmallJournal(&options_); }

  StoreStats Stats() {
    Result<StoreStats> stats = engine().Stats();
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    return stats.ok() ? *stats : StoreStats{};
  }
  ReclaimReport Reclaim() {
    Result<ReclaimReport> report = engine().ReclaimExpired();
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? *report : ReclaimReport{};
  }
  // `n` records of about 1 KiB in namespace "short" (they die 1 s after they are written),
  // keys prefix0 .. prefix<n-1>.
  void WriteShortLived(const std::string& prefix, int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ("INSERTED",
                Insert("short", prefix + std::to_string(i), "S", std::string(1000, 'p')));
    }
  }
};

TEST_F(JournalLayoutTest, RecordsAreInTheJournalAndSurviveAReopen) {
  WriteShortLived("k", 200);  // ~200 KiB: several 64 KiB segments
  ASSERT_EQ("INSERTED", Insert("forever", "f", "S", "", "", kForever));
  StoreStats stats = Stats();
  EXPECT_EQ(201u, stats.estimated_live_records);
  EXPECT_GE(stats.journal_segments, 3u);
  EXPECT_GT(stats.journal_bytes, 200u * 1000);
  EXPECT_GE(stats.sst_bytes, stats.journal_bytes);
  EXPECT_GT(stats.journal_index_bytes, 0u);
  EXPECT_EQ(0u, stats.flush_bytes_written);  // nothing is flushed: RocksDB holds no record
  Reopen();
  for (int i = 0; i < 200; ++i) EXPECT_EQ("FOUND", Get("short", "k" + std::to_string(i))) << i;
  EXPECT_EQ("FOUND", Get("forever", "f"));
  EXPECT_EQ(201u, Stats().estimated_live_records);
}

// A clean close saves the journal's index and the next open loads it instead of replaying the
// journal, and deletes it (journal_saved_index.h: what a crash leaves is replayed).
TEST_F(JournalLayoutTest, ACleanCloseSavesTheIndexAndTheNextOpenLoadsIt) {
  // Outlives the test's body: the fixture's close logs too.
  auto events = std::make_shared<std::vector<std::string>>();
  options_.log = [events](const LogRecord& record) {
    if (record.event.starts_with("journal_index")) events->push_back(record.event);
  };
  Reopen();
  events->clear();
  WriteShortLived("k", 200);
  Reopen();
  EXPECT_EQ((std::vector<std::string>{"journal_index_saved", "journal_index_loaded"}), *events);
  for (int i = 0; i < 200; ++i) ASSERT_EQ("FOUND", Get("short", "k" + std::to_string(i))) << i;
  EXPECT_TRUE(std::filesystem::exists(JournalDir(dir_.Sub("db")) + "/index"));  // for later opens
}

// While the engine runs, a reclaim pass saves the index once journal_index_save_interval_ms of
// engine time has passed since the open or the last save (0: only at a clean close).
TEST_F(JournalLayoutTest, AReclaimPassSavesTheIndexOnceTheIntervalHasPassed) {
  const std::string index = JournalDir(dir_.Sub("db")) + "/index";
  options_.journal_index_save_interval_ms = 600'000;
  Reopen();
  std::filesystem::remove(index);  // the close's
  WriteShortLived("k", 50);
  EXPECT_FALSE(Reclaim().journal_index_saved);
  clock_->Advance(599'999);
  EXPECT_FALSE(Reclaim().journal_index_saved);
  EXPECT_FALSE(std::filesystem::exists(index));
  clock_->Advance(1);
  EXPECT_TRUE(Reclaim().journal_index_saved);
  EXPECT_TRUE(std::filesystem::exists(index));
  EXPECT_FALSE(Reclaim().journal_index_saved);  // due again 10 minutes later
  clock_->Advance(600'000);
  EXPECT_TRUE(Reclaim().journal_index_saved);

  options_.journal_index_save_interval_ms = 0;
  Reopen();
  clock_->Advance(24 * kHour);
  EXPECT_FALSE(Reclaim().journal_index_saved);
  options_.journal_index_save_interval_ms = -1;
  engine_.reset();
  Result<std::unique_ptr<ServingEngine>> refused = ServingEngine::Open(dir_.Sub("db"), options_);
  ASSERT_TRUE(refused.status().IsInvalidArgument()) << refused.status().ToString();
  EXPECT_NE(std::string::npos, refused.status().message().find("journal_index_save_interval_ms"));
}

// With journal_dictionary_bytes, the engine's records are stored compressed (a journal's first
// dictionary comes once 1,024 values were written, in a segment the preparing thread makes) and
// read back as written, after a reopen too.
TEST_F(JournalLayoutTest, CompressedRecordsReadBackAsWritten) {
  engine_.reset();
  options_.journal_dictionary_bytes = EngineOptions::kDefaultJournalDictionaryBytes;
  Reopen();
  auto payload = [](int i) {
    return "{\"order\":" + std::to_string(i * 7919) +
           ",\"state\":\"accepted\",\"n\":" + std::to_string(i) + "}";
  };
  int records = 0;
  auto insert = [&] {
    ASSERT_EQ("INSERTED", Insert("forever", "k" + std::to_string(records), "DONE", payload(records),
                                 "", kForever));
    ++records;
  };
  while (records < 1500) insert();
  // Appends go on into the first segment until the segment with the dictionary is there.
  while (Stats().journal_segments < 2 && records < 100'000) {
    insert();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(Stats().journal_segments, 2u);
  const uint64_t before = Stats().journal_bytes;
  for (int i = 0; i < 1500; ++i) insert();
  EXPECT_LT(Stats().journal_bytes - before, uint64_t{1500} * 120)
      << "uncompressed: ~150 bytes each";
  const int kRecords = records;
  for (int reopen = 0; reopen < 2; ++reopen) {
    for (int i = 0; i < kRecords; i += 3) {
      ASSERT_EQ(payload(i), GetRecord("forever", "k" + std::to_string(i)).payload) << i;
    }
    Reopen();
  }
}

TEST_F(JournalLayoutTest, DeadRecordsLeaveTheDiskWithTheirSegmentsAndLiveOnesStay) {
  WriteShortLived("a", 150);
  // A record whose expiry a CompareAndSet moves far out, written among the short-lived ones:
  // its segment must not go with them.
  ASSERT_EQ("INSERTED", Insert("short", "extended", "S", "", "", 1000));
  ASSERT_EQ("APPLIED",
            Name(engine().CompareAndSet(
                {.ns = "short", .key = "extended", .update = {.ttl = testing::TtlMs(10'000)}})));
  ASSERT_EQ("INSERTED", Insert("forever", "f", "S", "", "", kForever));
  WriteShortLived("b", 150);
  const StoreStats before = Stats();
  ASSERT_GE(before.journal_segments, 5u);

  clock_->Advance(999);  // nothing has died yet: no segment is dropped, no record is lost
  ReclaimReport report = Reclaim();
  EXPECT_EQ(0u, report.journal_segments_dropped);
  // (A segment may be moved out of already: its records all end within MovePolicy's minute
  // but for "f", which would keep it for ever. What is still live is appended again.)
  for (const char* prefix : {"a", "b"}) {
    for (int i = 0; i < 150; ++i) {
      ASSERT_EQ("FOUND", Get("short", prefix + std::to_string(i))) << prefix << i;
    }
  }

  clock_->Advance(1);  // every short-lived record is dead (the grace is 0 here)
  report = Reclaim();
  EXPECT_GE(report.journal_segments_dropped, 3u);
  // The segment holding the two long-lived records is moved out of once it stays more than
  // MovePolicy::min_stay_ms (an hour) for them: not yet for "extended" (10 s), for ever for "f".
  const StoreStats after = Stats();
  EXPECT_LT(after.journal_segments, before.journal_segments);
  EXPECT_LT(after.journal_bytes, before.journal_bytes / 2);
  // The index forgets the dropped segments' records (the active segment's dead ones stay in it
  // until their segment goes, or a reopen that replays the journal).
  EXPECT_LT(after.estimated_live_records, before.estimated_live_records / 2);
  EXPECT_EQ("FOUND", Get("short", "extended"));
  EXPECT_EQ("FOUND", Get("forever", "f"));
  EXPECT_EQ("NOT_FOUND", Get("short", "a0"));
  Reopen();
  EXPECT_EQ("FOUND", Get("short", "extended"));
  EXPECT_EQ("FOUND", Get("forever", "f"));
  EXPECT_EQ("NOT_FOUND", Get("short", "b149"));
  // The index as saved at the close, dead records of the active segment included.
  EXPECT_EQ(after.estimated_live_records, Stats().estimated_live_records);
}

TEST_F(JournalLayoutTest, ARecordThatNeverDiesIsMovedOutOfADeadSegmentAndKept) {
  ASSERT_EQ("INSERTED", Insert("forever", "f", "S", "kept", "", kForever));
  WriteShortLived("a", 200);
  clock_->Advance(2 * kHour);  // everything but "f" is dead, "f"'s segment would stay for ever
  ReclaimReport report = Reclaim();
  EXPECT_GE(report.journal_segments_dropped, 2u);
  EXPECT_EQ(1u, report.journal_segments_moved);  // the first segment, "f" appended again
  EXPECT_GT(Stats().compaction_bytes_written, 0u);
  EXPECT_LE(Stats().journal_segments, 1u);  // the active one, which "f" was appended to
  EXPECT_EQ("kept", GetRecord("forever", "f").payload);
  Reopen();
  EXPECT_EQ("kept", GetRecord("forever", "f").payload);
  EXPECT_EQ(1u, Stats().estimated_live_records);  // a reopen replays only what is not dead
}

// CompactAll moves what is mostly dead, not what is live.
TEST_F(JournalLayoutTest, CompactAllLeavesSegmentsOfLiveRecordsAlone) {
  // Small records: entry headers make a fully live segment of them ~80 % needed.
  for (int i = 0; i < 1500; ++i) {
    ASSERT_EQ("INSERTED",
              Insert("forever", "f" + std::to_string(i), "S", std::string(20, 'p'), "", kForever));
  }
  ASSERT_GE(Stats().journal_segments, 3u);
  ASSERT_OK(engine().CompactAll());
  EXPECT_EQ(0u, Stats().compaction_bytes_written);
}

TEST_F(JournalLayoutTest, CompactAllMovesTheSurvivorsOfMostlyDeadSegments) {
  ASSERT_EQ("INSERTED", Insert("forever", "f", "S", "", "", kForever));
  WriteShortLived("a", 100);
  ASSERT_EQ("INSERTED", Insert("forever", "g", "S", "", "", kForever));
  WriteShortLived("b", 100);
  clock_->Advance(1000);
  ASSERT_OK(engine().CompactAll());
  // What is left: the active segment and the one "f" and "g" moved into, at most.
  EXPECT_LE(Stats().journal_segments, 2u);
  EXPECT_EQ("FOUND", Get("forever", "f"));
  EXPECT_EQ("FOUND", Get("forever", "g"));
}

// Opened with the engine's own clock (and its clock mark) after a caller's clock wrote it, the
// journal replays what is live: without a mark, the removal bound is now less the grace.
TEST_F(JournalLayoutTest, ADatabaseWrittenUnderACallersClockKeepsItsRecordsUnderTheEnginesOwn) {
  ASSERT_EQ("INSERTED", Insert("forever", "k"));  // dies in an hour
  engine_.reset();
  options_.clock = nullptr;
  options_.wall_clock = clock_;
  Open();
  EXPECT_EQ("FOUND", Get("forever", "k"));
  Reopen();  // now with the mark the engine wrote at close
  EXPECT_EQ("FOUND", Get("forever", "k"));
}

// Under async durability nothing syncs per write, and a segment sealed since the last sync keeps
// its file open: the writer syncs when a few have piled up, so the files stay bounded.
TEST_F(JournalLayoutTest, AsyncWritesKeepTheOpenSegmentFilesBounded) {
  engine_.reset();
  options_.durability = Durability::kAsync;
  options_.journal_max_open_files = 4;
  auto fs = std::make_shared<testing::JournalFaultFs>();
  auto opened = OpenEngineOnFileSystem(dir_.Sub("db"), options_, fs);
  ASSERT_OK(opened);
  engine_ = std::move(*opened);
  WriteShortLived("k", 3000);  // ~3 MB: about 45 segments
  EXPECT_GE(Stats().journal_segments, 40u);
  // The active and prepared segments, the closed ones kept for reads, those not synced yet,
  // and one being created or read.
  EXPECT_LE(fs->peak_open_files(), 2 + 4 + 5 + 1);
  EXPECT_EQ("FOUND", Get("short", "k0"));
}

TEST_F(JournalLayoutTest, ABatchIsOneEntryAndOneTooLargeForASegmentIsRefusedWhole) {
  const std::string payload(15 << 10, 'p');
  std::vector<Op> ops;
  std::vector<std::string> keys;
  for (int i = 0; i < 5; ++i) keys.push_back("k" + std::to_string(i));  // 5 x 15 KiB > 64 KiB
  for (const std::string& key : keys) {
    ops.push_back(Op::Insert({.ns = "short", .key = key, .status = "S", .payload = payload}));
  }
  std::vector<Result<OpResult>> results;
  Status refused = engine().Apply(ops, &results);
  EXPECT_TRUE(refused.IsInvalidArgument()) << refused.ToString();
  for (const std::string& key : keys) EXPECT_EQ("NOT_FOUND", Get("short", key));
  ops.pop_back();  // 4 x 15 KiB fits
  ASSERT_OK(engine().Apply(ops, &results));
  Reopen();
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ("FOUND", Get("short", keys[i]));
}

TEST_F(JournalLayoutTest, SegmentsTooSmallForTheLargestRecordAreRefusedAtOpen) {
  engine_.reset();
  options_.limits.max_payload_bytes = 1 << 20;  // more than a 64 KiB segment holds
  Result<std::unique_ptr<ServingEngine>> engine = ServingEngine::Open(dir_.Sub("db"), options_);
  ASSERT_FALSE(engine.ok());
  EXPECT_TRUE(engine.status().IsInvalidArgument()) << engine.status().ToString();
  EXPECT_NE(std::string::npos, engine.status().message().find("journal_segment_bytes"));
}

// A dictionary over the limit is refused; one that leaves a segment too little room for the
// largest record too, since a batch must fit beside the largest dictionary.
TEST_F(JournalLayoutTest, ADictionaryOverItsLimitOrTooLargeForTheSegmentIsRefusedAtOpen) {
  engine_.reset();
  options_.journal_dictionary_bytes = EngineOptions::kMaxJournalDictionaryBytes + 1;
  Result<std::unique_ptr<ServingEngine>> engine = ServingEngine::Open(dir_.Sub("db"), options_);
  ASSERT_FALSE(engine.ok());
  EXPECT_TRUE(engine.status().IsInvalidArgument()) << engine.status().ToString();
  EXPECT_NE(std::string::npos, engine.status().message().find("journal_dictionary_bytes"));

  // 64 KiB segments hold the default limits' largest record, but not beside 60 KiB more.
  options_.journal_dictionary_bytes = 60 << 10;
  engine = ServingEngine::Open(dir_.Sub("db"), options_);
  ASSERT_FALSE(engine.ok());
  EXPECT_TRUE(engine.status().IsInvalidArgument()) << engine.status().ToString();
  EXPECT_NE(std::string::npos, engine.status().message().find("journal_segment_bytes"));
}

TEST_F(JournalLayoutTest, ADatabaseOfOneKindOfLayoutIsNotOpenedWithTheOther) {
  ASSERT_EQ("INSERTED", Insert("short", "k"));
  engine_.reset();
  for (EngineOptions::Layout other :
       {EngineOptions::Layout::kLeveled, EngineOptions::Layout::kExpiryWindows}) {
    options_.layout = other;
    Result<std::unique_ptr<ServingEngine>> engine = ServingEngine::Open(dir_.Sub("db"), options_);
    ASSERT_FALSE(engine.ok());
    EXPECT_TRUE(engine.status().IsInvalidArgument()) << engine.status().ToString();
    EXPECT_NE(std::string::npos, engine.status().message().find("journal layout"));
  }
  // The other way round, a database of the leveled or window layout is converted
  // (JournalConversionTest).
  // A database that holds only the engine's own keys (never written) may become a journal one;
  // once opened with the journal layout (which creates its first segment), it stays one.
  const std::string empty = dir_.Sub("e");
  options_.layout = EngineOptions::Layout::kLeveled;
  ASSERT_OK(ServingEngine::Open(empty, options_));
  options_.layout = EngineOptions::Layout::kJournal;
  ASSERT_OK(ServingEngine::Open(empty, options_));
  options_.layout = EngineOptions::Layout::kLeveled;
  EXPECT_TRUE(ServingEngine::Open(empty, options_).status().IsInvalidArgument());
}

// A database of the leveled or window layout (the source) opened with the journal layout: its
// records move into a journal.
class JournalConversionTest : public JournalLayoutTest {
 protected:
  JournalConversionTest() {
    ConvertFrom(EngineOptions::Layout::kLeveled);
    options_.retention["remembering"] =
        RetentionPolicy{.default_ttl_ms = 1000, .max_ttl_ms = 10'000, .remember_ms = 60'000};
    options_.log = [this](const LogRecord& record) {
      if (record.event == "journal_conversion") conversions_.push_back(record.message);
    };
  }
  // The narrowest windows: the test's records fall in several.
  void ConvertFrom(EngineOptions::Layout source) {
    source_ = source;
    options_.layout = source;
    options_.expiry_window_ms = EngineOptions::kMinExpiryWindowMs;
  }
  // Writes, under the source layout, records of every kind a conversion must keep or drop;
  // returns the live ones, as read back before the conversion.
  std::map<std::string, Record> WriteEveryKind() {
    WriteShortLived("s", 300);  // more than one 64 KiB segment's worth
    EXPECT_EQ("INSERTED", Insert("forever", "f", "DONE", "kept", "fp", kForever));
    EXPECT_EQ("INSERTED", Insert("short", "completed", "PENDING", "", "fp"));
    EXPECT_EQ(
        "APPLIED",
        Name(engine().CompareAndSet(
            {.ns = "short",
             .key = "completed",
             .update = {.status = "DONE", .payload = "response", .ttl = testing::TtlMs(5000)}})));
    EXPECT_EQ("INSERTED", Insert("remembering", "expired-remembered", "DONE", "", "fp"));
    EXPECT_EQ("INSERTED", Insert("short", "dead", "DONE"));
    clock_->Advance(500);
    WriteShortLived("t", 100);  // die at 1500: ~100 KiB, two segments' worth
    clock_->Advance(600);       // 1100: "s*", "dead" and "expired-remembered" have expired
    std::map<std::string, Record> live;
    for (int i = 0; i < 100; ++i)
      live["short/t" + std::to_string(i)] = GetRecord("short", "t" + std::to_string(i));
    live["forever/f"] = GetRecord("forever", "f");
    live["short/completed"] = GetRecord("short", "completed");
    EXPECT_EQ("EXPIRED", Insert("remembering", "expired-remembered", "DONE", "", "fp"));
    return live;
  }
  void OpenAs(EngineOptions::Layout layout, const std::string& dir) {
    engine_.reset();
    options_.layout = layout;
    Result<std::unique_ptr<ServingEngine>> engine = ServingEngine::Open(dir, options_);
    ASSERT_OK(engine);
    engine_ = std::move(*engine);
  }
  // What the database holds now, under the journal layout, is `live` and nothing that had died.
  void ExpectHolds(const std::map<std::string, Record>& live) {
    for (const auto& [name, record] : live) {
      const size_t slash = name.find('/');
      EXPECT_EQ(record, GetRecord(name.substr(0, slash), name.substr(slash + 1))) << name;
    }
    EXPECT_EQ("NOT_FOUND", Get("short", "s0"));
    EXPECT_EQ("NOT_FOUND", Get("short", "dead"));
    EXPECT_EQ("EXPIRED", Insert("remembering", "expired-remembered", "DONE", "", "fp"));
    EXPECT_EQ(live.size() + 1, Stats().estimated_live_records);  // and the remembered marker
    EXPECT_EQ(0u, Stats().expiry_windows);
  }

  EngineOptions::Layout source_;
  std::vector<std::string> conversions_;
};

class ConversionFromEachLayoutTest : public JournalConversionTest,
                                     public ::testing::WithParamInterface<EngineOptions::Layout> {
 protected:
  ConversionFromEachLayoutTest() { ConvertFrom(GetParam()); }
};
INSTANTIATE_TEST_SUITE_P(Layouts, ConversionFromEachLayoutTest,
                         ::testing::Values(EngineOptions::Layout::kLeveled,
                                           EngineOptions::Layout::kExpiryWindows),
                         [](const ::testing::TestParamInfo<EngineOptions::Layout>& p) {
                           return testing::LayoutName(p.param);
                         });

TEST_P(ConversionFromEachLayoutTest, IsConvertedAtItsFirstOpenWithTheJournalLayout) {
  Reopen();  // the source layout
  const std::map<std::string, Record> live = WriteEveryKind();
  OpenAs(EngineOptions::Layout::kJournal, dir_.Sub("db"));
  ASSERT_EQ(1u, conversions_.size());
  EXPECT_NE(std::string::npos, conversions_[0].find("converted")) << conversions_[0];
  ExpectHolds(live);
  EXPECT_GE(Stats().journal_segments, 1u);
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("db/journal/") + kConversionMark));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("db/journal.converting")));
  // It is a journal database now: no second conversion, and the source layout refuses it.
  OpenAs(EngineOptions::Layout::kJournal, dir_.Sub("db"));
  EXPECT_EQ(1u, conversions_.size());
  ExpectHolds(live);
  engine_.reset();
  options_.layout = source_;
  EXPECT_TRUE(ServingEngine::Open(dir_.Sub("db"), options_).status().IsInvalidArgument());
}

TEST_P(ConversionFromEachLayoutTest, AConversionACrashInterruptedStartsOverOrIsFinished) {
  Reopen();  // the source layout
  const std::map<std::string, Record> live = WriteEveryKind();
  engine_.reset();
  // Killed before its rename: a staging journal beside the database, RocksDB untouched.
  const std::string before = dir_.Sub("before");
  std::filesystem::copy(dir_.Sub("db"), before, std::filesystem::copy_options::recursive);
  std::filesystem::create_directory(before + "/journal.converting");
  std::ofstream(before + "/journal.converting/0000000000000001.jnl") << "half a segment";
  // Killed after its rename: the journal whole, with its mark, and RocksDB still holding every
  // record (the journal of a conversion of the same database, finished elsewhere).
  const std::string after = dir_.Sub("after");
  std::filesystem::copy(dir_.Sub("db"), after, std::filesystem::copy_options::recursive);
  OpenAs(EngineOptions::Layout::kJournal, dir_.Sub("db"));
  engine_.reset();
  std::filesystem::copy(dir_.Sub("db/journal"), after + "/journal");
  std::ofstream(after + "/journal/" + kConversionMark) << "mark";

  // Opened with the source layout after such a crash, the staging journal goes.
  const std::string back = dir_.Sub("back");
  std::filesystem::copy(before, back, std::filesystem::copy_options::recursive);
  OpenAs(source_, back);
  EXPECT_EQ(live.at("forever/f"), GetRecord("forever", "f"));
  EXPECT_FALSE(std::filesystem::exists(back + "/journal.converting"));

  conversions_.clear();
  OpenAs(EngineOptions::Layout::kJournal, before);
  ASSERT_EQ(1u, conversions_.size());
  EXPECT_NE(std::string::npos, conversions_[0].find("converted")) << conversions_[0];
  ExpectHolds(live);
  EXPECT_FALSE(std::filesystem::exists(before + "/journal.converting"));

  conversions_.clear();
  engine_.reset();
  options_.layout = source_;  // the journal is the database's already
  EXPECT_TRUE(ServingEngine::Open(after, options_).status().IsInvalidArgument());
  OpenAs(EngineOptions::Layout::kJournal, after);
  ASSERT_EQ(1u, conversions_.size());
  EXPECT_NE(std::string::npos, conversions_[0].find("finished")) << conversions_[0];
  ExpectHolds(live);
  EXPECT_FALSE(std::filesystem::exists(after + "/journal/" + kConversionMark));
  OpenAs(EngineOptions::Layout::kJournal, after);  // nothing left to do
  EXPECT_EQ(1u, conversions_.size());
  ExpectHolds(live);
}

// Each journal entry of a conversion is a bounded batch, whatever the segment size: a batch's
// writes are checked against each other, so one entry of all the records would cost their
// count squared.
TEST_P(ConversionFromEachLayoutTest, MovesRecordsInBatchesOfBoundedCount) {
  options_.journal_segment_bytes = EngineOptions::kMaxJournalSegmentBytes;
  Reopen();  // the source layout
  for (int i = 0; i < 3000; ++i) ASSERT_EQ("INSERTED", Insert("forever", std::to_string(i)));
  OpenAs(EngineOptions::Layout::kJournal, dir_.Sub("db"));
  engine_.reset();
  std::map<uint64_t, size_t> ops_per_entry;
  ASSERT_OK(journal::Journal::Check(
      rocksdb::FileSystem::Default().get(), dir_.Sub("db/journal"),
      [&](const journal::Journal&, const journal::OpView&, journal::Journal::Location,
          uint64_t sequence) { ++ops_per_entry[sequence]; }));
  size_t total = 0, largest = 0;
  for (const auto& [sequence, ops] : ops_per_entry) {
    total += ops;
    largest = std::max(largest, ops);
  }
  EXPECT_EQ(3000u, total);
  EXPECT_LE(largest, 1024u);
}

TEST_P(ConversionFromEachLayoutTest, AConversionThatFailsLeavesTheDatabaseAsItWasForTheNextOpen) {
  Reopen();  // the source layout
  const std::map<std::string, Record> live = WriteEveryKind();
  engine_.reset();
  options_.layout = EngineOptions::Layout::kJournal;
  auto fs = std::make_shared<testing::JournalFaultFs>();
  fs->writes_before_failure = 4;  // the disk fills up partway through the journal's writes
  Result<std::unique_ptr<ServingEngine>> failed =
      OpenEngineOnFileSystem(dir_.Sub("db"), options_, fs);
  ASSERT_FALSE(failed.ok()) << (conversions_.empty() ? "" : conversions_[0]);
  EXPECT_TRUE(failed.status().IsIOError()) << failed.status().ToString();
  EXPECT_TRUE(conversions_.empty());
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("db/journal.converting")));  // its disk back
  OpenAs(source_, dir_.Sub("db"));  // still the source layout's database
  EXPECT_EQ(live.at("forever/f"), GetRecord("forever", "f"));
  OpenAs(EngineOptions::Layout::kJournal, dir_.Sub("db"));
  ASSERT_EQ(1u, conversions_.size());
  ExpectHolds(live);
}

// A key of a window database may have versions in several families: dead ones in windows that
// have ended (kept until the grace has passed) besides the one a read finds, in a newer window or
// in the default family. The journal answers with the one a read found.
TEST_F(JournalConversionTest, AWindowDatabaseKeepsTheVersionOfEachKeyThatAReadFinds) {
  options_.expiry_grace_ms = 60'000;
  Reopen();  // leveled: these stay in the default family, with their deaths
  ASSERT_EQ("INSERTED", Insert("short", "leveled-era", "S", "leveled", "", 10'000));
  ASSERT_EQ("INSERTED", Insert("short", "moved", "S", "leveled", "", 10'000));
  ConvertFrom(EngineOptions::Layout::kExpiryWindows);
  Reopen();
  ASSERT_EQ("APPLIED",
            Name(engine().CompareAndSet(
                {.ns = "short",
                 .key = "moved",
                 .update = {.status = "S", .payload = "window", .ttl = testing::TtlMs(9000)}})));
  ASSERT_EQ("INSERTED", Insert("short", "again", "S", "first"));  // all three die at 1000
  ASSERT_EQ("INSERTED", Insert("forever", "back", "S", "short-lived", "", 1000));
  ASSERT_EQ("INSERTED", Insert("short", "gone", "S", "gone"));
  clock_->Advance(2500);  // their window has ended; within the grace, it is not dropped
  ASSERT_EQ("INSERTED", Insert("short", "again", "S", "second"));  // in a newer window
  ASSERT_EQ("INSERTED", Insert("forever", "back", "S", "for ever", "", kForever));  // default
  const std::map<std::string, std::string> payloads = {{"short/leveled-era", "leveled"},
                                                       {"short/moved", "window"},
                                                       {"short/again", "second"},
                                                       {"forever/back", "for ever"}};
  auto expect_reads = [&] {
    for (const auto& [name, payload] : payloads) {
      const size_t slash = name.find('/');
      EXPECT_EQ(payload, GetRecord(name.substr(0, slash), name.substr(slash + 1)).payload) << name;
    }
    EXPECT_EQ("NOT_FOUND", Get("short", "gone"));
  };
  expect_reads();
  ASSERT_GE(Stats().expiry_windows, 3u);  // the ended one, "moved"'s and "again"'s

  OpenAs(EngineOptions::Layout::kJournal, dir_.Sub("db"));
  ASSERT_EQ(1u, conversions_.size());
  EXPECT_NE(std::string::npos, conversions_[0].find("from the expiry-window layout"))
      << conversions_[0];
  expect_reads();
  EXPECT_EQ(0u, Stats().expiry_windows);
  OpenAs(EngineOptions::Layout::kJournal, dir_.Sub("db"));
  EXPECT_EQ(1u, conversions_.size());
  expect_reads();
}

// A journal whose sync fails takes no more writes (the pages it could not write may be gone),
// says so to readiness probes, still answers reads, and a restart brings back every write that
// was acknowledged.
TEST_F(JournalLayoutTest, AFailedSyncStopsWritesUntilARestartAndLosesNothingAcknowledged) {
  engine_.reset();
  options_.durability = Durability::kSync;
  auto fs = std::make_shared<testing::JournalFaultFs>();
  auto opened = OpenEngineOnFileSystem(dir_.Sub("db"), options_, fs);
  ASSERT_OK(opened);
  engine_ = std::move(*opened);
  ASSERT_EQ("INSERTED", Insert("short", "acknowledged"));
  ASSERT_OK(engine().WriteReadiness());
  fs->fail_syncs = true;
  EXPECT_EQ("IO_ERROR", Insert("short", "refused"));
  // Its entry may be in the journal's index (the fsync came after the append), but no sync
  // vouches for it: a read must not answer with it.
  EXPECT_EQ("IO_ERROR", Get("short", "refused"));
  fs->fail_syncs = false;  // the disk is back; the journal still refuses until reopened
  EXPECT_EQ("IO_ERROR", Insert("short", "later"));
  Status readiness = engine().WriteReadiness();
  EXPECT_TRUE(readiness.IsIOError()) << readiness.ToString();
  EXPECT_NE(std::string::npos, readiness.message().find("restarted"));
  EXPECT_EQ("FOUND", Get("short", "acknowledged"));
  // Nor is a backup taken: the failed fsync may have cost pages that a copy would read back.
  Result<BackupManifest> backup = engine().Backup(dir_.Sub("backup"));
  EXPECT_TRUE(backup.status().IsIOError()) << backup.status().ToString();
  for (const char* left : {"backup", "backup.incomplete", "backup.incomplete.journal"}) {
    EXPECT_FALSE(std::filesystem::exists(dir_.Sub(left))) << left;
  }
  Reopen();
  ASSERT_OK(engine().WriteReadiness());
  ASSERT_OK(engine().Backup(dir_.Sub("backup")));
  EXPECT_EQ("FOUND", Get("short", "acknowledged"));
  EXPECT_EQ("NOT_FOUND", Get("short", "later"));
  EXPECT_EQ("INSERTED", Insert("short", "after"));
}

}  // namespace
}  // namespace idem
