// The journal's files (engine/src/journal.h): appends read back and replay at the next open in
// order, segments roll and seal, a torn tail is repaired, damage and impossible states are
// refused with the file and offset, deletes free ids, and a failed write or sync sticks.
#include "journal.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <rocksdb/file_system.h>

#include "support/concurrency.h"
#include "support/journal_fault_fs.h"
#include "support/temp_dir.h"

namespace idem::journal {
namespace {

using Location = Journal::Location;

struct Replayed {
  std::string key;
  std::string value;
  OpType type;
  Location at;
  uint64_t sequence;
  bool operator==(const Replayed&) const = default;
};

class JournalTest : public ::testing::Test {
 protected:
  Result<std::unique_ptr<Journal>> OpenJournal(std::vector<Replayed>* replayed = nullptr) {
    return Journal::Open(&fs_, dir_.Sub("journal"), options_, &clock_,
                         [&](const Journal&, const OpView& op, Location at, uint64_t sequence) {
                           if (replayed != nullptr) {
                             replayed->push_back({std::string(op.key), std::string(op.value),
                                                  op.type, at, sequence});
                           }
                         });
  }
  std::unique_ptr<Journal> MustOpen(std::vector<Replayed>* replayed = nullptr) {
    Result<std::unique_ptr<Journal>> journal = OpenJournal(replayed);
    EXPECT_TRUE(journal.ok()) << journal.status().ToString();
    return journal.ok() ? std::move(*journal) : nullptr;
  }
  // Appends one entry of puts `keys` (value: key + "-v"); returns the operations' locations.
  std::vector<Replayed> Append(Journal* journal, const std::vector<std::string>& keys,
                               int64_t keep_until = 1000) {
    EntryBuilder entry;
    std::vector<std::string> values;
    for (const std::string& key : keys) values.push_back(key + "-v");
    for (size_t i = 0; i < keys.size(); ++i) {
      EXPECT_TRUE(entry.Add(OpView{OpType::kPut, keep_until, keys[i], values[i]}).ok());
    }
    const std::vector<uint32_t> offsets = entry.offsets();
    Result<Location> at = journal->Append(&entry);
    EXPECT_TRUE(at.ok()) << at.status().ToString();
    std::vector<Replayed> out;
    if (!at.ok()) return out;
    for (size_t i = 0; i < keys.size(); ++i) {
      out.push_back({keys[i], values[i], OpType::kPut,
                     Location{at->segment, at->offset + offsets[i]}, journal->last_sequence()});
    }
    return out;
  }
  // Appends one key per entry ("k<n>") until the journal has `segments` segments; returns them.
  std::vector<Replayed> FillSegments(Journal* journal, size_t segments) {
    std::vector<Replayed> all;
    for (int i = 0; i < 10'000 && journal->Segments().size() < segments; ++i) {
      for (Replayed& r : Append(journal, {"k" + std::to_string(i)})) all.push_back(std::move(r));
    }
    return all;
  }
  // The files a Sync syncs, in order (it must succeed).
  std::vector<std::string> SyncedBy(Journal* journal) {
    const size_t before = fs_.synced().size();
    fs_.record = true;
    const Status synced = journal->Sync();
    fs_.record = false;
    EXPECT_TRUE(synced.ok()) << synced.ToString();
    std::vector<std::string> paths = fs_.synced();
    paths.erase(paths.begin(), paths.begin() + static_cast<std::ptrdiff_t>(before));
    return paths;
  }
  // A journal of three segments, all synced, whose first one's file is closed (one sealed file
  // kept open); *first: the location of the one record "first" in it. Null (a failure added) if
  // it could not be made so: a test holding a read at that file's open would wait for ever.
  std::unique_ptr<Journal> WithFirstSegmentClosed(Location* first) {
    options_.segment_bytes = 1024;
    options_.max_open_sealed_files = 1;
    std::unique_ptr<Journal> journal = MustOpen();
    *first = Append(journal.get(), {"first"}).at(0).at;
    FillSegments(journal.get(), 3);
    if (const Status synced = journal->Sync(); !synced.ok()) {
      ADD_FAILURE() << synced.ToString();
      return nullptr;
    }
    if (fs_.open_files() != 1 + 1) {  // segment 2's and the active one's
      ADD_FAILURE() << fs_.open_files() << " files open, not 2";
      return nullptr;
    }
    return journal;
  }
  // Deletes segment 1 (the first) on a thread of its own, held before the unlink at `hold` until
  // the test releases it; the test makes the delete fail.
  std::thread DeleteFirstHeldBeforeUnlink(Journal* journal, testing::HoldPoint* hold) {
    fs_.before_delete = [this, hold](const std::string& path) {
      if (path == Path(1)) hold->Hold();
    };
    const uint32_t first = journal->Segments().front().id;
    std::thread deleter([journal, first] { EXPECT_FALSE(journal->DeleteSegment(first).ok()); });
    hold->WaitUntilHeld();
    return deleter;
  }
  // Reads `at` on a thread of its own into *status.
  std::thread ReadInBackground(const Journal* journal, Location at, Status* status) {
    return std::thread([journal, at, status] {
      std::string bytes;
      *status = journal->Read(at, 64, &bytes);
    });
  }
  // What the operation at `at` reads back as.
  std::string ReadKey(const Journal& journal, Location at) {
    std::string bytes;
    Status s = journal.Read(at, 256, &bytes);
    if (!s.ok()) return s.ToString();
    Result<OpView> op =
        DecodeOp(std::string_view(bytes).substr(0, PeekOpBytes(bytes).value_or(bytes.size())));
    return op.ok() ? std::string(op->key) : op.status().ToString();
  }
  std::string Path(uint64_t number) const {
    char name[32];
    std::snprintf(name, sizeof(name), "%016llu.jnl", static_cast<unsigned long long>(number));
    return dir_.Sub("journal/") + name;
  }
  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void WriteAt(const std::string& path, uint64_t offset, const std::string& bytes) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  testing::TempDir dir_;
  testing::JournalFaultFs fs_;
  ManualClock clock_;
  // Segments are created by the roll unless a test prepares them: files and syncs as written.
  JournalOptions options_{.prepare_in_background = false};
};

TEST_F(JournalTest, AFreshJournalHasOneEmptyActiveSegment) {
  std::unique_ptr<Journal> journal = MustOpen();
  ASSERT_TRUE(journal);
  const std::vector<Journal::SegmentInfo> segments = journal->Segments();
  ASSERT_EQ(1u, segments.size());
  EXPECT_EQ(1u, segments[0].number);
  EXPECT_TRUE(segments[0].active);
  EXPECT_EQ(kSegmentHeaderBytes, segments[0].end_offset);
  EXPECT_EQ(0u, journal->last_sequence());
  EXPECT_TRUE(std::filesystem::exists(Path(1)));
}

TEST_F(JournalTest, AppendsReadBackAndReplayInOrderAfterReopen) {
  std::vector<Replayed> written;
  {
    std::unique_ptr<Journal> journal = MustOpen();
    for (const auto& keys :
         std::vector<std::vector<std::string>>{{"a", "b"}, {"c"}, {"d", "e", "f"}}) {
      for (Replayed& r : Append(journal.get(), keys)) written.push_back(r);
    }
    for (const Replayed& r : written) EXPECT_EQ(r.key, ReadKey(*journal, r.at));
    EXPECT_EQ(3u, journal->last_sequence());
    ASSERT_TRUE(journal->Sync().ok());
  }
  std::vector<Replayed> replayed;
  std::unique_ptr<Journal> journal = MustOpen(&replayed);
  ASSERT_TRUE(journal);
  EXPECT_EQ(written, replayed);
  EXPECT_EQ(3u, journal->last_sequence());
  // Appends go on after the last entry, numbered after it.
  const std::vector<Replayed> more = Append(journal.get(), {"g"});
  ASSERT_EQ(1u, more.size());
  EXPECT_EQ(4u, more[0].sequence);
  EXPECT_EQ(written.back().at.segment, more[0].at.segment);
  EXPECT_GT(more[0].at.offset, written.back().at.offset);
  EXPECT_EQ("g", ReadKey(*journal, more[0].at));
}

TEST_F(JournalTest, SegmentsRollAndTheOldOnesAreSealed) {
  options_.segment_bytes = 1024;
  options_.zeros_ahead_bytes = 256;
  std::vector<Replayed> written;
  {
    std::unique_ptr<Journal> journal = MustOpen();
    for (int i = 0; i < 40; ++i) {
      for (Replayed& r : Append(journal.get(), {"key-" + std::to_string(i), "x"})) {
        written.push_back(r);
      }
    }
    for (const Replayed& r : written) EXPECT_EQ(r.key, ReadKey(*journal, r.at));
    const std::vector<Journal::SegmentInfo> segments = journal->Segments();
    ASSERT_GT(segments.size(), 3u);
    for (size_t i = 0; i < segments.size(); ++i) {
      EXPECT_EQ(i + 1, segments[i].number);
      EXPECT_EQ(i + 1 == segments.size(), segments[i].active);
      EXPECT_LE(segments[i].end_offset, 1024u);
    }
    // An entry that cannot fit in any segment is refused, not split.
    EntryBuilder huge;
    ASSERT_TRUE(huge.Add(OpView{OpType::kPut, 0, "k", std::string(2000, 'v')}).ok());
    EXPECT_TRUE(journal->Append(&huge).status().IsInvalidArgument());
  }
  std::vector<Replayed> replayed;
  std::unique_ptr<Journal> journal = MustOpen(&replayed);
  EXPECT_EQ(written, replayed);
  // No file is larger than a segment, zeros included.
  for (const auto& entry : std::filesystem::directory_iterator(dir_.Sub("journal"))) {
    EXPECT_LE(std::filesystem::file_size(entry.path()), 1024u) << entry.path();
  }
}

TEST_F(JournalTest, ZerosAreKeptAheadOfTheData) {
  options_.zeros_ahead_bytes = 64 * 1024;
  std::unique_ptr<Journal> journal = MustOpen();
  Append(journal.get(), {"a"});
  const uint64_t end = journal->Segments()[0].end_offset;
  EXPECT_GE(std::filesystem::file_size(Path(1)), end + 32 * 1024);
  journal.reset();
  std::filesystem::remove_all(dir_.Sub("journal"));

  options_.zeros_ahead_bytes = 0;
  journal = MustOpen();
  Append(journal.get(), {"a"});
  EXPECT_EQ(journal->Segments()[0].end_offset, std::filesystem::file_size(Path(1)));
}

TEST_F(JournalTest, ATornTailIsZeroedAndWrittenOver) {
  std::vector<Replayed> written;
  uint64_t end = 0;
  {
    std::unique_ptr<Journal> journal = MustOpen();
    written = Append(journal.get(), {"a", "b"});
    ASSERT_TRUE(journal->Sync().ok());
    end = journal->Segments()[0].end_offset;
  }
  // A crash in the middle of the next entry's write: part of it reached the disk.
  EntryBuilder torn;
  ASSERT_OK(torn.Add(OpView{OpType::kPut, 0, "c", "never acknowledged"}));
  const uint64_t salt = DecodeSegmentHeader(ReadFile(Path(1)))->salt;
  const std::string entry = torn.Finish(EntryStamp{2, end, salt});
  WriteAt(Path(1), end, entry.substr(0, entry.size() - 5));

  std::vector<Replayed> replayed;
  std::unique_ptr<Journal> journal = MustOpen(&replayed);
  ASSERT_TRUE(journal);
  EXPECT_EQ(written, replayed);
  EXPECT_EQ(end, journal->Segments()[0].end_offset);
  const std::string bytes = ReadFile(Path(1));
  EXPECT_EQ(std::string(entry.size(), '\0'), bytes.substr(end, entry.size()));
  ASSERT_TRUE(journal->repaired_tail().has_value());  // for the owner to log
  EXPECT_EQ(1u, journal->repaired_tail()->segment_number);
  EXPECT_EQ(end, journal->repaired_tail()->offset);
  EXPECT_EQ(entry.size() - 5, journal->repaired_tail()->bytes);
  // The next entry takes the torn one's place and number, and the journal reopens clean.
  const std::vector<Replayed> next = Append(journal.get(), {"d"});
  ASSERT_EQ(1u, next.size());
  EXPECT_EQ(2u, next[0].sequence);
  journal.reset();
  replayed.clear();
  journal = MustOpen(&replayed);
  ASSERT_EQ(3u, replayed.size());
  EXPECT_EQ("d", replayed[2].key);
}

TEST_F(JournalTest, DamageIsRefusedWithTheFileAndOffset) {
  std::vector<Replayed> first;
  {
    std::unique_ptr<Journal> journal = MustOpen();
    first = Append(journal.get(), {"a"});
    ASSERT_TRUE(journal->Sync().ok());
    Append(journal.get(), {"b"});  // written after "a" was synced: it vouches for it
    ASSERT_TRUE(journal->Sync().ok());
  }
  WriteAt(Path(1), first[0].at.offset + kOpHeaderBytes, "X");  // a's key
  Result<std::unique_ptr<Journal>> journal = OpenJournal();
  ASSERT_TRUE(journal.status().IsCorruption()) << journal.status().ToString();
  EXPECT_NE(std::string::npos, journal.status().message().find(Path(1)));
  EXPECT_NE(std::string::npos,
            journal.status().message().find("at offset " + std::to_string(kSegmentHeaderBytes)))
      << journal.status().message();
}

TEST_F(JournalTest, ASealedSegmentEndingTornBeforeSyncedEntriesIsDamage) {
  options_.segment_bytes = 512;
  options_.zeros_ahead_bytes = 0;
  {
    std::unique_ptr<Journal> journal = MustOpen();
    for (int i = 0; i < 24; ++i) {
      Append(journal.get(), {"key-" + std::to_string(i)});
      ASSERT_OK(journal->Sync());  // every later entry says its segment was synced
    }
    ASSERT_GT(journal->Segments().size(), 2u);
  }
  const uint64_t size = std::filesystem::file_size(Path(1));
  WriteAt(Path(1), size, "junk junk junk junk junk junk");
  Result<std::unique_ptr<Journal>> journal = OpenJournal();
  ASSERT_TRUE(journal.status().IsCorruption()) << journal.status().ToString();
  EXPECT_NE(std::string::npos, journal.status().message().find("sealed"));
  EXPECT_NE(std::string::npos, journal.status().message().find("after a sync"));
}

TEST_F(JournalTest, ASealedSegmentEndingTornWithNothingSyncedAfterItEndsTheJournal) {
  // A power cut before any sync of the later segments: the end of segment 1 never reached the
  // disk, segments 2 and 3 did.
  options_.segment_bytes = 512;
  std::vector<Replayed> written;
  {
    std::unique_ptr<Journal> journal = MustOpen();
    for (int guard = 0; guard < 10'000 && journal->Segments().size() < 3; ++guard) {
      for (Replayed& r : Append(journal.get(), {"key-" + std::to_string(written.size())})) {
        written.push_back(r);
      }
    }
  }
  std::vector<Replayed> in_first;
  for (const Replayed& r : written) {
    if (r.at.segment == written.front().at.segment) in_first.push_back(r);
  }
  ASSERT_GT(in_first.size(), 2u);
  WriteAt(Path(1), in_first.back().at.offset, std::string(8, '\xAB'));  // the last entry torn
  in_first.pop_back();

  // Checked first: the same replay and what Open would repair, with nothing changed.
  const std::string first_file = ReadFile(Path(1));
  std::vector<Replayed> checked;
  Result<Journal::CheckReport> check = Journal::Check(
      &fs_, dir_.Sub("journal"), [&](const Journal&, const OpView& op, Location at, uint64_t seq) {
        checked.push_back({std::string(op.key), std::string(op.value), op.type, at, seq});
      });
  ASSERT_OK(check);
  EXPECT_EQ(in_first, checked);
  EXPECT_EQ(1u, check->kept.size());
  EXPECT_EQ(2u, check->segments_to_delete);
  ASSERT_TRUE(check->tail_to_repair.has_value());
  EXPECT_EQ(0u, check->tail_to_repair->rfind("segment 1 offset ", 0)) << *check->tail_to_repair;
  EXPECT_EQ(first_file, ReadFile(Path(1)));
  EXPECT_TRUE(std::filesystem::exists(Path(2)));
  EXPECT_TRUE(std::filesystem::exists(Path(3)));

  std::vector<Replayed> replayed;
  std::unique_ptr<Journal> journal = MustOpen(&replayed);
  ASSERT_TRUE(journal);
  EXPECT_EQ(in_first, replayed);  // the prefix up to the torn entry, nothing after it
  EXPECT_FALSE(std::filesystem::exists(Path(2)));
  EXPECT_FALSE(std::filesystem::exists(Path(3)));
  ASSERT_TRUE(journal->repaired_tail().has_value());
  EXPECT_EQ(1u, journal->repaired_tail()->segment_number);
  // Writing goes on in a new segment, numbered after the deleted ones and the entries kept.
  const std::vector<Replayed> next = Append(journal.get(), {"next"});
  ASSERT_EQ(1u, next.size());
  EXPECT_EQ(in_first.back().sequence + 1, next[0].sequence);
  EXPECT_EQ(4u, journal->Segments().back().number);
}

TEST_F(JournalTest, ARollLeavesTheFullSegmentToSyncWhichSyncsOldestFirst) {
  options_.segment_bytes = 512;
  std::unique_ptr<Journal> journal = MustOpen();
  // The full segment is not synced on the writer's path (a new segment's header still is).
  fs_.fail_syncs_of = Path(1);
  for (int guard = 0; guard < 10'000 && journal->Segments().size() < 3; ++guard)
    Append(journal.get(), {"k"});
  fs_.fail_syncs_of.clear();
  EXPECT_EQ((std::vector<std::string>{Path(1), Path(2), Path(3)}), SyncedBy(journal.get()));
}

TEST_F(JournalTest, ASyncThatARollOvertookLeavesTheRestOfTheSegmentToTheNext) {
  options_.segment_bytes = 1024;
  std::unique_ptr<Journal> journal = MustOpen();
  Append(journal.get(), {"a"});
  // The sync of segment 1 waits while more is appended to it and the writer rolls on.
  testing::HoldPoint syncing;
  fs_.before_sync = [&](const std::string& path) {
    if (path == Path(1)) syncing.Hold();
  };
  Status first;
  std::thread syncer([&] { first = journal->Sync(); });
  syncing.WaitUntilHeld();
  for (int guard = 0; guard < 1000 && journal->Segments().size() < 2; ++guard) {
    Append(journal.get(), {"b"});
  }
  syncing.Release();
  syncer.join();
  fs_.before_sync = nullptr;
  ASSERT_OK(first);
  ASSERT_EQ(2u, journal->Segments().size());
  // What segment 1 received after that sync began is the next one's to make durable.
  EXPECT_EQ((std::vector<std::string>{Path(1), Path(2)}), SyncedBy(journal.get()));
}

TEST_F(JournalTest, EntriesWrittenAfterARestartDoNotVouchForSegmentsNotYetSynced) {
  options_.segment_bytes = 512;
  std::vector<Replayed> in_first;
  {
    std::unique_ptr<Journal> journal = MustOpen();
    for (int guard = 0; guard < 10'000 && journal->Segments().size() < 2; ++guard) {
      for (const Replayed& r : Append(journal.get(), {"key-" + std::to_string(guard)})) {
        if (journal->Segments().size() == 1) in_first.push_back(r);
      }
    }
  }  // the process ends without a sync
  {
    std::unique_ptr<Journal> journal = MustOpen();
    Append(journal.get(), {"after-restart"});  // not synced either
  }
  // A power cut then loses segment 1's last entry, which no sync covered.
  ASSERT_FALSE(in_first.empty());
  WriteAt(Path(1), in_first.back().at.offset, std::string(8, '\xAB'));
  Result<std::unique_ptr<Journal>> journal = OpenJournal();
  EXPECT_TRUE(journal.ok()) << journal.status().ToString();
}

TEST_F(JournalTest, ASyncNeverSucceedsAfterAConcurrentSyncFailed) {
  std::unique_ptr<Journal> journal = MustOpen();
  Append(journal.get(), {"a"});
  // One fdatasync of the file fails; any after it finds nothing left to report (as Linux's).
  fs_.FailNextSyncOf(Path(1));
  // The first Sync to reach the file waits there until the second has been started.
  testing::HoldPoint first_sync;
  fs_.before_sync = [&](const std::string&) { first_sync.Hold(); };
  Status a_status, b_status;
  std::thread a([&] { a_status = journal->Sync(); });
  first_sync.WaitUntilHeld();
  std::thread b([&] { b_status = journal->Sync(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // b as far as it gets
  first_sync.Release();
  a.join();
  b.join();
  fs_.before_sync = nullptr;
  // Whichever synced second found nothing to report: it must not vouch for the lost pages.
  EXPECT_TRUE(a_status.IsIOError()) << a_status.ToString();
  EXPECT_TRUE(b_status.IsIOError()) << b_status.ToString();
}

TEST_F(JournalTest, ATornSealedSegmentIsRepairedOnlyOnceTheSegmentsAfterItAreGone) {
  options_.segment_bytes = 512;
  std::vector<Replayed> in_first;
  {
    std::unique_ptr<Journal> journal = MustOpen();
    for (int guard = 0; guard < 10'000 && journal->Segments().size() < 3; ++guard) {
      for (const Replayed& r : Append(journal.get(), {"key-" + std::to_string(guard)})) {
        if (journal->Segments().size() == 1) in_first.push_back(r);
      }
    }
  }  // nothing synced
  ASSERT_FALSE(in_first.empty());
  WriteAt(Path(1), in_first.back().at.offset, std::string(8, '\xAB'));  // its last entry torn
  // The open that would cut the journal there cannot delete what follows.
  fs_.fail_deletes = true;
  EXPECT_FALSE(OpenJournal().ok());
  fs_.fail_deletes = false;
  // The next open still finds the cut, and replays nothing after it.
  std::vector<Replayed> replayed;
  std::unique_ptr<Journal> journal = MustOpen(&replayed);
  ASSERT_NE(nullptr, journal);
  EXPECT_EQ(in_first.size() - 1, replayed.size());
  EXPECT_FALSE(std::filesystem::exists(Path(2)));
}

// The entries a copy of the journal in `dir` replays.
size_t EntriesIn(testing::JournalFaultFs* fs, const std::string& dir, const JournalOptions& options,
                 const Clock* clock) {
  size_t replayed = 0;
  Result<std::unique_ptr<Journal>> opened =
      Journal::Open(fs, dir, options, clock,
                    [&](const Journal&, const OpView&, Location, uint64_t) { ++replayed; });
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  return replayed;
}

TEST_F(JournalTest, ACopyBeginsOnceADeleteInProgressIsDoneAndHoldsTheSegmentIfItFailed) {
  options_.segment_bytes = 1024;
  std::unique_ptr<Journal> journal = MustOpen();
  size_t appended = 0;
  for (int guard = 0; guard < 1000 && journal->Segments().size() < 2; ++guard) {
    appended += Append(journal.get(), {"k"}).size();
  }
  // The delete of segment 1 waits, its file not yet gone, while the copy starts; then it fails:
  // the journal keeps the segment, and so must the copy.
  testing::HoldPoint deleting;
  std::thread deleter = DeleteFirstHeldBeforeUnlink(journal.get(), &deleting);
  Status copy;
  std::thread copier([&] { copy = journal->CopyTo(dir_.Sub("copy")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("copy")));  // the copy waits to begin
  fs_.fail_deletes = true;
  deleting.Release();
  deleter.join();
  copier.join();
  fs_.before_delete = nullptr;
  fs_.fail_deletes = false;
  ASSERT_OK(copy);
  EXPECT_EQ(appended, EntriesIn(&fs_, dir_.Sub("copy"), options_, &clock_));
}

TEST_F(JournalTest, NoSegmentIsDeletedWhileACopyRuns) {
  options_.segment_bytes = 1024;
  std::unique_ptr<Journal> journal = MustOpen();
  size_t appended = 0;
  for (int guard = 0; guard < 1000 && journal->Segments().size() < 3; ++guard) {
    appended += Append(journal.get(), {"k"}).size();
  }
  ASSERT_OK(journal->Sync());
  // The copy holds after reading segment 1, with segment 2 still to copy.
  testing::HoldPoint copying;
  std::atomic<std::thread::id> copier_id{std::thread::id()};
  fs_.after_read = [&](const std::string& path) {
    if (std::this_thread::get_id() == copier_id.load() && path == Path(1)) copying.Hold();
  };
  Status copy;
  std::thread copier([&] {
    copier_id = std::this_thread::get_id();
    copy = journal->CopyTo(dir_.Sub("copy"));
  });
  copying.WaitUntilHeld();
  const std::vector<Journal::SegmentInfo> segments = journal->Segments();
  const Status during = journal->DeleteSegment(segments[1].id);
  copying.Release();
  copier.join();
  fs_.after_read = nullptr;
  EXPECT_TRUE(during.IsBusy()) << during.ToString();
  EXPECT_TRUE(std::filesystem::exists(Path(2)));
  ASSERT_OK(copy);
  EXPECT_EQ(appended, EntriesIn(&fs_, dir_.Sub("copy"), options_, &clock_));
  EXPECT_TRUE(journal->DeleteSegment(segments[1].id).ok());  // once the copy is done
  EXPECT_FALSE(std::filesystem::exists(Path(2)));
}

TEST_F(JournalTest, SealedSegmentsKeepAtMostTheConfiguredFilesOpen) {
  options_.segment_bytes = 1024;
  options_.max_open_sealed_files = 2;
  std::unique_ptr<Journal> journal = MustOpen();
  const std::vector<Replayed> all = FillSegments(journal.get(), 8);
  ASSERT_EQ(8u, journal->Segments().size());
  EXPECT_EQ(8, fs_.open_files());  // sealed, but not synced yet: they stay open
  ASSERT_OK(journal->Sync());
  EXPECT_EQ(2 + 1, fs_.open_files());  // and the active one
  // Every segment reads back, twice over, its file opened again as needed.
  fs_.ResetPeakOpenFiles();
  for (int pass = 0; pass < 2; ++pass) {
    for (const Replayed& r : all) EXPECT_EQ(r.key, ReadKey(*journal, r.at));
  }
  EXPECT_EQ(2 + 1, fs_.open_files());
  EXPECT_LE(fs_.peak_open_files(), 2 + 1 + 1);  // and the one being read
}

TEST_F(JournalTest, AReopenedJournalKeepsTheBoundWhileReplayingAndSyncing) {
  options_.segment_bytes = 1024;
  std::vector<Replayed> all;
  {
    std::unique_ptr<Journal> journal = MustOpen();
    all = FillSegments(journal.get(), 8);
  }  // not synced: the first Sync after the restart syncs every segment
  options_.max_open_sealed_files = 2;
  fs_.ResetPeakOpenFiles();
  std::vector<Replayed> replayed;
  std::unique_ptr<Journal> journal = MustOpen(&replayed);
  ASSERT_NE(nullptr, journal);
  EXPECT_EQ(all, replayed);
  EXPECT_EQ(2 + 1, fs_.open_files());
  for (const Replayed& r : all) EXPECT_EQ(r.key, ReadKey(*journal, r.at));  // before the Sync
  EXPECT_EQ(2 + 1, fs_.open_files());
  fs_.record = true;
  ASSERT_OK(journal->Sync());
  fs_.record = false;
  std::vector<std::string> every;
  for (uint64_t n = 1; n <= 8; ++n) every.push_back(Path(n));
  EXPECT_EQ(every, fs_.synced());
  EXPECT_EQ(2 + 1, fs_.open_files());
  EXPECT_LE(fs_.peak_open_files(), 2 + 1 + 1);  // and the one being scanned or synced
  for (const Replayed& r : all) EXPECT_EQ(r.key, ReadKey(*journal, r.at));
}

TEST_F(JournalTest, AReadWhoseSegmentIsDeletedBeforeItsFileOpensAgainFindsNothing) {
  Location first;
  std::unique_ptr<Journal> journal = WithFirstSegmentClosed(&first);
  ASSERT_NE(nullptr, journal);
  testing::HoldPoint opening;
  fs_.before_open = [&](const std::string& path) {
    if (path == Path(1)) opening.Hold();
  };
  Status read;
  std::thread reader = ReadInBackground(journal.get(), first, &read);
  opening.WaitUntilHeld();
  const Status deleted = journal->DeleteSegment(first.segment);
  opening.Release();
  reader.join();
  fs_.before_open = nullptr;
  ASSERT_OK(deleted);
  EXPECT_TRUE(read.IsNotFound()) << read.ToString();
}

TEST_F(JournalTest, ASegmentWhoseDeleteFailedWhileASyncCoveredItKeepsTheBound) {
  options_.segment_bytes = 1024;
  options_.max_open_sealed_files = 1;
  std::unique_ptr<Journal> journal = MustOpen();
  FillSegments(journal.get(), 3);
  ASSERT_EQ(3, fs_.open_files());  // none synced yet
  // Segment 1's delete holds before the unlink while a Sync covers it; then the unlink fails.
  testing::HoldPoint deleting;
  std::thread deleter = DeleteFirstHeldBeforeUnlink(journal.get(), &deleting);
  const Status synced = journal->Sync();
  fs_.fail_deletes = true;
  deleting.Release();
  deleter.join();
  fs_.before_delete = nullptr;
  fs_.fail_deletes = false;
  ASSERT_OK(synced);
  std::string bytes;
  for (int pass = 0; pass < 2; ++pass) {
    for (const Journal::SegmentInfo& segment : journal->Segments()) {
      ASSERT_OK(journal->Read(Location{segment.id, 0}, 16, &bytes));
    }
  }
  EXPECT_EQ(1 + 1, fs_.open_files());  // one sealed segment's and the active one's
}

TEST_F(JournalTest, ASegmentUnlinkedWithoutADurableDirectoryIsStillSynced) {
  options_.segment_bytes = 1024;
  std::unique_ptr<Journal> journal = MustOpen();
  FillSegments(journal.get(), 3);
  fs_.fail_directories = true;  // the unlink succeeds, the directory sync after it fails
  const Status deleted = journal->DeleteSegment(journal->Segments().front().id);
  fs_.fail_directories = false;
  EXPECT_FALSE(deleted.ok());
  // A power cut could bring segment 1 back: it must not come back torn before synced entries.
  EXPECT_EQ((std::vector<std::string>{Path(1), Path(2), Path(3)}), SyncedBy(journal.get()));
}

TEST_F(JournalTest, ASyncDuringTheDeleteOfAReplayedSegmentStillSyncsIt) {
  options_.segment_bytes = 1024;
  options_.max_open_sealed_files = 1;
  {
    std::unique_ptr<Journal> journal = MustOpen();
    FillSegments(journal.get(), 3);
  }  // not synced
  std::unique_ptr<Journal> journal = MustOpen();
  ASSERT_EQ(1 + 1, fs_.open_files());  // segment 1's file closed since the replay
  // Segment 1's delete holds after the unlink, before its directory sync; a Sync runs then.
  testing::HoldPoint directory;
  fs_.before_directory = [&] { directory.Hold(); };
  const uint32_t first = journal->Segments().front().id;
  std::thread deleter([&] { EXPECT_TRUE(journal->DeleteSegment(first).ok()); });
  directory.WaitUntilHeld();
  fs_.record = true;
  const Status synced = journal->Sync();
  fs_.record = false;
  directory.Release();
  deleter.join();
  fs_.before_directory = nullptr;
  ASSERT_OK(synced);
  EXPECT_EQ((std::vector<std::string>{Path(1), Path(2), Path(3)}), fs_.synced());
}

TEST_F(JournalTest, ASyncSkipsASegmentDurablyDeletedWhileItRan) {
  options_.segment_bytes = 1024;
  std::unique_ptr<Journal> journal = MustOpen();
  FillSegments(journal.get(), 3);
  // The Sync holds in segment 1's sync while segment 2 is deleted, durably.
  testing::HoldPoint syncing;
  fs_.before_sync = [&](const std::string& path) {
    if (path == Path(1)) syncing.Hold();
  };
  Status synced;
  std::thread syncer([&] { synced = journal->Sync(); });
  syncing.WaitUntilHeld();
  const Status deleted = journal->DeleteSegment(journal->Segments()[1].id);
  fs_.record = true;
  syncing.Release();
  syncer.join();
  fs_.record = false;
  fs_.before_sync = nullptr;
  ASSERT_OK(deleted);
  ASSERT_OK(synced);
  EXPECT_EQ((std::vector<std::string>{Path(1), Path(3)}), fs_.synced());
}

TEST_F(JournalTest, AFailedOpenDuringADeleteIsAnIOErrorNotAbsence) {
  Location first;
  std::unique_ptr<Journal> journal = WithFirstSegmentClosed(&first);
  ASSERT_NE(nullptr, journal);
  // A read of segment 1 holds before opening its file, a delete of it before the unlink; then
  // the open fails (EIO) while the file is still there: an error, not a record gone.
  testing::HoldPoint opening;
  testing::HoldPoint deleting;
  fs_.before_open = [&](const std::string& path) {
    if (path == Path(1)) opening.Hold();
  };
  fs_.before_delete = [&](const std::string& path) {
    if (path == Path(1)) deleting.Hold();
  };
  Status read;
  std::thread reader = ReadInBackground(journal.get(), first, &read);
  opening.WaitUntilHeld();
  std::thread deleter([&] { EXPECT_TRUE(journal->DeleteSegment(first.segment).ok()); });
  deleting.WaitUntilHeld();
  fs_.fail_opens = true;
  opening.Release();
  reader.join();
  fs_.fail_opens = false;
  deleting.Release();
  deleter.join();
  fs_.before_open = nullptr;
  fs_.before_delete = nullptr;
  EXPECT_TRUE(read.IsIOError()) << read.ToString();
}

TEST_F(JournalTest, AClosedSegmentWhoseFileIsMissingIsAnIOErrorNotAbsence) {
  Location first;
  std::unique_ptr<Journal> journal = WithFirstSegmentClosed(&first);
  ASSERT_NE(nullptr, journal);
  std::filesystem::remove(Path(1));  // damage from outside: the journal never deleted it
  std::string bytes;
  const Status read = journal->Read(first, 64, &bytes);
  EXPECT_TRUE(read.IsIOError()) << read.ToString();
}

TEST_F(JournalTest, ASegmentDeletedBeforeTheFirstSyncAfterARestartIsNotSynced) {
  options_.segment_bytes = 1024;
  {
    std::unique_ptr<Journal> journal = MustOpen();
    for (int guard = 0; guard < 1000 && journal->Segments().size() < 3; ++guard) {
      Append(journal.get(), {"k"});
    }
  }
  std::unique_ptr<Journal> journal = MustOpen();
  ASSERT_OK(journal->DeleteSegment(journal->Segments().front().id));
  EXPECT_EQ((std::vector<std::string>{Path(2), Path(3)}), SyncedBy(journal.get()));
}

TEST_F(JournalTest, AfterARestartTheFirstSyncCoversTheSegmentsItReplayed) {
  options_.segment_bytes = 1024;
  {
    std::unique_ptr<Journal> journal = MustOpen();
    for (int guard = 0; guard < 1000 && journal->Segments().size() < 2; ++guard) {
      Append(journal.get(), {"k"});
    }
    ASSERT_EQ(2u, journal->Segments().size());
  }  // the process ends without a sync: segment 1 is only in the page cache
  std::unique_ptr<Journal> journal = MustOpen();
  fs_.record = true;
  Append(journal.get(), {"after"});
  ASSERT_OK(journal->Sync());
  fs_.record = false;
  // Segment 1 first: were it lost to a power cut after segment 2's new entry said it was
  // synced, the next open would find a torn sealed segment before synced entries: damage.
  EXPECT_EQ((std::vector<std::string>{Path(1), Path(2)}), fs_.synced());
}

// Appends until the active segment is past half full, short of a roll.
void FillPastHalf(Journal* journal, const JournalOptions& options,
                  const std::function<void(Journal*)>& append) {
  for (int guard = 0;
       guard < 10'000 && journal->Segments().back().end_offset <= options.segment_bytes / 2;
       ++guard) {
    append(journal);
  }
}

TEST_F(JournalTest, ARollTakesThePreparedSegmentWithoutCreatingOne) {
  options_.segment_bytes = 1024;
  std::unique_ptr<Journal> journal = MustOpen();
  Append(journal.get(), {"a"});
  ASSERT_OK(journal->PrepareNextSegment());
  EXPECT_TRUE(std::filesystem::exists(Path(2)));
  EXPECT_EQ(1u, journal->Segments().size());  // not listed until a roll takes it
  ASSERT_OK(journal->PrepareNextSegment());   // one is enough
  EXPECT_FALSE(std::filesystem::exists(Path(3)));

  fs_.fail_creates = true;  // the roll into segment 2 creates nothing
  std::vector<Replayed> written = Append(journal.get(), {"a"});
  for (int guard = 0; guard < 1000 && journal->Segments().size() < 2; ++guard) {
    std::vector<Replayed> more = Append(journal.get(), {"b"});
    written.insert(written.end(), more.begin(), more.end());
  }
  ASSERT_EQ(2u, journal->Segments().size());
  EXPECT_EQ(2u, journal->Segments().back().number);
  // The roll into segment 3 has none prepared, and cannot create it.
  Status failed;
  size_t appended = written.size() + 1;  // and the first "a"
  for (int guard = 0; guard < 1000 && failed.ok(); ++guard) {
    EntryBuilder entry;
    ASSERT_OK(entry.Add(OpView{OpType::kPut, 1000, "c", "c-v"}));
    failed = journal->Append(&entry).status();
    if (failed.ok()) ++appended;
  }
  EXPECT_TRUE(failed.IsIOError()) << failed.ToString();
  EXPECT_EQ(2u, journal->Segments().back().number);
  fs_.fail_creates = false;
  journal.reset();
  std::vector<Replayed> replayed;
  journal = MustOpen(&replayed);
  EXPECT_EQ(appended, replayed.size());
}

TEST_F(JournalTest, APreparedSegmentNeverTakenIsWhereAppendsGoAfterARestart) {
  std::vector<Replayed> written;
  {
    std::unique_ptr<Journal> journal = MustOpen();
    written = Append(journal.get(), {"a", "b"});
    ASSERT_OK(journal->PrepareNextSegment());
    ASSERT_OK(journal->Sync());
  }
  std::vector<Replayed> replayed;
  std::unique_ptr<Journal> journal = MustOpen(&replayed);
  EXPECT_EQ(written, replayed);
  ASSERT_EQ(2u, journal->Segments().size());
  EXPECT_EQ(2u, journal->Segments().back().number);
  std::vector<Replayed> more = Append(journal.get(), {"c"});
  written.insert(written.end(), more.begin(), more.end());
  EXPECT_EQ(2u, written.back().sequence);
  ASSERT_OK(journal->Sync());
  journal.reset();
  replayed.clear();
  journal = MustOpen(&replayed);
  EXPECT_EQ(written, replayed);
}

TEST_F(JournalTest, AFailedPreparationLeavesTheRollToCreateTheSegment) {
  options_.segment_bytes = 1024;
  std::unique_ptr<Journal> journal = MustOpen();
  fs_.fail_creates = true;
  EXPECT_TRUE(journal->PrepareNextSegment().IsIOError());
  fs_.fail_creates = false;
  Append(journal.get(), {"a"});  // the journal did not fail
  for (int guard = 0; guard < 1000 && journal->Segments().size() < 2; ++guard) {
    Append(journal.get(), {"b"});
  }
  EXPECT_EQ(2u, journal->Segments().size());
}

TEST_F(JournalTest, TheNextSegmentIsPreparedInTheBackground) {
  options_.segment_bytes = 4096;
  options_.prepare_in_background = true;
  std::unique_ptr<Journal> journal = MustOpen();
  FillPastHalf(journal.get(), options_, [&](Journal* j) { Append(j, {"k"}); });
  for (int waited_ms = 0; waited_ms < 10'000 && !std::filesystem::exists(Path(2));
       waited_ms += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(std::filesystem::exists(Path(2)));
  fs_.fail_creates = true;
  for (int guard = 0; guard < 1000 && journal->Segments().size() < 2; ++guard) {
    Append(journal.get(), {"k"});
  }
  EXPECT_EQ(2u, journal->Segments().size());
  fs_.fail_creates = false;
}

// A journal that wants a dictionary (its first segment has none) asks the preparer for the
// next segment and goes on appending: no writer trains one or creates a file for it.
TEST_F(JournalTest, AWriterLeavesTheSegmentWithADictionaryToThePreparer) {
  options_.segment_bytes = 1 << 20;
  options_.prepare_in_background = true;
  options_.dictionary_bytes = 1024;
  const std::thread::id writer = std::this_thread::get_id();
  std::atomic<int> created_by_writer{0};
  testing::HoldPoint preparer;  // holds the preparer's creation until the writes are done
  std::unique_ptr<Journal> journal = MustOpen();
  fs_.before_create = [&](const std::string& path) {
    if (!path.ends_with(".jnl")) return;
    if (std::this_thread::get_id() == writer) {
      ++created_by_writer;
    } else {
      preparer.Hold();
    }
  };
  struct ReleaseAtExit {
    testing::HoldPoint* hold;
    ~ReleaseAtExit() { hold->Release(); }
  } release{&preparer};
  auto append = [&](int i) {
    EntryBuilder entry;
    const std::string key = "order-" + std::to_string(i);
    const std::string value = "{\"order\":" + std::to_string(i * 7919) +
                              ",\"state\":\"accepted for settlement\",\"currency\":\"EUR\"}";
    ASSERT_OK(entry.Add(OpView{OpType::kPut, 1000, key, value}));
    ASSERT_OK(journal->Append(&entry));
  };
  for (int i = 0; i < 1500; ++i) append(i);  // past the 256th sample (one value in four)
  ASSERT_EQ(0, created_by_writer.load()) << "a writer created the next segment";
  ASSERT_EQ(1u, journal->Segments().size());
  preparer.WaitUntilHeld();  // asked

  preparer.Release();
  for (int i = 1500; i < 100'000 && journal->Segments().size() < 2; ++i) {
    append(i);
    if (journal->Segments().size() < 2) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  const std::vector<Journal::SegmentInfo> segments = journal->Segments();
  ASSERT_EQ(2u, segments.size());
  EXPECT_TRUE(segments[1].active);
  EXPECT_NE(nullptr, journal->DictionaryOf(segments[1].id));
  EXPECT_EQ(0, created_by_writer.load());
  journal.reset();  // its preparer stopped
  fs_.before_create = nullptr;
}

TEST_F(JournalTest, ASegmentWhoseCreationCrashedIsDeleted) {
  {
    std::unique_ptr<Journal> journal = MustOpen();
    Append(journal.get(), {"a"});
  }
  // The next segment's file exists, its header never reached the disk (zeros, or part of it).
  std::ofstream(Path(2), std::ios::binary) << std::string(4096, '\0');
  std::vector<Replayed> replayed;
  {
    std::unique_ptr<Journal> journal = MustOpen(&replayed);
    ASSERT_TRUE(journal);
    EXPECT_EQ(1u, replayed.size());
    EXPECT_FALSE(std::filesystem::exists(Path(2)));
    // Segment 1 was sealed before 2 was created; writes go on in a new one, as numbers are
    // never reused.
    const std::vector<Journal::SegmentInfo> segments = journal->Segments();
    ASSERT_EQ(2u, segments.size());
    EXPECT_FALSE(segments[0].active);
    EXPECT_EQ(3u, segments[1].number);
    EXPECT_TRUE(segments[1].active);
  }
  std::ofstream(Path(4), std::ios::binary) << "IDEM";
  std::unique_ptr<Journal> journal = MustOpen();
  EXPECT_FALSE(std::filesystem::exists(Path(4)));
  Append(journal.get(), {"b"});
  ASSERT_TRUE(journal->Sync().ok());
  journal.reset();
  // A damaged header in front of an entry is damage, not a creation that crashed.
  WriteAt(Path(5), 0, "X");
  Result<std::unique_ptr<Journal>> damaged = OpenJournal();
  EXPECT_TRUE(damaged.status().IsCorruption()) << damaged.status().ToString();
  EXPECT_TRUE(std::filesystem::exists(Path(5)));
}

TEST_F(JournalTest, ImpossibleStatesAreRefused) {
  {
    std::unique_ptr<Journal> journal = MustOpen();
    Append(journal.get(), {"a"});
    Append(journal.get(), {"b"});
  }
  // A segment file whose header names another segment.
  std::filesystem::copy_file(Path(1), Path(5));
  EXPECT_NE(std::string::npos, OpenJournal().status().message().find("says segment 1"));
  std::filesystem::remove(Path(5));

  // A later segment whose entries are numbered below the earlier one's.
  std::string bytes = EncodeSegmentHeader(SegmentHeader{2, 0, 0, 99, {}});
  EntryBuilder entry;
  ASSERT_OK(entry.Add(OpView{OpType::kPut, 0, "z", "v"}));
  bytes += entry.Finish(EntryStamp{1, 0, 99});
  std::ofstream(Path(2), std::ios::binary) << bytes;
  Result<std::unique_ptr<Journal>> journal = OpenJournal();
  EXPECT_TRUE(journal.status().IsCorruption());
  EXPECT_NE(std::string::npos, journal.status().message().find("not above 2"))
      << journal.status().message();
}

TEST_F(JournalTest, SequenceNumbersContinueWhenEverySealedSegmentWasDeleted) {
  options_.segment_bytes = 512;
  {
    std::unique_ptr<Journal> journal = MustOpen();
    for (int guard = 0; guard < 10'000 && journal->Segments().size() < 3; ++guard)
      Append(journal.get(), {"k"});
    for (const Journal::SegmentInfo& segment : journal->Segments()) {
      if (!segment.active) ASSERT_OK(journal->DeleteSegment(segment.id));
    }
  }
  // What is left is the newest segment; cut to its header, it is as if it had just begun.
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir_.Sub("journal"))) {
    files.push_back(e.path());
  }
  ASSERT_EQ(1u, files.size());
  const std::string header = ReadFile(files[0].string()).substr(0, kSegmentHeaderBytes);
  const uint64_t began_after = DecodeSegmentHeader(header)->after_sequence;
  ASSERT_GT(began_after, 0u);
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << header;
  std::unique_ptr<Journal> journal = MustOpen();
  ASSERT_TRUE(journal);
  EXPECT_EQ(began_after, journal->last_sequence());  // not 0: numbers never go back
  Append(journal.get(), {"next"});
  EXPECT_EQ(began_after + 1, journal->last_sequence());
}

TEST_F(JournalTest, DeletingASegmentFreesItsId) {
  options_.segment_bytes = 512;
  std::vector<Replayed> in_first;
  std::unique_ptr<Journal> journal = MustOpen();
  in_first = Append(journal.get(), {"first"});
  for (int guard = 0; guard < 10'000 && journal->Segments().size() < 3; ++guard)
    Append(journal.get(), {"filler"});
  const uint32_t first_id = in_first[0].at.segment;
  const uint32_t active_id = journal->Segments().back().id;
  EXPECT_TRUE(journal->DeleteSegment(active_id).IsInvalidArgument());
  EXPECT_TRUE(journal->DeleteSegment(999).IsNotFound());
  ASSERT_TRUE(journal->DeleteSegment(first_id).ok());
  EXPECT_FALSE(std::filesystem::exists(Path(1)));
  EXPECT_TRUE(journal->DeleteSegment(first_id).IsNotFound());
  // A delete that fails leaves the segment in place, to be deleted by a later attempt.
  const uint32_t second_id = journal->Segments().front().id;
  fs_.fail_deletes = true;
  EXPECT_TRUE(journal->DeleteSegment(second_id).IsIOError());
  fs_.fail_deletes = false;
  EXPECT_EQ(second_id, journal->Segments().front().id);
  EXPECT_TRUE(std::filesystem::exists(Path(2)));
  ASSERT_OK(journal->DeleteSegment(second_id));
  EXPECT_FALSE(std::filesystem::exists(Path(2)));
  std::string bytes;
  EXPECT_TRUE(journal->Read(in_first[0].at, 64, &bytes).IsNotFound());
  // The next segment gets a new number, and not the freed id: ids go round before reuse.
  const uint64_t segments = journal->Segments().size();
  for (int guard = 0; guard < 10'000 && journal->Segments().size() == segments; ++guard)
    Append(journal.get(), {"filler"});
  const Journal::SegmentInfo newest = journal->Segments().back();
  EXPECT_NE(first_id, newest.id);
  EXPECT_EQ(4u, newest.number);
  journal.reset();
  std::vector<Replayed> replayed;
  journal = MustOpen(&replayed);
  for (const Replayed& r : replayed) EXPECT_NE("first", r.key);
}

TEST_F(JournalTest, AFailedWriteOrSyncSticks) {
  std::unique_ptr<Journal> journal = MustOpen();
  Append(journal.get(), {"a"});
  fs_.fail_syncs = true;
  EXPECT_TRUE(journal->Sync().IsIOError());
  fs_.fail_syncs = false;
  // The pages the sync could not write may be gone: nothing after it may be acknowledged.
  EXPECT_TRUE(journal->Sync().IsIOError());
  EntryBuilder entry;
  ASSERT_TRUE(entry.Add(OpView{OpType::kPut, 0, "b", "v"}).ok());
  EXPECT_TRUE(journal->Append(&entry).status().IsIOError());
  journal.reset();

  // Reopened, it works again; a failed write sticks the same way.
  journal = MustOpen();
  ASSERT_TRUE(journal);
  fs_.fail_writes = true;
  EntryBuilder other;
  ASSERT_TRUE(other.Add(OpView{OpType::kPut, 0, "c", "v"}).ok());
  Status failed = journal->Append(&other).status();
  EXPECT_NE(std::string::npos, failed.message().find("ENOSPC")) << failed.ToString();
  fs_.fail_writes = false;
  EXPECT_EQ(failed.message(), journal->Sync().message());
}

TEST_F(JournalTest, AnAppendThatFailsLeavesNothingBehind) {
  options_.zeros_ahead_bytes = 64;  // every append writes zeros ahead too: two writes
  {
    std::unique_ptr<Journal> journal = MustOpen();
    Append(journal.get(), {"a"});
    fs_.writes_before_failure = 1;  // the second write of the next append fails
    EntryBuilder entry;
    ASSERT_TRUE(entry.Add(OpView{OpType::kPut, 0, "b", "v"}).ok());
    EXPECT_TRUE(journal->Append(&entry).status().IsIOError());
  }
  fs_.fail_writes = false;
  fs_.writes_before_failure = -1;
  std::vector<Replayed> replayed;
  std::unique_ptr<Journal> journal = MustOpen(&replayed);
  ASSERT_EQ(1u, replayed.size());
  EXPECT_EQ("a", replayed[0].key);
}

// Mapped reads (JournalOptions::mapped_reads): no read goes through the file system, appends
// made after a segment was mapped read back from the mapping, a mapping counts among the sealed
// files kept open, and a segment whose file lost pages under its mapping reads as an IOError.
class JournalMappedReadsTest : public JournalTest {
 protected:
  JournalMappedReadsTest() { options_.mapped_reads = true; }
  // Mappings of this journal's segment files in the process ("(deleted)" ones too).
  int MappedSegmentFiles() const {
    std::ifstream maps("/proc/self/maps");
    int count = 0;
    for (std::string line; std::getline(maps, line);) {
      if (line.find(dir_.Sub("journal/")) != std::string::npos) ++count;
    }
    return count;
  }
};

TEST_F(JournalMappedReadsTest, ReadsCopyFromTheMappingWithoutAReadOfTheFile) {
  options_.segment_bytes = 4096;
  options_.zeros_ahead_bytes = 0;  // the active file grows with each append, past its mapping's
  std::unique_ptr<Journal> journal = MustOpen();
  ASSERT_TRUE(journal);
  std::atomic<int> reads{0};
  fs_.after_read = [&reads](const std::string&) { ++reads; };
  std::vector<Replayed> all;
  for (int i = 0; i < 400; ++i) {
    for (Replayed& r : Append(journal.get(), {"k" + std::to_string(i)})) all.push_back(r);
    EXPECT_EQ(all.back().key, ReadKey(*journal, all.back().at));  // maps the new active segment
  }
  ASSERT_GT(journal->Segments().size(), 4u);
  ASSERT_OK(journal->Sync());
  for (const Replayed& r : all) EXPECT_EQ(r.key, ReadKey(*journal, r.at));
  fs_.after_read = nullptr;
  EXPECT_EQ(0, reads.load());
}

TEST_F(JournalMappedReadsTest, SealedSegmentsKeepAtMostTheConfiguredFilesMapped) {
  options_.segment_bytes = 4096;
  options_.max_open_sealed_files = 2;
  std::unique_ptr<Journal> journal = MustOpen();
  ASSERT_TRUE(journal);
  const std::vector<Replayed> all = FillSegments(journal.get(), 8);
  ASSERT_OK(journal->Sync());
  for (int pass = 0; pass < 2; ++pass) {
    for (const Replayed& r : all) EXPECT_EQ(r.key, ReadKey(*journal, r.at));
  }
  EXPECT_EQ(2 + 1, MappedSegmentFiles());  // and the active one
  // A deleted segment's mapping goes with it.
  const Journal::SegmentInfo last_sealed = journal->Segments().at(journal->Segments().size() - 2);
  ASSERT_OK(journal->DeleteSegment(last_sealed.id));
  EXPECT_EQ(1 + 1, MappedSegmentFiles());
}

TEST_F(JournalMappedReadsTest, ASegmentTruncatedUnderItsMappingReadsAsAnIOError) {
  options_.segment_bytes = 64 << 10;
  std::unique_ptr<Journal> journal = MustOpen();
  ASSERT_TRUE(journal);
  const std::vector<Replayed> all = FillSegments(journal.get(), 2);
  ASSERT_OK(journal->Sync());
  const Replayed& far = all.at(all.size() / 2);  // past the first pages of segment 1
  ASSERT_GT(far.at.offset, 16u << 10);
  ASSERT_EQ(far.key, ReadKey(*journal, far.at));
  std::filesystem::resize_file(Path(1), 4096);  // damage from outside
  std::string bytes;
  const Status read = journal->Read(far.at, 64, &bytes);
  EXPECT_TRUE(read.IsIOError()) << read.ToString();
  EXPECT_NE(std::string::npos, read.message().find(Path(1))) << read.ToString();
  EXPECT_EQ(all.back().key, ReadKey(*journal, all.back().at));  // the rest reads on
}

TEST_F(JournalTest, BadOptionsAreRefused) {
  options_.segment_bytes = kMaxSegmentBytes + 1;
  EXPECT_TRUE(OpenJournal().status().IsInvalidArgument());
  options_.segment_bytes = 16;
  EXPECT_TRUE(OpenJournal().status().IsInvalidArgument());
}

}  // namespace
}  // namespace idem::journal
