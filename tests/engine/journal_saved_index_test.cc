// The journal store's index saved at a clean close (engine/src/journal_saved_index.h): the next
// open loads it instead of replaying the journal, and agrees with a model; a saved index that
// does not read back, or that stands for a journal written since, is not used, and the open
// replays instead without losing a record; saving fails with the journal.
#include "journal_saved_index.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "journal_store.h"
#include "key_hash.h"
#include "support/journal_fault_fs.h"
#include "support/temp_dir.h"

namespace idem::journal {
namespace {

using Write = JournalStore::Write;
constexpr int64_t kForever = std::numeric_limits<int64_t>::max();

class JournalSavedIndexTest : public ::testing::TestWithParam<bool> {
 protected:
  JournalSavedIndexTest() {
    if (GetParam()) options_.dictionary_bytes = 1024;  // keys compressed in their values
    Reopen();
  }

  std::string Dir() const { return dir_.Sub("journal"); }
  std::string IndexPath() const { return Dir() + "/" + kSavedIndexName; }
  void Reopen(int64_t removal_bound_ms = 0) {
    store_.reset();
    Result<std::unique_ptr<JournalStore>> store =
        JournalStore::Open(&fs_, Dir(), options_, &clock_, removal_bound_ms);
    ASSERT_OK(store);
    store_ = std::move(*store);
  }
  void SaveAndReopen() {
    ASSERT_OK(store_->SaveIndex());
    ASSERT_TRUE(std::filesystem::exists(IndexPath()));
    Reopen();
  }

  // Random batches of puts and deletes over 200 keys, kept in `model_`.
  void WriteBatches(int batches, int64_t keep_until = 1000) {
    for (int b = 0; b < batches; ++b) {
      std::vector<std::string> keys, values;
      const int n = 1 + static_cast<int>(rng_() % 4);
      for (int i = 0; i < n; ++i) {
        keys.push_back("key-" + std::to_string(rng_() % 200));
        values.push_back("{\"n\":" + std::to_string(rng_() % 100'000) + ",\"fill\":\"" +
                         std::string(rng_() % 120, static_cast<char>('a' + rng_() % 26)) + "\"}");
      }
      std::vector<Write> batch;
      for (int i = 0; i < n; ++i) {
        if (rng_() % 5 == 0) {
          batch.push_back(Write{OpType::kDelete, keys[i], {}, 0});
          model_.erase(keys[i]);
        } else {
          batch.push_back(Write{OpType::kPut, keys[i], values[i], keep_until});
          model_[keys[i]] = values[i];
        }
      }
      ASSERT_OK(store_->Apply(batch));
    }
  }
  void ExpectModel(const std::string& when) {
    ASSERT_EQ(model_.size(), store_->records()) << when;
    for (int k = 0; k < 200; ++k) {
      const std::string key = "key-" + std::to_string(k);
      Result<std::optional<JournalStore::Version>> got = store_->Get(key);
      ASSERT_OK(got);
      auto it = model_.find(key);
      ASSERT_EQ(it == model_.end() ? "(none)" : it->second, *got ? (*got)->value : "(none)")
          << key << " " << when;
    }
  }
  size_t SegmentFiles() const {
    size_t n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(Dir())) {
      n += entry.path().extension() == ".jnl";
    }
    return n;
  }
  // Reads of segment files during `f`.
  size_t SegmentReadsDuring(const std::function<void()>& f) {
    std::atomic<size_t> reads{0};
    fs_.after_read = [&](const std::string& path) { reads += path.ends_with(".jnl"); };
    f();
    fs_.after_read = nullptr;
    return reads.load();
  }
  std::string ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void WriteFile(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  // Puts `bytes` where the saved index is and reopens: the open replays instead, says why
  // (`why` in it), and deletes the file.
  void ExpectRefused(const std::string& bytes, const std::string& why) {
    store_.reset();
    WriteFile(IndexPath(), bytes);
    Reopen();
    EXPECT_FALSE(store_->opened().loaded_saved_index);
    EXPECT_NE(std::string::npos, store_->opened().saved_index_unused.find(why))
        << store_->opened().saved_index_unused;
    EXPECT_FALSE(std::filesystem::exists(IndexPath()));
  }

  // The journal directory's files and what they hold.
  std::map<std::string, std::string> Files() {
    std::map<std::string, std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(Dir())) {
      files[entry.path().filename().string()] = ReadFile(entry.path().string());
    }
    return files;
  }
  // Rewrites the saved index with its index changed by `change`.
  void RewriteSave(const std::function<void(JournalIndex*)>& change) {
    JournalIndex index;
    Result<std::optional<SavedJournal>> saved = ReadSavedIndex(&fs_, Dir(), &index);
    ASSERT_OK(saved);
    ASSERT_TRUE(saved->has_value());
    change(&index);
    std::vector<std::vector<uint64_t>> tables(JournalIndex::kShards);
    for (size_t shard = 0; shard < tables.size(); ++shard) index.CopyTable(shard, &tables[shard]);
    ASSERT_OK(WriteSavedIndex(&fs_, Dir(), **saved, tables));
  }
  uint64_t SegmentNumber(Journal::Location at) const {
    for (const Journal::SegmentInfo& segment : store_->journal().Segments()) {
      if (segment.id == at.segment) return segment.number;
    }
    ADD_FAILURE() << "no segment " << at.segment;
    return 0;
  }

  testing::JournalFaultFs fs_;
  testing::TempDir dir_;
  ManualClock clock_;
  JournalOptions options_{
      .segment_bytes = 4096, .zeros_ahead_bytes = 1024, .prepare_in_background = false};
  std::unique_ptr<JournalStore> store_;
  std::map<std::string, std::string> model_;
  std::mt19937_64 rng_{7};
};
INSTANTIATE_TEST_SUITE_P(Compression, JournalSavedIndexTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "Compressed" : "Plain";
                         });

TEST_P(JournalSavedIndexTest, AReopenLoadsTheSavedIndexAndReadsOnlySegmentHeaders) {
  // Updates of records many segments back: a replay reads each earlier version back (a read
  // more than the segments, each); a load reads nothing but each segment's header, and what
  // follows the last one's entries (zeros ahead), to check that nothing was appended since.
  const std::vector<std::string> early = {"early-0", "early-1", "early-2", "early-3", "early-4"};
  for (const std::string& key : early) {
    ASSERT_OK(store_->Apply(std::vector<Write>{{OpType::kPut, key, "begun", 1000}}));
  }
  WriteBatches(1500);
  for (const std::string& key : early) {
    ASSERT_OK(store_->Apply(std::vector<Write>{{OpType::kPut, key, "done", 1000}}));
  }
  ASSERT_GT(SegmentFiles(), 20u);
  const size_t replayed_reads = SegmentReadsDuring([&] { Reopen(); });
  EXPECT_FALSE(store_->opened().loaded_saved_index);
  EXPECT_EQ("", store_->opened().saved_index_unused);
  EXPECT_GE(replayed_reads, SegmentFiles() + early.size());

  ASSERT_OK(store_->SaveIndex());
  const size_t loaded_reads = SegmentReadsDuring([&] { Reopen(); });
  EXPECT_TRUE(store_->opened().loaded_saved_index);
  EXPECT_EQ("", store_->opened().saved_index_unused);
  EXPECT_EQ(SegmentFiles() + 1, loaded_reads);
  EXPECT_TRUE(std::filesystem::exists(IndexPath())) << "kept: it serves later opens too";
  for (const std::string& key : early) {
    Result<std::optional<JournalStore::Version>> got = store_->Get(key);
    ASSERT_OK(got);
    ASSERT_TRUE(got->has_value()) << key;
    EXPECT_EQ("done", (*got)->value);
    // ExpectModel looks at key-0..199 and the count.
    ASSERT_OK(store_->Apply(std::vector<Write>{{OpType::kDelete, key, {}, 0}}));
  }
  ExpectModel("loaded");

  // The store goes on from there: writes, a reopen without a save since (as after a crash:
  // the old save, and what came after it replayed), another after a save.
  WriteBatches(300);
  ExpectModel("written after loading");
  Reopen();
  EXPECT_TRUE(store_->opened().loaded_saved_index);
  ExpectModel("loaded, then replayed what came after");
  SaveAndReopen();
  EXPECT_TRUE(store_->opened().loaded_saved_index);
  ExpectModel("loaded again");
  EXPECT_EQ(store_->journal().Segments().size(), SegmentFiles());
}

TEST_P(JournalSavedIndexTest, DropsAndMovesGoOnAsAfterAReplay) {
  // A record that never ends, among short-lived ones and some that end in an hour: the store that
  // loaded its index drops and moves what one that replayed the same journal does (the moves
  // are picked by the estimates of each segment's needed bytes, saved with the index).
  ASSERT_OK(store_->Apply(std::vector<Write>{{OpType::kPut, "forever", "f", kForever}}));
  WriteBatches(400, /*keep_until=*/100);
  WriteBatches(60, /*keep_until=*/3'600'000);
  const std::string copy_dir = dir_.Sub("copy");
  ASSERT_OK(store_->journal().CopyTo(copy_dir));
  Result<std::unique_ptr<JournalStore>> replayed =
      JournalStore::Open(&fs_, copy_dir, options_, &clock_, 0);
  ASSERT_OK(replayed);
  SaveAndReopen();
  ASSERT_TRUE(store_->opened().loaded_saved_index);
  const JournalStore::MovePolicy policy{.max_needed_fraction = 0.5, .min_stay_ms = 0};
  for (JournalStore* store : {store_.get(), replayed->get()}) {
    Result<size_t> dropped = store->DropEndedBy(100);
    ASSERT_OK(dropped);
    EXPECT_GT(*dropped, 0u);
  }
  Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, policy);
  Result<JournalStore::MoveReport> moved_after_replay = (*replayed)->MoveSurvivors(100, policy);
  ASSERT_OK(moved);
  ASSERT_OK(moved_after_replay);
  EXPECT_GE(moved->segments, 1u);  // the first, at least: kept by "forever" alone
  EXPECT_EQ(moved_after_replay->segments, moved->segments);
  EXPECT_EQ(moved_after_replay->ops_moved, moved->ops_moved);
  EXPECT_EQ(moved_after_replay->bytes_freed, moved->bytes_freed);
  EXPECT_EQ((*replayed)->journal().Segments().size(), store_->journal().Segments().size());
  Reopen(100);
  Result<std::optional<JournalStore::Version>> forever = store_->Get("forever");
  ASSERT_OK(forever);
  ASSERT_TRUE(forever->has_value());
  EXPECT_EQ("f", (*forever)->value);
  for (const auto& [key, value] : model_) {
    Result<std::optional<JournalStore::Version>> got = store_->Get(key);
    ASSERT_OK(got);
    if (*got) {
      EXPECT_EQ(value, (*got)->value) << key;  // what ended by 100 may be gone
    }
  }
}

// A segment prepared ahead (while the one before it was half full) and active, but empty, when
// the index was saved: its header's after sequence is below the journal's last.
TEST_P(JournalSavedIndexTest, AnEmptyActiveSegmentPreparedAheadLoads) {
  options_.prepare_in_background = true;
  Reopen();
  const size_t before = SegmentFiles();
  WriteBatches(15);  // over half a segment, less than a whole one
  ASSERT_EQ(before, store_->journal().Segments().size());
  for (int wait = 0; wait < 500 && SegmentFiles() == before; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the preparer's file
  }
  ASSERT_EQ(before + 1, SegmentFiles());
  WriteBatches(2);  // after the prepared segment's header was written
  ASSERT_EQ(before, store_->journal().Segments().size());
  Reopen();  // as after a crash: the prepared segment, last, is the active one, empty
  ASSERT_EQ(kSegmentHeaderBytes, store_->journal().Segments().back().end_offset);
  SaveAndReopen();
  EXPECT_TRUE(store_->opened().loaded_saved_index) << store_->opened().saved_index_unused;
  ExpectModel("loaded");
  WriteBatches(20);
  SaveAndReopen();
  EXPECT_TRUE(store_->opened().loaded_saved_index) << store_->opened().saved_index_unused;
  ExpectModel("loaded after writing on");
}

// The journal after a save only grows (appends) or loses whole segments (drops, moves): an open
// after any of that, without a save since (a crash), loads the save, forgets the segments gone
// and replays what was appended.
TEST_P(JournalSavedIndexTest, AnOpenLoadsAnEarlierSaveAndReplaysWhatCameAfter) {
  struct Change {
    const char* name;
    std::function<void()> apply;
  };
  auto short_lived = [&](const std::string& prefix, int n) {
    // Records outside the model that end at 50: whole segments of them.
    for (int i = 0; i < n; ++i) {
      ASSERT_OK(store_->Apply(std::vector<Write>{
          {OpType::kPut, prefix + std::to_string(i), std::string(100, 'g'), 50}}));
    }
  };
  const std::vector<Change> changes = {
      {"appended to the active segment", [&] { WriteBatches(1); }},
      {"rolled to new segments", [&] { WriteBatches(200); }},
      {"a segment dropped",
       [&] {
         short_lived("gone-", 200);
         WriteBatches(50);
         Result<size_t> dropped = store_->DropEndedBy(50);
         ASSERT_OK(dropped);
         ASSERT_GT(*dropped, 0u);
       }},
      {"a segment moved out of",
       [&] {
         ASSERT_OK(store_->Apply(std::vector<Write>{{OpType::kPut, "forever", "f", kForever}}));
         model_["forever"] = "f";
         short_lived("brief-", 200);
         WriteBatches(50);
         Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(
             50, JournalStore::MovePolicy{.max_needed_fraction = 0.5, .min_stay_ms = 0});
         ASSERT_OK(moved);
         ASSERT_GT(moved->segments, 0u);
         ASSERT_OK(store_->DropEndedBy(50));
       }},
      {"saved segments all gone",
       [&] {
         short_lived("all-", 400);
         WriteBatches(20);
         for (auto& [key, value] : model_) {  // written again after the short-lived ones
           ASSERT_OK(store_->Apply(std::vector<Write>{{OpType::kPut, key, value, kForever}}));
         }
         ASSERT_OK(store_->DropEndedBy(50));
         ASSERT_OK(store_->MoveSurvivors(
             50, JournalStore::MovePolicy{.max_needed_fraction = 1, .min_stay_ms = 0}));
       }},
  };
  WriteBatches(400);
  for (const Change& change : changes) {
    SCOPED_TRACE(change.name);
    SaveAndReopen();
    ASSERT_TRUE(store_->opened().loaded_saved_index);
    const std::vector<Journal::SegmentInfo> saved = store_->journal().Segments();
    change.apply();
    store_.reset();  // a crash: no save since
    Reopen(/*removal_bound_ms=*/50);
    EXPECT_TRUE(store_->opened().loaded_saved_index) << store_->opened().saved_index_unused;
    ExpectModel(change.name);
    if (change.name == std::string("saved segments all gone")) {
      for (const Journal::SegmentInfo& segment : saved) {
        EXPECT_FALSE(std::filesystem::exists(store_->journal().SegmentPath(segment.number)));
      }
    }
  }
}

// Saves at random points while writes, drops and moves go on, each followed by a crash at a
// random point: every open agrees with a model and with a replay of the same journal.
TEST_P(JournalSavedIndexTest, EveryOpenAfterASaveAgreesWithAReplay) {
  const JournalStore::MovePolicy move_any{.max_needed_fraction = 0.5, .min_stay_ms = 0};
  int short_keys = 0;
  int64_t bound = 0;
  for (int round = 0; round < 12; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    bool saved = false;
    for (int step = 0; step < 6; ++step) {
      switch (rng_() % 4) {
        case 0:
          WriteBatches(static_cast<int>(rng_() % 80));
          break;
        case 1:  // short-lived records outside the model, dead by the next bound
          for (int i = static_cast<int>(rng_() % 60); i > 0; --i) {
            const std::string key = "short-" + std::to_string(short_keys++);
            ASSERT_OK(store_->Apply(
                std::vector<Write>{{OpType::kPut, key, std::string(90, 's'), bound + 10}}));
          }
          break;
        case 2:
          bound += 10;
          ASSERT_OK(store_->DropEndedBy(bound));
          ASSERT_OK(store_->MoveSurvivors(bound, move_any));
          break;
        case 3:
          ASSERT_OK(store_->SaveIndex());
          saved = true;
          break;
      }
    }
    const std::string copy = dir_.Sub("copy-" + std::to_string(round));
    ASSERT_OK(store_->journal().CopyTo(copy));
    store_.reset();  // a crash
    Reopen(bound);
    if (saved) {
      EXPECT_TRUE(store_->opened().loaded_saved_index) << store_->opened().saved_index_unused;
    }
    Result<std::unique_ptr<JournalStore>> replayed =
        JournalStore::Open(&fs_, copy, options_, &clock_, bound);
    ASSERT_OK(replayed);
    ASSERT_FALSE((*replayed)->opened().loaded_saved_index);
    // Short-lived records that ended by the bound: a replay leaves them out, a loaded index may
    // hold them until their segment goes (their value is as written either way).
    for (int k = 0; k < short_keys; ++k) {
      const std::string key = "short-" + std::to_string(k);
      Result<std::optional<JournalStore::Version>> mine = store_->Get(key);
      Result<std::optional<JournalStore::Version>> theirs = (*replayed)->Get(key);
      ASSERT_OK(mine);
      ASSERT_OK(theirs);
      if (theirs->has_value()) {
        ASSERT_TRUE(mine->has_value()) << key;
        EXPECT_EQ((*theirs)->value, (*mine)->value) << key;
      } else if (mine->has_value()) {
        EXPECT_LE((*mine)->keep_until_ms, bound) << key;
      }
    }
    for (int k = 0; k < 200; ++k) {
      const std::string key = "key-" + std::to_string(k);
      Result<std::optional<JournalStore::Version>> mine = store_->Get(key);
      Result<std::optional<JournalStore::Version>> theirs = (*replayed)->Get(key);
      ASSERT_OK(mine);
      ASSERT_OK(theirs);
      auto it = model_.find(key);
      ASSERT_EQ(it == model_.end() ? "(none)" : it->second, *mine ? (*mine)->value : "(none)")
          << key;
      ASSERT_EQ(mine->has_value(), theirs->has_value()) << key;
    }
  }
}

TEST_P(JournalSavedIndexTest, ATornWriteAfterTheSaveIsRepairedAndTheSaveLoaded) {
  WriteBatches(300);
  const Journal::SegmentInfo active = store_->journal().Segments().back();
  const std::string path = store_->journal().SegmentPath(active.number);
  ASSERT_OK(store_->SaveIndex());
  store_.reset();
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(active.end_offset));
    f.write("torn write", 10);
  }
  Reopen();
  EXPECT_TRUE(store_->opened().loaded_saved_index) << store_->opened().saved_index_unused;
  ASSERT_TRUE(store_->journal().repaired_tail().has_value());
  EXPECT_EQ(active.end_offset, store_->journal().repaired_tail()->offset);
  ExpectModel("repaired");
}

// A journal that lost entries the save points at (a disk that lost its last writes, a file
// cut by hand) could not have followed the save: replayed.
TEST_P(JournalSavedIndexTest, AJournalThatLostSavedEntriesIsReplayed) {
  WriteBatches(300);
  const Journal::SegmentInfo active = store_->journal().Segments().back();
  const std::string path = store_->journal().SegmentPath(active.number);
  ASSERT_OK(store_->SaveIndex());
  store_.reset();
  std::filesystem::resize_file(path, active.end_offset - 8);
  Reopen();
  EXPECT_FALSE(store_->opened().loaded_saved_index);
  EXPECT_NE(std::string::npos, store_->opened().saved_index_unused.find("not the segment saved"))
      << store_->opened().saved_index_unused;
  EXPECT_FALSE(std::filesystem::exists(IndexPath())) << "of no use to a later open either";
}

// Another journal's saved index (a directory restored from elsewhere, with its files) names
// segments by number that this journal's are not: their salts differ.
TEST_P(JournalSavedIndexTest, AnotherJournalsSavedIndexIsNotUsed) {
  WriteBatches(300);
  ASSERT_OK(store_->SaveIndex());
  const std::string other = ReadFile(IndexPath());
  store_.reset();
  std::filesystem::remove_all(Dir());
  model_.clear();
  Reopen();
  WriteBatches(300);
  ExpectRefused(other, "not the segment saved");
  ExpectModel("replayed");
}

TEST_P(JournalSavedIndexTest, ASavedIndexThatDoesNotReadBackIsNotUsed) {
  WriteBatches(400);
  ASSERT_OK(store_->SaveIndex());
  const std::string good = ReadFile(IndexPath());
  ASSERT_GT(good.size(), 256u * 12);
  struct Damage {
    const char* name;
    std::string bytes;
    const char* why;
  };
  auto flipped = [&](size_t at) {
    std::string bytes = good;
    bytes[at] ^= 0x20;
    return bytes;
  };
  std::string version = good;
  version[8] = 9;
  const std::vector<Damage> damages = {
      {"not an index", "something else entirely, long enough", "not a saved index"},
      {"another version", version, "version 9"},
      {"its head flipped", flipped(20), "its head does not match its checksum"},
      {"a shard's entry flipped", flipped(good.size() - 10), "does not match its checksum"},
      {"cut short", good.substr(0, good.size() - 100), ""},
      {"empty", "", "ends early"},
      {"bytes after its end", good + "x", "bytes past its end"},
  };
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.name);
    ExpectRefused(damage.bytes, damage.why);
    const std::string& why = store_->opened().saved_index_unused;
    EXPECT_NE(std::string::npos, why.find(IndexPath())) << why;
    ExpectModel(damage.name);
  }
}

TEST_P(JournalSavedIndexTest, AShardThatSaysMoreEntriesThanTheFileHoldsAllocatesNothing) {
  WriteBatches(50);
  ASSERT_OK(store_->SaveIndex());
  std::string bytes = ReadFile(IndexPath());
  // The first shard starts after magic, version, head length, head and its checksum.
  const uint32_t head = static_cast<uint8_t>(bytes[12]) | static_cast<uint8_t>(bytes[13]) << 8 |
                        static_cast<uint8_t>(bytes[14]) << 16 |
                        static_cast<uint32_t>(static_cast<uint8_t>(bytes[15])) << 24;
  const size_t shard = 16 + head + 4;
  bytes.replace(shard + 4, 4, "\xff\xff\xff\x7f");  // 2^31 entries: 16 GiB
  ExpectRefused(bytes, "more than it holds");
  ExpectModel("replayed");
}

TEST_P(JournalSavedIndexTest, SavingFailsWithTheJournalAndLeavesNoIndex) {
  WriteBatches(100);
  fs_.fail_syncs = true;
  Status saved = store_->SaveIndex();
  fs_.fail_syncs = false;
  EXPECT_TRUE(saved.IsIOError()) << saved.ToString();
  EXPECT_FALSE(std::filesystem::exists(IndexPath()));
  // The journal failed: it saves nothing from now on.
  EXPECT_FALSE(store_->SaveIndex().ok());
  EXPECT_FALSE(std::filesystem::exists(IndexPath()));
  Reopen();
  EXPECT_FALSE(store_->opened().loaded_saved_index);

  // A file that cannot be created: IOError naming it; nothing left behind.
  fs_.fail_creates = true;
  saved = store_->SaveIndex();
  fs_.fail_creates = false;
  EXPECT_TRUE(saved.IsIOError()) << saved.ToString();
  EXPECT_NE(std::string::npos, saved.message().find(IndexPath() + ".tmp")) << saved.ToString();
  EXPECT_FALSE(std::filesystem::exists(IndexPath()));
  Reopen();
  EXPECT_FALSE(store_->opened().loaded_saved_index);
  ExpectModel("replayed");
}

TEST_P(JournalSavedIndexTest, WhatACrashWhileSavingLeftIsDeletedByTheOpen) {
  WriteBatches(100);
  ASSERT_OK(store_->SaveIndex());
  store_.reset();
  std::filesystem::rename(IndexPath(), IndexPath() + ".tmp");  // not renamed into place yet
  Reopen();
  EXPECT_FALSE(store_->opened().loaded_saved_index);
  EXPECT_EQ("", store_->opened().saved_index_unused);
  EXPECT_FALSE(std::filesystem::exists(IndexPath() + ".tmp"));
  ExpectModel("replayed");
}

}  // namespace
}  // namespace idem::journal

namespace idem::journal {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_P(JournalSavedIndexTest, TheCheckOfASaveAgreesWithAReplayAndChangesNothing) {
  WriteBatches(300);
  ASSERT_OK(store_->SaveIndex());
  WriteBatches(100);  // after the save: what a load replays
  store_.reset();
  const std::map<std::string, std::string> before = Files();
  Result<JournalStore::SavedIndexCheck> checked = JournalStore::CheckSavedIndex(&fs_, Dir(), 0);
  ASSERT_OK(checked);
  EXPECT_TRUE(checked->saved);
  EXPECT_EQ("", checked->unusable);
  EXPECT_EQ(model_.size(), checked->records);
  EXPECT_EQ(before, Files());
  // Past the bound every record ended: the save may still hold them, as the store that saved
  // them did (a load replays nothing written after it then, since all of that ended).
  checked = JournalStore::CheckSavedIndex(&fs_, Dir(), 1000);
  ASSERT_OK(checked);
  EXPECT_GT(checked->records, 0u);
  EXPECT_LT(checked->records, model_.size());

  // One an open would not load: why, and the file left where it is.
  WriteFile(IndexPath(), "not an index");
  checked = JournalStore::CheckSavedIndex(&fs_, Dir(), 0);
  ASSERT_OK(checked);
  EXPECT_TRUE(checked->saved);
  EXPECT_TRUE(Contains(checked->unusable, IndexPath())) << checked->unusable;
  EXPECT_TRUE(std::filesystem::exists(IndexPath()));

  std::filesystem::remove(IndexPath());
  checked = JournalStore::CheckSavedIndex(&fs_, Dir(), 0);
  ASSERT_OK(checked);
  EXPECT_FALSE(checked->saved);
  EXPECT_EQ("", checked->unusable);
}

TEST_P(JournalSavedIndexTest, TheCheckFindsASaveThatDoesNotAgreeWithTheJournal) {
  // A save whose entries pass every check of its own, but that a load would answer wrongly
  // from: it misses a record, or points at the record's earlier version.
  WriteBatches(50);
  ASSERT_OK(store_->Apply(std::vector<Write>{{OpType::kPut, "target", "first", kForever}}));
  const Journal::Location first = (*store_->Get("target"))->at;
  WriteBatches(50);
  ASSERT_OK(store_->Apply(std::vector<Write>{{OpType::kPut, "target", "second", kForever}}));
  const Journal::Location second = (*store_->Get("target"))->at;
  const std::string first_at = "segment " + std::to_string(SegmentNumber(first)) + " offset " +
                               std::to_string(first.offset) + ")";
  const std::string second_at = "segment " + std::to_string(SegmentNumber(second)) + " offset " +
                                std::to_string(second.offset) + ")";
  ASSERT_OK(store_->SaveIndex());
  store_.reset();
  const std::string saved = ReadFile(IndexPath());
  const uint64_t hash = KeyHash("target");

  RewriteSave([&](JournalIndex* index) { ASSERT_TRUE(index->Erase(hash, second)); });
  Result<JournalStore::SavedIndexCheck> checked = JournalStore::CheckSavedIndex(&fs_, Dir(), 0);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(Status::Code::kCorruption, checked.status().code());
  const std::string missing = checked.status().message();
  EXPECT_TRUE(Contains(missing, IndexPath() +
                                    " does not agree with the journal: 1 records of "
                                    "the journal are not in it (the first: " +
                                    second_at))
      << missing;
  EXPECT_FALSE(Contains(missing, "point at")) << missing;
  EXPECT_TRUE(Contains(missing, "delete it")) << missing;
  Reopen();  // what the check is for: a load believes it
  EXPECT_TRUE(store_->opened().loaded_saved_index);
  EXPECT_FALSE(store_->Get("target")->has_value());
  store_.reset();

  WriteFile(IndexPath(), saved);
  RewriteSave([&](JournalIndex* index) { ASSERT_TRUE(index->Replace(hash, second, first)); });
  checked = JournalStore::CheckSavedIndex(&fs_, Dir(), 0);
  ASSERT_FALSE(checked.ok());
  const std::string stale = checked.status().message();
  EXPECT_TRUE(Contains(stale, "1 records of the journal are not in it (the first: " + second_at))
      << stale;
  EXPECT_TRUE(Contains(stale,
                       "and 1 of its entries point at no key's last operation (the "
                       "first: " +
                           first_at))
      << stale;
  Reopen();
  EXPECT_EQ("first", (*store_->Get("target"))->value);

  store_.reset();
  WriteFile(IndexPath(), saved);
  ASSERT_OK(JournalStore::CheckSavedIndex(&fs_, Dir(), 0));
}

}  // namespace
}  // namespace idem::journal
