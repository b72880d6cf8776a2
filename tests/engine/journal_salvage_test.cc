// Repairing a database of the journal layout (RepairDatabase, engine/src/journal_salvage.h):
// every intact entry is kept, also those after the damage, and what the damage destroyed is
// counted exactly where the entries' sequence numbers allow; an undamaged journal is left alone.
#include "journal_salvage.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <rocksdb/file_system.h>

#include "idem/engine.h"
#include "idem/repair.h"
#include "journal.h"
#include "journal_layout.h"
#include "support/data_damage.h"
#include "support/engine_fixture.h"
#include "support/journal_fault_fs.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

using ::testing::HasSubstr;

constexpr int kRecords = 1000;  // one entry each: about four 64 KiB segments

// Where one entry of the journal is, and the record it inserted.
struct EntryAt {
  uint64_t segment = 0;  // its number
  uint64_t offset = 0;   // of its first operation
  std::string key;       // DamageKey(i)
};

class JournalSalvageTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    testing::UseSmallJournal(&options_);
    options_.reclaim_interval_ms = 0;
    if (GetParam()) options_.journal_dictionary_bytes = 1024;  // compressed values
    auto engine = Engine::Open(db_, options_);
    ASSERT_OK(engine);
    testing::InsertRecords(**engine, kRecords, /*batch=*/1);
  }

  std::string JournalDirectory() const { return JournalDir(db_); }

  // Every entry, by sequence number, read from the (undamaged) journal.
  std::map<uint64_t, EntryAt> Entries() {
    std::map<uint64_t, EntryAt> entries;
    Result<journal::Journal::CheckReport> checked = journal::Journal::Check(
        rocksdb::FileSystem::Default().get(), JournalDirectory(),
        [&](const journal::Journal& journal, const journal::OpView& op,
            journal::Journal::Location at, uint64_t sequence) {
          if (entries.contains(sequence)) return;
          std::string scratch;
          Result<journal::OpView> plain =
              journal::Journal::Plain(op, journal.DictionaryOf(at.segment), &scratch);
          EXPECT_TRUE(plain.ok());
          uint64_t number = 0;
          for (const auto& s : journal.Segments()) {
            if (s.id == at.segment) number = s.number;
          }
          const std::string key(plain->key);
          entries[sequence] = EntryAt{number, at.offset, key.substr(key.find("order-"))};
        });
    EXPECT_TRUE(checked.ok()) << checked.status().ToString();
    return entries;
  }
  std::string SegmentPath(uint64_t number) const {
    return journal::SegmentFilePath(JournalDirectory(), number);
  }
  // The damage must stop a start that replays the journal (a clean close's saved index would
  // skip the replay: without it, the open checks every entry).
  void ExpectAStartRefused() {
    std::filesystem::remove(JournalDirectory() + "/index");
    auto engine = Engine::Open(db_, options_);
    ASSERT_FALSE(engine.ok());
    EXPECT_TRUE(engine.status().IsCorruption()) << engine.status().ToString();
    EXPECT_THAT(engine.status().message(), HasSubstr("idemctl --data " + db_ + " repair"));
  }
  RepairReport Repair() {
    RepairOptions options{.backup_dir = dir_.Sub("backup-" + std::to_string(repairs_++)),
                          .engine = options_};
    Result<RepairReport> report = RepairDatabase(db_, options);
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? *report : RepairReport{};
  }
  static std::string Lines(const RepairReport& report) {
    std::string all;
    for (const std::string& line : report.lines) all += line + "\n";
    return all;
  }
  // Opens the repaired database: every record but `lost` is there, as inserted.
  void ExpectAllBut(const std::set<std::string>& lost) {
    auto engine = Engine::Open(db_, options_);
    ASSERT_OK(engine);
    for (int i = 0; i < kRecords; ++i) {
      const std::string key = testing::DamageKey(i);
      auto got = (*engine)->Get({.ns = "dmg", .key = key});
      ASSERT_OK(got);
      if (lost.contains(key)) {
        EXPECT_FALSE(got->record.has_value()) << key;
      } else {
        ASSERT_TRUE(got->record.has_value()) << key;
        EXPECT_EQ("payload of " + key + std::string(80, 'x'), got->record->payload);
      }
    }
  }

  testing::TempDir dir_;
  std::string db_ = dir_.Sub("db");
  EngineOptions options_;
  int repairs_ = 0;
};

INSTANTIATE_TEST_SUITE_P(Values, JournalSalvageTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Compressed" : "Plain";
                         });

TEST_P(JournalSalvageTest, AnEntryDamagedMidSegmentIsLostAloneAndCounted) {
  const std::map<uint64_t, EntryAt> entries = Entries();
  // An entry in the middle of the second segment: entries after it in the segment are intact.
  std::set<uint64_t> segments;
  for (const auto& [seq, at] : entries) segments.insert(at.segment);
  ASSERT_GE(segments.size(), 3u);
  const uint64_t second = *std::next(segments.begin());
  std::vector<uint64_t> in_second;
  for (const auto& [seq, at] : entries) {
    if (at.segment == second) in_second.push_back(seq);
  }
  ASSERT_GE(in_second.size(), 10u);
  const EntryAt damaged = entries.at(in_second[in_second.size() / 2]);
  testing::Garble16BytesAt(SegmentPath(damaged.segment), damaged.offset);
  ExpectAStartRefused();

  const RepairReport report = Repair();
  EXPECT_EQ(1u, report.lost_journal_entries) << Lines(report);
  EXPECT_FALSE(report.loss_uncounted) << Lines(report);
  EXPECT_THAT(Lines(report), HasSubstr("damaged at offset"));
  EXPECT_THAT(Lines(report), HasSubstr(": 1 entry lost"));
  EXPECT_THAT(Lines(report), HasSubstr("lost 0 operations and 1 journal entry ("));
  EXPECT_THAT(Lines(report), HasSubstr("the database now holds " + std::to_string(kRecords - 1)));
  EXPECT_EQ(uint64_t{kRecords - 1}, report.records);
  EXPECT_TRUE(std::filesystem::exists(dir_.Sub("backup-0") + "/journal"));
  EXPECT_FALSE(std::filesystem::exists(JournalDirectory() + ".repairing"));
  ExpectAllBut({damaged.key});

  // Repaired, it has no damage left: a second repair leaves the journal as it is.
  const testing::DirSnapshot before = testing::Snapshot(JournalDirectory());
  const RepairReport again = Repair();
  EXPECT_EQ(0u, again.lost_journal_entries);
  EXPECT_THAT(Lines(again), HasSubstr("no damage: left as it was"));
  EXPECT_TRUE(before == testing::Snapshot(JournalDirectory()));
}

TEST_P(JournalSalvageTest, ASegmentWhoseHeaderIsDamagedIsLostWholeAndCountedByTheNext) {
  const std::map<uint64_t, EntryAt> entries = Entries();
  std::map<uint64_t, std::set<std::string>> keys_by_segment;
  for (const auto& [seq, at] : entries) keys_by_segment[at.segment].insert(at.key);
  ASSERT_GE(keys_by_segment.size(), 3u);
  const uint64_t second = std::next(keys_by_segment.begin())->first;
  testing::Garble16BytesAt(SegmentPath(second), 0);
  ExpectAStartRefused();

  const RepairReport report = Repair();
  EXPECT_EQ(keys_by_segment[second].size(), report.lost_journal_entries) << Lines(report);
  EXPECT_FALSE(report.loss_uncounted) << Lines(report);
  EXPECT_THAT(Lines(report), HasSubstr("its header does not decode"));
  ExpectAllBut(keys_by_segment[second]);
}

// The last entry of a sealed segment, with nothing after it there: the next segment's first
// entry tells how many were lost.
TEST_P(JournalSalvageTest, DamageAtASealedSegmentsEndIsCountedByTheNextSegment) {
  const std::map<uint64_t, EntryAt> entries = Entries();
  const uint64_t first_segment = entries.begin()->second.segment;
  EntryAt last_of_first;
  for (const auto& [seq, at] : entries) {
    if (at.segment == first_segment) last_of_first = at;
  }
  testing::Garble16BytesAt(SegmentPath(first_segment), last_of_first.offset);

  const RepairReport report = Repair();
  EXPECT_EQ(1u, report.lost_journal_entries) << Lines(report);
  EXPECT_FALSE(report.loss_uncounted) << Lines(report);
  ExpectAllBut({last_of_first.key});
}

// The disk fills while the new journal is written: the salvage fails with the write's error,
// the damaged journal is left as it was, the partial new one is deleted, and a salvage with room
// then succeeds.
TEST_P(JournalSalvageTest, ADiskThatFillsDuringTheSalvageLeavesTheJournalAsItWas) {
  const std::map<uint64_t, EntryAt> entries = Entries();
  const EntryAt damaged = std::next(entries.begin(), 400)->second;
  testing::Garble16BytesAt(SegmentPath(damaged.segment), damaged.offset);
  const testing::DirSnapshot before = testing::Snapshot(JournalDirectory());

  testing::JournalFaultFs full;
  full.writes_before_failure = 5;
  Result<std::optional<JournalSalvage>> failed = SalvageJournal(db_, options_, &full);
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(failed.status().IsIOError()) << failed.status().ToString();
  EXPECT_TRUE(before == testing::Snapshot(JournalDirectory()));
  EXPECT_FALSE(std::filesystem::exists(JournalDirectory() + ".repairing"));

  Result<std::optional<JournalSalvage>> salvaged = SalvageJournal(db_, options_);
  ASSERT_OK(salvaged);
  ASSERT_TRUE(salvaged->has_value());
  EXPECT_TRUE((*salvaged)->rewritten);
  EXPECT_EQ(1u, (*salvaged)->lost_entries);
  ExpectAllBut({damaged.key});
}

// Segments whose records have all died are deleted whole: the numbers of their entries are
// missing from the journal without any loss.
TEST_P(JournalSalvageTest, AGapLeftByADroppedSegmentIsNotALoss) {
  db_ = dir_.Sub("dropped");
  auto clock = std::make_shared<ManualClock>();
  options_.clock = clock;
  options_.expiry_grace_ms = 0;
  options_.retention["short"] = RetentionPolicy{1000, 10'000, false};
  {
    auto engine = Engine::Open(db_, options_);
    ASSERT_OK(engine);
    for (int i = 0; i < 300; ++i) testing::InsertBatch(**engine, i, 1);
    for (int i = 0; i < 700; ++i) {  // die in a second
      ASSERT_OK((*engine)->Insert({.ns = "short",
                                   .key = "order-short-" + std::to_string(i),
                                   .status = "DONE",
                                   .payload = std::string(100, 's')}));
    }
    for (int i = 300; i < 600; ++i) testing::InsertBatch(**engine, i, 1);
    clock->Advance(2000);
    ASSERT_OK((*engine)->ReclaimExpired());
  }
  Result<std::vector<uint64_t>> numbers =
      journal::ListSegments(rocksdb::FileSystem::Default().get(), JournalDirectory());
  ASSERT_OK(numbers);
  ASSERT_LT(numbers->size(), numbers->back() - numbers->front() + 1) << "no segment was dropped";
  const std::map<uint64_t, EntryAt> entries = Entries();
  const EntryAt damaged = std::prev(entries.end(), 20)->second;  // one of the last records
  ASSERT_THAT(damaged.key, HasSubstr("order-5"));
  testing::Garble16BytesAt(SegmentPath(damaged.segment), damaged.offset);

  const RepairReport report = Repair();
  EXPECT_EQ(1u, report.lost_journal_entries) << Lines(report);
  EXPECT_FALSE(report.loss_uncounted) << Lines(report);
}

// A segment file of another journal under this one's next number (its header's number right):
// its entries are numbered below what came before, so they were not written in this order and
// are left out, rather than taken as the latest versions of their keys.
TEST_P(JournalSalvageTest, EntriesNumberedOutOfOrderAreLeftOut) {
  const std::map<uint64_t, EntryAt> entries = Entries();
  std::set<uint64_t> segments;
  for (const auto& [seq, at] : entries) segments.insert(at.segment);
  const uint64_t last = *segments.rbegin();
  ASSERT_GE(last, 3u);
  std::set<std::string> lost;  // the records of the segment replaced
  for (const auto& [seq, at] : entries) {
    if (at.segment == last) lost.insert(at.key);
  }
  const std::string other = dir_.Sub("other");
  {
    auto engine = Engine::Open(other, options_);
    ASSERT_OK(engine);
    for (int i = 0; i < kRecords; ++i) {  // larger records: its segment `last` begins earlier
      ASSERT_OK((*engine)->Insert({.ns = "dmg",
                                   .key = testing::DamageKey(i),
                                   .status = "DONE",
                                   .payload = "stale " + std::string(2000, 'o')}));
    }
  }
  std::filesystem::copy_file(journal::SegmentFilePath(JournalDir(other), last), SegmentPath(last),
                             std::filesystem::copy_options::overwrite_existing);
  ExpectAStartRefused();

  const RepairReport report = Repair();
  EXPECT_TRUE(report.loss_uncounted) << Lines(report);
  EXPECT_THAT(Lines(report), HasSubstr("is not above"));
  ExpectAllBut(lost);
}

// The last entry torn by a crash, and the next segment prepared ahead of the writes, empty: an
// open cuts the tear and starts as before, so a repair leaves it too, and loses nothing.
TEST_P(JournalSalvageTest, ATornLastWriteBeforeAPreparedSegmentIsNoLoss) {
  const std::string dir = dir_.Sub("prepared");
  std::filesystem::create_directories(dir);
  journal::JournalOptions options = JournalOptionsFor(options_, /*os_files=*/true);
  options.prepare_in_background = false;
  ManualClock clock;
  uint64_t segment = 0, last_op = 0;
  {
    Result<std::unique_ptr<journal::Journal>> opened = journal::Journal::Open(
        rocksdb::FileSystem::Default().get(), JournalDir(dir), options, &clock, nullptr);
    ASSERT_OK(opened);
    for (int i = 0; i < 20; ++i) {
      journal::EntryBuilder entry;
      const std::string key = "k" + std::to_string(i);
      ASSERT_OK(entry.Add(journal::OpView{journal::OpType::kPut, 1000, key, "value"}));
      Result<journal::Journal::Location> at = (*opened)->Append(&entry);
      ASSERT_OK(at);
      last_op = at->offset;
      segment = (*opened)->Segments().back().number;
    }
    ASSERT_OK((*opened)->Sync());
    ASSERT_OK((*opened)->PrepareNextSegment());
  }
  Result<std::vector<uint64_t>> numbers =
      journal::ListSegments(rocksdb::FileSystem::Default().get(), JournalDir(dir));
  ASSERT_OK(numbers);
  ASSERT_EQ((std::vector<uint64_t>{segment, segment + 1}), *numbers);
  testing::Garble16BytesAt(journal::SegmentFilePath(JournalDir(dir), segment), last_op + 8);

  Result<std::optional<JournalSalvage>> salvage = SalvageJournal(dir, options_);
  ASSERT_OK(salvage);
  ASSERT_TRUE(salvage->has_value());
  const JournalSalvage& s = **salvage;
  std::string lines;
  for (const std::string& line : s.lines) lines += line + "\n";
  EXPECT_FALSE(s.rewritten) << lines;
  EXPECT_FALSE(s.loss_uncounted) << lines;
  EXPECT_EQ(0u, s.lost_entries) << lines;
  EXPECT_THAT(lines, HasSubstr("torn by a crash"));
}

// Nothing after the damage can tell how much it destroyed: said so, not counted as none.
TEST_P(JournalSalvageTest, ALossNothingAfterBoundsIsUncounted) {
  const std::map<uint64_t, EntryAt> entries = Entries();
  const uint64_t last_segment = entries.rbegin()->second.segment;
  std::set<std::string> lost;
  for (const auto& [seq, at] : entries) {
    if (at.segment == last_segment) lost.insert(at.key);
  }
  testing::Garble16BytesAt(SegmentPath(last_segment), 0);  // its header

  const RepairReport report = Repair();
  EXPECT_EQ(0u, report.lost_journal_entries) << Lines(report);
  EXPECT_TRUE(report.loss_uncounted) << Lines(report);
  EXPECT_THAT(Lines(report), HasSubstr("and an uncounted number"));
  ExpectAllBut(lost);
}

// An undamaged journal is not rewritten; what a repair interrupted after its exchange left
// (the old journal beside the new) is deleted by the next one, and ignored by an open.
TEST_P(JournalSalvageTest, AnUndamagedJournalIsLeftAsItWasAndALeftoverIsDeleted) {
  const std::string leftover = JournalDirectory() + ".repairing";
  std::filesystem::copy(JournalDirectory(), leftover);
  testing::Garble16BytesAt(
      leftover + "/" + std::filesystem::directory_iterator(leftover)->path().filename().string(),
      0);
  {
    auto engine = Engine::Open(db_, options_);
    ASSERT_OK(engine);
    EXPECT_EQ(kRecords, testing::CountRecords(**engine, kRecords));
  }
  const testing::DirSnapshot before = testing::Snapshot(JournalDirectory());
  const RepairReport report = Repair();
  EXPECT_EQ(0u, report.lost_journal_entries);
  EXPECT_FALSE(report.loss_uncounted);
  EXPECT_THAT(Lines(report), HasSubstr("no damage: left as it was"));
  EXPECT_TRUE(before == testing::Snapshot(JournalDirectory()));
  EXPECT_FALSE(std::filesystem::exists(leftover));
  ExpectAllBut({});
}

}  // namespace
}  // namespace idem
