// The journal store (engine/src/journal_store.h) against a model: batches are atomic, a reopen
// replays what was written, a drop deletes only segments whose operations all ended and never
// brings back a replaced version, a move takes a mostly dead segment's survivors forward without
// losing or reviving one, and readers run alongside writers, drops and moves.
#include "journal_store.h"

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <rocksdb/file_system.h>

#include "crc32c.h"
#include "journal_saved_index.h"
#include "support/concurrency.h"
#include "support/data_damage.h"
#include "support/journal_fault_fs.h"
#include "support/temp_dir.h"
#include "value_dictionary.h"

namespace idem::journal {
namespace {

using Write = JournalStore::Write;

Write Put(std::string_view key, std::string_view value, int64_t keep_until) {
  return Write{OpType::kPut, key, value, keep_until};
}
Write Delete(std::string_view key, int64_t keep_until = 0) {
  return Write{OpType::kDelete, key, {}, keep_until};
}

long MaxResidentKb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

constexpr int64_t kForever = std::numeric_limits<int64_t>::max();

class JournalStoreTest : public ::testing::Test {
 protected:
  JournalStoreTest() { Reopen(); }

  void Reopen(int64_t removal_bound_ms = 0) {
    store_.reset();
    Result<std::unique_ptr<JournalStore>> store =
        JournalStore::Open(&fs_, dir_.Sub("journal"), options_, &clock_, removal_bound_ms);
    ASSERT_OK(store);
    store_ = std::move(*store);
  }
  void Apply(std::vector<Write> writes) { ASSERT_OK(store_->Apply(writes)); }
  // The key's value, or "(none)".
  std::string Get(std::string_view key) {
    Result<std::optional<JournalStore::Version>> version = store_->Get(key);
    if (!version.ok()) return version.status().ToString();
    return *version ? (*version)->value : "(none)";
  }
  int64_t KeepUntil(std::string_view key) {
    Result<std::optional<JournalStore::Version>> version = store_->Get(key);
    return version.ok() && *version ? (*version)->keep_until_ms : -1;
  }
  size_t SegmentFiles() const {
    size_t n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir_.Sub("journal"))) {
      n += entry.path().extension() == ".jnl";
    }
    return n;
  }

  // Fills the active segment with records `prefix`-<n> (keep-until `keep`). The write that
  // starts the next segment is a record that has already ended (keep-until 0), so the next
  // segment holds nothing that matters yet.
  void FillToNextSegment(const std::string& prefix, int64_t keep) {
    const std::string value(40, 'f');
    const uint64_t segment = ActiveSegment();
    for (int guard = 0; guard < 10'000 && ActiveSegment() == segment; ++guard) {
      const std::string key = prefix + "-" + std::to_string(fills_++);
      const bool starts_next = store_->journal().Segments().back().end_offset + kEntryHeaderBytes +
                                   OpBytes(key.size(), value.size()) >
                               options_.segment_bytes;
      Apply({Put(key, value, starts_next ? 0 : keep)});
    }
    ASSERT_NE(segment, ActiveSegment());
  }
  // "k" = "old" (keep-until 1'000'000) in a segment that long-lived records keep on disk, then
  // a delete of "k" at the start of the next segment (keeping that keep-until).
  void OldVersionThenDelete() {
    Apply({Put("k", "old", 1'000'000)});
    FillToNextSegment("long", 1'000'000);
    Apply({Delete("k")});
  }
  // A lock that never expires taken and released (a put and its delete) "lock-<n>", again and
  // again, until `segments` segments are full of them; returns how many.
  int TakeAndReleaseLocks(int segments) {
    int locks = 0;
    for (int i = 0; i < segments; ++i) {
      const uint64_t segment = ActiveSegment();
      while (ActiveSegment() == segment) {
        const std::string key = "lock-" + std::to_string(locks++);
        Apply({Put(key, "l", kForever)});
        Apply({Delete(key)});
      }
    }
    return locks;
  }
  bool SegmentFileExists(uint64_t number) const {
    return std::filesystem::exists(store_->journal().SegmentPath(number));
  }
  uint64_t ActiveSegment() const { return store_->journal().Segments().back().number; }
  // Segment files with a dictionary for their compressed operations (format 3).
  size_t SegmentsWithADictionary() const {
    size_t n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir_.Sub("journal"))) {
      std::ifstream f(entry.path(), std::ios::binary);
      char header[12] = {};
      f.read(header, sizeof(header));
      n += header[8] == static_cast<char>(kDictionaryFormatVersion);
    }
    return n;
  }

  int fills_ = 0;
  testing::JournalFaultFs fs_;
  testing::TempDir dir_;
  ManualClock clock_;
  // Segments are created by the roll (files as written) unless a test says otherwise.
  JournalOptions options_{
      .segment_bytes = 4096, .zeros_ahead_bytes = 1024, .prepare_in_background = false};
  std::unique_ptr<JournalStore> store_;
};

// The tests that read most, run with each kind of read: pread, copies out of mapped segments
// (JournalOptions::mapped_reads), whose mappings go with closed files and deleted segments under
// the readers, and values compressed with each segment's dictionary (read with pread).
enum class Reads { kPread, kMapped, kCompressed };
class JournalStoreReadsTest : public JournalStoreTest, public ::testing::WithParamInterface<Reads> {
 protected:
  JournalStoreReadsTest() {
    options_.mapped_reads = GetParam() == Reads::kMapped;
    if (GetParam() == Reads::kCompressed) options_.dictionary_bytes = 1024;
    Reopen();
  }
};
INSTANTIATE_TEST_SUITE_P(Reads, JournalStoreReadsTest,
                         ::testing::Values(Reads::kPread, Reads::kMapped, Reads::kCompressed),
                         [](const ::testing::TestParamInfo<Reads>& param) {
                           switch (param.param) {
                             case Reads::kPread:
                               return "Pread";
                             case Reads::kMapped:
                               return "Mapped";
                             case Reads::kCompressed:
                               break;
                           }
                           return "Compressed";
                         });

TEST_F(JournalStoreTest, PutGetReplaceDelete) {
  EXPECT_EQ("(none)", Get("a"));
  Apply({Put("a", "1", 100)});
  EXPECT_EQ("1", Get("a"));
  Apply({Put("a", "2", 100)});
  EXPECT_EQ("2", Get("a"));
  EXPECT_EQ(1u, store_->records());
  Apply({Delete("a")});
  EXPECT_EQ("(none)", Get("a"));
  EXPECT_EQ(0u, store_->records());
  // A record larger than the first read is read whole.
  const std::string big(3000, 'b');
  Apply({Put("big", big, 100)});
  EXPECT_EQ(big, Get("big"));
}

TEST_F(JournalStoreTest, ABatchIsOneEntryAndItsLastWriteOfAKeyWins) {
  Apply({Put("b", "old", 100)});
  Apply({Put("a", "1", 100), Put("a", "2", 100), Delete("b"), Put("b", "new", 100),
         Put("c", "x", 100), Delete("c")});
  EXPECT_EQ("2", Get("a"));
  EXPECT_EQ("new", Get("b"));
  EXPECT_EQ("(none)", Get("c"));
  EXPECT_EQ(2u, store_->records());
  EXPECT_EQ(2u, store_->journal().last_sequence());
  Reopen();
  EXPECT_EQ("2", Get("a"));
  EXPECT_EQ("new", Get("b"));
  EXPECT_EQ("(none)", Get("c"));
  EXPECT_EQ(2u, store_->records());
}

// A batch as large as a client may send (the engine's max_batch_ops): its writes of the same
// key resolve as in a small batch, the last winning and keeping what the earlier ones kept.
TEST_F(JournalStoreTest, ALargeBatchResolvesItsWritesOfTheSameKeyAsASmallOneDoes) {
  options_.segment_bytes = 4 << 20;
  Reopen();
  Apply({Put("key-7", "before", 100), Put("key-8", "before", 9000)});
  std::vector<std::string> keys, values;
  for (int i = 0; i < 10'000; ++i) {
    keys.push_back("key-" + std::to_string(i % 2'500));
    values.push_back("v" + std::to_string(i));
  }
  std::vector<Write> batch;
  std::map<std::string, std::string> model = {{"key-7", "before"}, {"key-8", "before"}};
  for (int i = 0; i < 10'000; ++i) {
    if (i % 7 == 3) {
      batch.push_back(Delete(keys[i], 50));
      model.erase(keys[i]);
    } else {
      batch.push_back(Put(keys[i], values[i], i < 5'000 ? 8000 : 100));
      model[keys[i]] = values[i];
    }
  }
  Apply(batch);
  for (int reopen = 0; reopen < 2; ++reopen) {
    EXPECT_EQ(model.size(), store_->records());
    for (int k = 0; k < 2'500; ++k) {
      const std::string key = "key-" + std::to_string(k);
      auto it = model.find(key);
      ASSERT_EQ(it == model.end() ? "(none)" : it->second, Get(key)) << key;
    }
    // Written last at 100, after a write of the same batch that kept until 8000; and after
    // the version before the batch, kept until 9000.
    EXPECT_EQ(8000, KeepUntil("key-1"));
    EXPECT_EQ(9000, KeepUntil("key-8"));
    Reopen();
  }
}

TEST_F(JournalStoreTest, AWriteKeepsWhatItReplacesAsLong) {
  Apply({Put("k", "long-lived", 5000)});
  Apply({Put("k", "short-lived", 100)});
  EXPECT_EQ(5000, KeepUntil("k"));
  Apply({Put("j", "a", 100), Put("j", "b", 50)});  // within a batch too
  EXPECT_EQ(100, KeepUntil("j"));
  Apply({Put("d", "x", 7000)});
  Apply({Delete("d", 10)});
  EXPECT_EQ(7000, store_->journal().Segments().back().max_keep_until_ms);
}

TEST_F(JournalStoreTest, ReopenDropsWhatEndedByTheRemovalBound) {
  Apply({Put("old", "1", 100), Put("new", "2", 1000)});
  Reopen(/*removal_bound_ms=*/100);
  EXPECT_EQ("(none)", Get("old"));
  EXPECT_EQ("2", Get("new"));
  EXPECT_EQ(1u, store_->records());
}

TEST_F(JournalStoreTest, DropsDeleteOnlySegmentsWhoseOperationsAllEnded) {
  // Segment by segment: short-lived records, then long-lived ones.
  for (int i = 0; i < 200; ++i) Apply({Put("short-" + std::to_string(i), "s", 100)});
  // A short-lived record completed into a long retention moves, and one shortened keeps its
  // old keep-until: neither may go with the short-lived segments.
  Apply({Put("short-0", "completed", 9000)});
  Apply({Put("long-to-short", "v1", 9000)});
  for (int i = 0; i < 200; ++i) Apply({Put("long-" + std::to_string(i), "l", 9000)});
  Apply({Put("long-to-short", "v2", 100)});
  const size_t files = SegmentFiles();
  ASSERT_GT(files, 4u);

  Result<size_t> dropped = store_->DropEndedBy(100);
  ASSERT_OK(dropped);
  EXPECT_GT(*dropped, 0u);
  EXPECT_EQ(files - *dropped, SegmentFiles());
  // Short-lived records gone, but those sharing the segment where the long-lived ones begin:
  // a segment lives as long as its longest-lived operation.
  EXPECT_EQ("completed", Get("short-0"));
  const uint32_t mixed = (*store_->Get("short-0"))->at.segment;
  int gone = 0;
  for (int i = 1; i < 200; ++i) {
    Result<std::optional<JournalStore::Version>> v = store_->Get("short-" + std::to_string(i));
    ASSERT_TRUE(v.ok());
    if (*v) {
      EXPECT_EQ(mixed, (*v)->at.segment) << i;
    } else {
      ++gone;
    }
  }
  EXPECT_GT(gone, 100);
  EXPECT_EQ("v2", Get("long-to-short"));
  for (int i = 0; i < 200; ++i) EXPECT_EQ("l", Get("long-" + std::to_string(i)));
  EXPECT_EQ(202u + (199 - gone), store_->records());
  // Nothing more ends by 100; the same after a reopen with that bound.
  EXPECT_EQ(0u, *store_->DropEndedBy(100));
  Reopen(100);
  EXPECT_EQ("completed", Get("short-0"));
  EXPECT_EQ("v2", Get("long-to-short"));
  EXPECT_EQ(202u, store_->records());  // the bound also removes the mixed segment's ended ones
  // Once everything ended, only the active segment is left.
  ASSERT_TRUE(store_->DropEndedBy(9000).ok());
  EXPECT_EQ(1u, SegmentFiles());
}

// A store that stops taking writes must not keep its last segment for ever: once everything in
// the active segment ended, a drop seals it and deletes it.
TEST_F(JournalStoreTest, ADropSealsAndDeletesTheActiveSegmentOnceItsOperationsAllEnded) {
  Apply({Put("a", "1", 100)});
  Apply({Put("b", "2", 200)});
  const uint64_t active = ActiveSegment();
  ASSERT_OK(store_->DropEndedBy(199));  // "b" is still needed: not sealed
  EXPECT_EQ(active, ActiveSegment());
  EXPECT_EQ("2", Get("b"));
  Result<size_t> dropped = store_->DropEndedBy(200);
  ASSERT_OK(dropped);
  EXPECT_EQ(1u, *dropped);
  EXPECT_FALSE(SegmentFileExists(active));
  EXPECT_EQ(1u, SegmentFiles());  // the new active segment, empty
  EXPECT_EQ(0u, store_->records());
  EXPECT_EQ("(none)", Get("b"));
  // An empty active segment is not sealed again, and the store takes writes as before.
  const uint64_t next = ActiveSegment();
  ASSERT_OK(store_->DropEndedBy(300));
  EXPECT_EQ(next, ActiveSegment());
  Apply({Put("c", "3", 1000)});
  ASSERT_OK(store_->Sync());
  Reopen(300);
  EXPECT_EQ("3", Get("c"));
  EXPECT_EQ("(none)", Get("a"));
}

// The seal prepares the next segment first: one it cannot create (a full disk) leaves the
// journal taking writes, and the drop retries the seal next time.
TEST_F(JournalStoreTest, ASealThatCannotCreateTheNextSegmentFailsNothing) {
  Apply({Put("a", "1", 100)});
  const uint64_t active = ActiveSegment();
  fs_.fail_creates = true;
  ASSERT_OK(store_->DropEndedBy(100));
  EXPECT_EQ(active, ActiveSegment());
  EXPECT_TRUE(store_->failure().ok()) << store_->failure().ToString();
  Apply({Put("b", "2", 200)});
  fs_.fail_creates = false;
  Result<size_t> dropped = store_->DropEndedBy(200);
  ASSERT_OK(dropped);
  EXPECT_EQ(1u, *dropped);
  EXPECT_EQ("(none)", Get("b"));
}

TEST_F(JournalStoreTest, DroppingTheNewerSegmentNeverBringsBackTheOlderVersion) {
  Apply({Put("k", "old", 9000)});
  FillToNextSegment("filler-a", 9000);
  FillToNextSegment("filler-b", 10);
  // The delete, among short-lived records only: without keeping the old version's keep-until,
  // its segment would end at 10 and go, and a reopen would find "old".
  Apply({Delete("k", 10)});
  FillToNextSegment("filler-c", 10);
  ASSERT_TRUE(store_->DropEndedBy(100).ok());
  Reopen(100);
  EXPECT_EQ("(none)", Get("k"));
}

TEST_F(JournalStoreTest, ADamagedLengthIsCorruptionWithoutReadingThatMuch) {
  Apply({Put("k", "v", 100)});
  const JournalStore::Version version = **store_->Get("k");
  const std::string path = store_->journal().SegmentPath(store_->journal().Segments()[0].number);
  Reopen();
  {
    // The value-length field (4 bytes at 8) now says ~4 GiB.
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(version.at.offset + 8));
    f.write("\x00\x00\x00\xf0", 4);
  }
  const long before = MaxResidentKb();
  Result<std::optional<JournalStore::Version>> got = store_->Get("k");
  EXPECT_TRUE(got.status().IsCorruption()) << got.status().ToString();
  EXPECT_LT(MaxResidentKb() - before, 64 * 1024);  // no 4 GiB buffer
}

TEST_P(JournalStoreReadsTest, AgreesWithAModelAcrossReopens) {
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(5);
  // Compressed: enough values between reopens for a dictionary (256 samples, one in four values).
  const int batches = GetParam() == Reads::kCompressed ? 1200 : 400;
  for (int round = 0; round < 4; ++round) {
    for (int b = 0; b < batches; ++b) {
      std::vector<std::string> keys, values;
      std::vector<Write> batch;
      const int n = 1 + static_cast<int>(rng() % 5);
      for (int i = 0; i < n; ++i) {
        keys.push_back("key-" + std::to_string(rng() % 300));
        // Shaped alike, as records are: what a dictionary (Reads::kCompressed) can learn.
        values.push_back("{\"n\":" + std::to_string(rng() % 100'000) + ",\"fill\":\"" +
                         std::string(rng() % 150, static_cast<char>('a' + rng() % 26)) + "\"}");
      }
      for (int i = 0; i < n; ++i) {
        if (rng() % 4 == 0) {
          batch.push_back(Delete(keys[i]));
          model.erase(keys[i]);
        } else {
          batch.push_back(Put(keys[i], values[i], 1000));
          model[keys[i]] = values[i];
        }
      }
      Apply(batch);
    }
    ASSERT_EQ(model.size(), store_->records()) << "round " << round;
    for (int k = 0; k < 300; ++k) {
      const std::string key = "key-" + std::to_string(k);
      auto it = model.find(key);
      ASSERT_EQ(it == model.end() ? "(none)" : it->second, Get(key)) << key;
    }
    Reopen();
  }
  EXPECT_GT(SegmentFiles(), 10u);
  if (GetParam() == Reads::kCompressed) EXPECT_GT(SegmentsWithADictionary(), 5u);
}

// A completion follows its begin closely: a reopen finds the version an update replaces in
// the segment it is scanning or the one before, which it holds in memory, instead of reading
// the record back from its file (a read per update). An update of an older segment's record
// still reads it.
TEST_F(JournalStoreTest, AReopenReadsEachSegmentOnceWhenUpdatesFollowTheirRecords) {
  Apply({Put("early", "begun", 1000)});
  for (int i = 0; i < 300; ++i) {
    const std::string key = "key-" + std::to_string(i);
    Apply({Put(key, "begun", 1000)});
    Apply({Put(key, "done", 1000)});
  }
  Apply({Put("early", "done", 1000)});  // its first version is many segments back
  const size_t segments = SegmentFiles();
  ASSERT_GT(segments, 5u);
  std::atomic<size_t> reads{0};
  fs_.after_read = [&](const std::string&) { ++reads; };
  Reopen();
  fs_.after_read = nullptr;
  EXPECT_EQ(segments + 1, reads.load()) << "each segment once, and the one old version";
  EXPECT_EQ(301u, store_->records());
  EXPECT_EQ("done", Get("early"));
  for (int i = 0; i < 300; ++i) ASSERT_EQ("done", Get("key-" + std::to_string(i))) << i;
}

TEST_F(JournalStoreTest, ATornLastBatchIsWhollyAbsentAfterReopen) {
  Apply({Put("a", "1", 100)});
  const uint64_t end = store_->journal().Segments().back().end_offset;
  const uint64_t number = store_->journal().Segments().back().number;
  Apply({Put("a", "2", 100), Put("b", "3", 100)});
  const std::string path = store_->journal().SegmentPath(number);
  store_.reset();
  // The crash cut the second batch's last bytes.
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(end + 60));
  f.write(std::string(20, '\0').data(), 20);
  f.close();
  Reopen();
  EXPECT_EQ("1", Get("a"));
  EXPECT_EQ("(none)", Get("b"));
}

// Moves with a policy that takes any segment with a needed fraction up to a quarter.
constexpr JournalStore::MovePolicy kMoveAnySparse{.max_needed_fraction = 0.25, .min_stay_ms = 0};

// A response-like value: the same fields in every record, a few bytes of its own.
std::string ResponseLike(int i) {
  return "{\"ref\":\"order-" + std::to_string(i * 7919) +
         "\",\"code\":201,\"status\":\"SUCCEEDED\",\"currency\":\"EUR\",\"amount\":" +
         std::to_string(i % 1000) + ",\"body\":\"accepted for settlement\"}";
}

// With a dictionary, puts are stored compressed, each key inside its value, once enough were
// seen to train one; the journal's first segment is sealed then rather than left without. What
// is read, after a reopen (which finds each key by decompressing it) and after a move into a
// segment with another dictionary, is what was written.
TEST_F(JournalStoreTest, ValuesAreStoredCompressedWithEachSegmentsDictionary) {
  options_.segment_bytes = 1 << 20;
  options_.dictionary_bytes = 4096;
  Reopen();
  constexpr int kRecords = 30'000;
  uint64_t raw_bytes = 0;
  for (int i = 0; i < kRecords; ++i) {
    const std::string value = ResponseLike(i);
    raw_bytes += OpBytes(("key-" + std::to_string(i)).size(), value.size());
    // Every tenth lives long: what a move must carry over.
    Apply({Put("key-" + std::to_string(i), value, i % 10 == 0 ? kForever : 100)});
  }
  const std::vector<Journal::SegmentInfo> segments = store_->journal().Segments();
  ASSERT_GE(segments.size(), 3u);
  // The first was sealed once the samples could train a dictionary (1,024 values): far from full.
  EXPECT_LT(segments[0].end_offset, options_.segment_bytes * 3 / 4);
  EXPECT_EQ(kSegmentHeaderBytes, segments[0].entries_offset);
  EXPECT_GT(segments[1].entries_offset, kSegmentHeaderBytes);
  EXPECT_EQ(segments.size() - 1, SegmentsWithADictionary());
  uint64_t stored_bytes = 0;
  for (const Journal::SegmentInfo& segment : segments) {
    stored_bytes += segment.end_offset - segment.entries_offset;
  }
  EXPECT_LT(stored_bytes, raw_bytes * 2 / 3) << "raw " << raw_bytes;
  size_t puts = 0, keys_inside = 0;
  for (size_t i = 1; i < segments.size(); ++i) {
    const std::string bytes =
        testing::ReadWholeFile(store_->journal().SegmentPath(segments[i].number));
    ASSERT_OK(ScanSegment(bytes, 0, [&](const OpView& op, uint64_t, uint64_t) {
      ++puts;
      keys_inside += op.key_in_value && op.key.empty();
    }));
  }
  EXPECT_GT(puts, size_t{kRecords / 2});
  EXPECT_EQ(puts, keys_inside);
  for (int i = 0; i < kRecords; i += 7) ASSERT_EQ(ResponseLike(i), Get("key-" + std::to_string(i)));

  Reopen();
  for (int i = 0; i < kRecords; i += 7) ASSERT_EQ(ResponseLike(i), Get("key-" + std::to_string(i)));
  // The long-lived tenth moves out of the dead segments, into segments whose dictionaries are
  // not the ones they were compressed with.
  Apply({Put("last", std::string(options_.segment_bytes / 2, 'x'), 100)});  // seals the rest
  Result<JournalStore::MoveReport> moved =
      store_->MoveSurvivors(100, {.max_needed_fraction = 0.25, .min_stay_ms = 0});
  ASSERT_OK(moved);
  EXPECT_GE(moved->segments, 2u);
  EXPECT_EQ(0u, moved->skipped) << moved->first_skipped.ToString();
  ASSERT_OK(store_->DropEndedBy(100));
  Reopen(100);
  EXPECT_EQ(static_cast<size_t>(kRecords / 10), store_->records());
  for (int i = 0; i < kRecords; i += 10)
    ASSERT_EQ(ResponseLike(i), Get("key-" + std::to_string(i)));
}

// A journal written with values compressed apart from their keys (format 2) reads as written,
// across reopens and moves; nothing is compressed into its segment any more (a build that reads
// format 2 would not read a key in a value), and the next segment is of format 3.
TEST_F(JournalStoreTest, ASegmentOfFormatTwoReadsAsWrittenAndTakesNothingCompressed) {
  std::deque<std::string> samples;
  for (int i = 0; i < 2'000; ++i) samples.push_back(ResponseLike(i + 100'000));
  Result<std::shared_ptr<const ValueDictionary>> dictionary = ValueDictionary::Train(samples, 4096);
  ASSERT_OK(dictionary);
  constexpr uint64_t kSalt = 0x5a17;
  SegmentHeader header{1, 0, 0, kSalt, std::string((*dictionary)->bytes())};
  std::string segment = EncodeSegmentHeader(header);
  segment[8] = static_cast<char>(kValueDictionaryFormatVersion);  // outside the header's checksum
  constexpr int kOld = 500;
  for (int i = 0; i < kOld; ++i) {
    std::string stored;
    ASSERT_TRUE((*dictionary)->Compress(ResponseLike(i), &stored));
    EntryBuilder entry;
    ASSERT_OK(entry.Add(OpView{OpType::kPut, i % 2 == 0 ? kForever : 100,
                               "old-" + std::to_string(i), stored, true}));
    segment += entry.Finish(EntryStamp{static_cast<uint64_t>(i + 1), 0, kSalt});
  }
  segment.resize((segment.size() / 4096 + 1) * 4096, '\0');
  store_.reset();
  std::filesystem::remove_all(dir_.Sub("journal"));
  std::filesystem::create_directories(dir_.Sub("journal"));
  const std::string path = dir_.Sub("journal") + "/0000000000000001.jnl";
  {
    std::ofstream f(path, std::ios::binary);
    f.write(segment.data(), static_cast<std::streamsize>(segment.size()));
  }
  options_.segment_bytes = 1 << 20;
  options_.dictionary_bytes = 4096;
  Reopen();
  for (int i = 0; i < kOld; ++i) ASSERT_EQ(ResponseLike(i), Get("old-" + std::to_string(i)));

  for (int i = 0; i < 3'000; ++i)
    Apply({Put("new-" + std::to_string(i), ResponseLike(i), kForever)});
  ASSERT_GE(store_->journal().Segments().size(), 2u);
  size_t ops = 0, compressed = 0;
  ASSERT_OK(ScanSegment(testing::ReadWholeFile(path), 0, [&](const OpView& op, uint64_t, uint64_t) {
    ++ops;
    compressed += op.compressed;
    EXPECT_FALSE(op.key_in_value);
  }));
  EXPECT_GT(ops, size_t{kOld});  // written on as given until the next segment could be trained
  EXPECT_EQ(size_t{kOld}, compressed);
  EXPECT_GE(SegmentsWithADictionary(), 1u);  // format 3

  Reopen();
  for (int i = 0; i < kOld; ++i) ASSERT_EQ(ResponseLike(i), Get("old-" + std::to_string(i)));
  for (int i = 0; i < 3'000; i += 7) ASSERT_EQ(ResponseLike(i), Get("new-" + std::to_string(i)));
  // Its long-lived half moves into format 3, decompressed and compressed again with its key.
  Apply({Put("last", std::string(options_.segment_bytes / 2, 'x'), 100)});  // seals the rest
  Result<JournalStore::MoveReport> moved =
      store_->MoveSurvivors(100, {.max_needed_fraction = 1.0, .min_stay_ms = 0});
  ASSERT_OK(moved);
  EXPECT_EQ(0u, moved->skipped) << moved->first_skipped.ToString();
  EXPECT_FALSE(std::filesystem::exists(path));
  Reopen(100);
  for (int i = 0; i < kOld; ++i) {
    ASSERT_EQ(i % 2 == 0 ? ResponseLike(i) : "(none)", Get("old-" + std::to_string(i)));
  }
}

// A walk visits every operation in the order written, telling current versions apart, and
// resumes exactly where a visitor stopped it; a position that is no entry's is refused.
TEST_P(JournalStoreReadsTest, AWalkVisitsEveryOperationInOrderAndResumesWhereItStopped) {
  for (int i = 0; i < 300; ++i) {
    const std::string key = "key-" + std::to_string(i % 100);  // three versions of each
    if (i % 7 == 3) {
      Apply({Delete(key, 10)});
    } else {
      Apply({Put(key, ResponseLike(i), 1'000), Put("twin-" + std::to_string(i), "v", 1'000)});
    }
  }
  ASSERT_GE(store_->journal().Segments().size(), 3u);
  struct Seen {
    std::string key;
    bool current;
    bool operator==(const Seen&) const = default;
  };
  std::vector<Seen> all;
  Result<std::optional<WalkPosition>> end =
      store_->Walk(WalkPosition{}, [&](const OpView& op, bool current) {
        all.push_back({std::string(op.key), current});
        if (current) EXPECT_EQ(Get(op.key), op.value) << op.key;
        return true;
      });
  ASSERT_OK(end);
  EXPECT_FALSE(end->has_value());
  size_t currents = 0;
  for (const Seen& seen : all) currents += seen.current;
  EXPECT_EQ(store_->records(), currents);
  EXPECT_GE(all.size(), 300u);

  // Stopped after every third operation and resumed: the same operations, in the same order.
  std::vector<Seen> paged;
  WalkPosition from;
  for (int pages = 0; pages < 10'000; ++pages) {
    int taken = 0;
    Result<std::optional<WalkPosition>> next =
        store_->Walk(from, [&](const OpView& op, bool current) {
          if (taken == 3) return false;
          ++taken;
          paged.push_back({std::string(op.key), current});
          return true;
        });
    ASSERT_OK(next);
    if (!next->has_value()) break;
    from = **next;
  }
  EXPECT_EQ(all, paged);

  const Journal::SegmentInfo first = store_->journal().Segments().front();
  auto refused = [&](WalkPosition at) {
    Result<std::optional<WalkPosition>> walk =
        store_->Walk(at, [](const OpView&, bool) { return true; });
    return walk.status().IsInvalidArgument();
  };
  EXPECT_TRUE(refused({first.number, first.entries_offset + 8, 0}));  // inside an entry
  EXPECT_TRUE(refused({first.number, first.entries_offset, 2}));      // past its operations
}

// A damaged dictionary is found at open, naming the segment; so is a compressed value in a
// segment without one.
TEST_F(JournalStoreTest, ADamagedDictionaryIsCorruptionNamingItsSegment) {
  options_.segment_bytes = 1 << 20;
  options_.dictionary_bytes = 4096;
  Reopen();
  for (int i = 0; i < 6'000; ++i)
    Apply({Put("key-" + std::to_string(i), ResponseLike(i), kForever)});
  const std::vector<Journal::SegmentInfo> segments = store_->journal().Segments();
  ASSERT_GE(segments.size(), 2u);
  ASSERT_GT(segments[1].entries_offset, kSegmentHeaderBytes);
  const std::string path = store_->journal().SegmentPath(segments[1].number);
  store_.reset();
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(kSegmentHeaderBytes + 8 + 100);  // inside the dictionary
  f.put('\x5a');
  f.close();
  Result<std::unique_ptr<JournalStore>> opened =
      JournalStore::Open(&fs_, dir_.Sub("journal"), options_, &clock_, 0);
  ASSERT_TRUE(opened.status().IsCorruption()) << opened.status().ToString();
  EXPECT_NE(std::string::npos, opened.status().message().find(path));
  EXPECT_NE(std::string::npos, opened.status().message().find("dictionary checksum"));
}

TEST_F(JournalStoreTest, MovesTheFewLongLivedRecordsOutOfAMostlyDeadSegment) {
  Apply({Put("forever", "f", kForever)});
  const uint64_t first = ActiveSegment();
  FillToNextSegment("short", 100);
  FillToNextSegment("short", 100);
  ASSERT_OK(store_->DropEndedBy(100));
  ASSERT_TRUE(SegmentFileExists(first));  // kept for its one long-lived record

  Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, kMoveAnySparse);
  ASSERT_OK(moved);
  EXPECT_EQ(1u, moved->segments);
  EXPECT_EQ(1u, moved->ops_moved);
  EXPECT_GT(moved->bytes_freed, 10 * moved->bytes_moved);
  EXPECT_FALSE(SegmentFileExists(first));
  EXPECT_EQ("f", Get("forever"));
  EXPECT_EQ(kForever, KeepUntil("forever"));
  Reopen(100);
  EXPECT_EQ("f", Get("forever"));
  EXPECT_EQ("(none)", Get("short"));
  EXPECT_EQ(1u, store_->records());
  // Its new segment is the active one: nothing more to move.
  EXPECT_EQ(0u, store_->MoveSurvivors(100, kMoveAnySparse)->segments);
}

TEST_F(JournalStoreTest, MovesOnlySegmentsThePolicyPicks) {
  // A segment of long-lived records, all still needed.
  const uint64_t needed = ActiveSegment();
  const int first_long = fills_;
  FillToNextSegment("long", kForever);
  const int longs = fills_ - 1 - first_long;  // the last one started the next segment
  // A segment that is mostly dead but whose last record ends at 5000.
  Apply({Put("until-5000", "u", 5000)});
  const uint64_t ends_soon = ActiveSegment();
  FillToNextSegment("short", 100);
  const size_t files = SegmentFiles();

  // It ends within the 10 s the policy allows: left for the drop.
  JournalStore::MovePolicy patient{.max_needed_fraction = 0.25, .min_stay_ms = 10'000};
  Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, patient);
  ASSERT_OK(moved);
  EXPECT_EQ(0u, moved->segments);
  EXPECT_EQ(files, SegmentFiles());
  // Without that patience it goes; the needed one stays.
  moved = store_->MoveSurvivors(100, kMoveAnySparse);
  ASSERT_OK(moved);
  EXPECT_EQ(1u, moved->segments);
  EXPECT_EQ(1u, moved->ops_moved);
  EXPECT_FALSE(SegmentFileExists(ends_soon));
  EXPECT_TRUE(SegmentFileExists(needed));
  EXPECT_EQ("u", Get("until-5000"));
  EXPECT_EQ(5000, KeepUntil("until-5000"));
  // With 60 % of its records replaced, 40 % of it is still needed: kept. With 80 %, moved.
  auto replace_longs = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      Apply({Put("long-" + std::to_string(first_long + i), "replaced", kForever)});
    }
  };
  replace_longs(0, longs * 6 / 10);
  ASSERT_OK(store_->MoveSurvivors(100, kMoveAnySparse));
  EXPECT_TRUE(SegmentFileExists(needed));
  replace_longs(longs * 6 / 10, longs * 8 / 10);
  moved = store_->MoveSurvivors(100, kMoveAnySparse);
  ASSERT_OK(moved);
  EXPECT_FALSE(SegmentFileExists(needed));
  EXPECT_EQ(static_cast<uint64_t>(longs - longs * 8 / 10), moved->ops_moved);
  for (int i = 0; i < longs; ++i) {
    EXPECT_EQ(i < longs * 8 / 10 ? "replaced" : std::string(40, 'f'),
              Get("long-" + std::to_string(first_long + i)));
  }
}

TEST_F(JournalStoreTest, AMovedDeleteStillKeepsTheOlderVersionFromComingBack) {
  OldVersionThenDelete();
  const uint64_t with_delete = ActiveSegment();  // among short-lived records:
  FillToNextSegment("short", 100);

  Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, kMoveAnySparse);
  ASSERT_OK(moved);
  EXPECT_EQ(1u, moved->segments);
  EXPECT_EQ(1u, moved->ops_moved);
  EXPECT_FALSE(SegmentFileExists(with_delete));
  Reopen(100);
  EXPECT_EQ("(none)", Get("k"));
}

// In the oldest segment a delete hides nothing that outlives the segment: every earlier version
// of its key is in it too. Its move leaves the delete out, and nothing comes back.
TEST_F(JournalStoreTest, ADeleteInTheOldestSegmentIsNotAppendedAgain) {
  Apply({Put("k", "old", 1'000'000)});
  Apply({Delete("k")});  // kept as long as "old"
  const uint64_t first = ActiveSegment();
  FillToNextSegment("short", 100);

  Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, kMoveAnySparse);
  ASSERT_OK(moved);
  EXPECT_EQ(1u, moved->segments);
  EXPECT_EQ(0u, moved->ops_moved);
  EXPECT_EQ(1u, moved->deletes_dropped);
  EXPECT_FALSE(SegmentFileExists(first));
  EXPECT_EQ("(none)", Get("k"));
  Reopen(100);
  EXPECT_EQ("(none)", Get("k"));
}

// An oldest segment of deletes of long-lived records (a lock taken and released, again and
// again) is picked although its deletes are more than the policy's needed fraction of it: they
// are not needed there. Behind it, the next one is the oldest, and goes the same way.
TEST_F(JournalStoreTest, OldestSegmentsOfDeletesGoWhole) {
  const int locks = TakeAndReleaseLocks(2);
  FillToNextSegment("short", 100);
  const size_t before = SegmentFiles();
  ASSERT_GE(before, 4u);

  Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, kMoveAnySparse);
  ASSERT_OK(moved);
  EXPECT_GE(moved->segments, 2u);
  EXPECT_EQ(0u, moved->ops_moved);
  EXPECT_GE(moved->deletes_dropped, static_cast<uint64_t>(locks - 2));
  Reopen(100);
  for (int i = 0; i < locks; ++i) EXPECT_EQ("(none)", Get("lock-" + std::to_string(i)));
}

// The deletes' share of the estimate is saved with the index: after a start that loaded it, an
// oldest segment of deletes still goes whole. A save of the first format, which has no such
// share, still loads; its segments' deletes then count as needed, as they did.
TEST_F(JournalStoreTest, TheDeletesShareOfTheEstimateIsSavedWithTheIndex) {
  const uint64_t segment = ActiveSegment();
  const int locks = TakeAndReleaseLocks(1);
  FillToNextSegment("short", 100);
  ASSERT_OK(store_->SaveIndex());
  const std::string path = dir_.Sub("journal") + "/" + kSavedIndexName;
  const std::string saved = testing::ReadWholeFile(path);

  // The same save in the first format: version 1, the head without its last section.
  auto u32 = [](const char* p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
    return v;
  };
  auto put32 = [](std::string* out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
  };
  ASSERT_EQ(2u, u32(saved.data() + 8));
  const uint32_t head_bytes = u32(saved.data() + 12);
  std::string head = saved.substr(16, head_bytes);
  // Past the last sequence and the segments, the needs: segments, and per one its id, its
  // buckets and 16 bytes a bucket; the deletes' needs follow in the same form.
  size_t at = 8 + 4 + size_t{u32(head.data() + 8)} * (8 + 4 + 8 + 8 + 8 + 8);
  const uint32_t with_needs = u32(head.data() + at);
  at += 4;
  for (uint32_t i = 0; i < with_needs; ++i) at += 8 + size_t{u32(head.data() + at + 4)} * 16;
  ASSERT_GE(u32(head.data() + at), 1u) << "the deletes' needs of a segment at least";
  head.resize(at);
  std::string rewritten = saved.substr(0, 8);
  put32(&rewritten, 1);
  put32(&rewritten, static_cast<uint32_t>(head.size()));
  rewritten += head;
  put32(&rewritten, MaskCrc(Crc32c(head)));
  rewritten += saved.substr(16 + head_bytes + 4);

  auto oldest_goes = [&](const std::string& file) {
    store_.reset();
    std::ofstream(path, std::ios::binary | std::ios::trunc) << file;
    Reopen(100);
    EXPECT_TRUE(store_->opened().loaded_saved_index) << store_->opened().saved_index_unused;
    Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, kMoveAnySparse);
    EXPECT_TRUE(moved.ok()) << moved.status().ToString();
    return moved.ok() && moved->deletes_dropped > 0;
  };
  EXPECT_FALSE(oldest_goes(rewritten));
  EXPECT_TRUE(SegmentFileExists(segment));
  EXPECT_TRUE(oldest_goes(saved));
  EXPECT_FALSE(SegmentFileExists(segment));
  Reopen(100);
  for (int i = 0; i < locks; ++i) EXPECT_EQ("(none)", Get("lock-" + std::to_string(i)));
}

TEST_F(JournalStoreTest, AMovedDeleteDoesNotReviveAVersionThatEndedSince) {
  OldVersionThenDelete();
  FillToNextSegment("short", 100);
  Apply({Put("k", "brief", 200)});  // after the delete: nothing to keep it as long
  ASSERT_OK(store_->MoveSurvivors(300, kMoveAnySparse));
  Reopen(300);
  EXPECT_EQ("(none)", Get("k"));
}

TEST_F(JournalStoreTest, ADeleteAndANewerPutInOneSegmentAreMovedOnce) {
  OldVersionThenDelete();
  Apply({Put("k", "brief", 500)});
  FillToNextSegment("short", 100);
  Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, kMoveAnySparse);
  ASSERT_OK(moved);
  EXPECT_EQ(2u, moved->ops_moved);  // the delete, then "brief" again after it
  EXPECT_EQ(500, KeepUntil("k"));
  Reopen(100);
  EXPECT_EQ("brief", Get("k"));
  EXPECT_EQ(500, KeepUntil("k"));
  FillToNextSegment("short-2", 100);
  ASSERT_OK(store_->MoveSurvivors(600, kMoveAnySparse));
  Reopen(600);
  EXPECT_EQ("(none)", Get("k"));
}

TEST_F(JournalStoreTest, AMovedDeleteDoesNotKeepTheNewerVersionLonger) {
  OldVersionThenDelete();
  FillToNextSegment("short", 100);
  Apply({Put("k", "brief", 500)});
  FillToNextSegment("short-2", 100);
  ASSERT_OK(store_->MoveSurvivors(100, kMoveAnySparse));
  Reopen(600);
  EXPECT_EQ("(none)", Get("k"));
}

TEST_F(JournalStoreTest, ADeleteWhoseLaterVersionCannotFollowItInOneEntryIsNotMoved) {
  OldVersionThenDelete();
  const uint64_t with_delete = ActiveSegment();
  FillToNextSegment("short", 100);
  // Fits a segment alone, not with the delete before it.
  const std::string big(
      options_.segment_bytes - kSegmentHeaderBytes - kEntryHeaderBytes - OpBytes(1, 0) - 8, 'b');
  Apply({Put("k", big, 500)});
  FillToNextSegment("short-2", 100);
  Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, kMoveAnySparse);
  ASSERT_OK(moved);
  EXPECT_EQ(1u, moved->skipped);
  EXPECT_TRUE(moved->first_skipped.IsInvalidArgument()) << moved->first_skipped.ToString();
  EXPECT_TRUE(SegmentFileExists(with_delete));
  EXPECT_EQ(big, Get("k"));
  Reopen(100);
  EXPECT_EQ(big, Get("k"));
}

TEST_F(JournalStoreTest, ADeleteMovedAfterANewerPutNeverHidesIt) {
  // A: the old versions, kept on disk by long-lived records.
  Apply({Put("a", "a-old", 1'000'000), Put("b", "b-old", 1'000'000)});
  FillToNextSegment("long", 1'000'000);
  // B: both deleted, among short-lived records.
  Apply({Delete("a"), Delete("b")});
  const uint64_t with_deletes = ActiveSegment();
  FillToNextSegment("short", 100);
  // C: "b" put again, shorter-lived than what its delete guards, among records as short-lived.
  Apply({Put("b", "b-new", 500'000)});
  FillToNextSegment("mid", 500'000);
  // The active segment: "a" put again, longer-lived than what its delete guards.
  Apply({Put("a", "a-new", 2'000'000)});

  Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, kMoveAnySparse);
  ASSERT_OK(moved);
  EXPECT_EQ(1u, moved->segments);
  EXPECT_FALSE(SegmentFileExists(with_deletes));
  // "a"'s delete is moot; "b"'s goes again, and "b-new" after it with its own keep-until.
  EXPECT_EQ(2u, moved->ops_moved);
  EXPECT_EQ("a-new", Get("a"));
  EXPECT_EQ("b-new", Get("b"));
  EXPECT_EQ(500'000, KeepUntil("b"));
  Reopen(100);
  EXPECT_EQ("a-new", Get("a"));
  EXPECT_EQ("b-new", Get("b"));
  // Once C has ended and gone, neither the old version of "b" comes back nor the new one
  // outlives its keep-until.
  Result<size_t> dropped = store_->DropEndedBy(600'000);
  ASSERT_OK(dropped);
  EXPECT_EQ(1u, *dropped);
  Reopen(600'000);
  EXPECT_EQ("(none)", Get("b"));
  EXPECT_EQ("a-new", Get("a"));
}

TEST_F(JournalStoreTest, AWriteGivenTheVersionItFoundDoesNotReadTheRecordAgain) {
  Apply({Put("k", "long-lived", 5000)});
  Result<std::optional<JournalStore::Version>> found = store_->Get("k");
  ASSERT_OK(found);
  ASSERT_TRUE(found->has_value());
  std::atomic<int> reads{0};
  fs_.after_read = [&](const std::string&) { ++reads; };
  Write update = Put("k", "short-lived", 100);
  update.found = &**found;
  Apply({update});
  EXPECT_EQ(0, reads.load());
  Apply({Put("k", "again", 100)});  // not given: looked up
  fs_.after_read = nullptr;
  EXPECT_EQ(1, reads.load());
  EXPECT_EQ("again", Get("k"));
  EXPECT_EQ(5000, KeepUntil("k"));  // still kept as long as what it replaced
  EXPECT_EQ(1u, store_->records());
  Reopen();
  EXPECT_EQ("again", Get("k"));
  EXPECT_EQ(1u, store_->records());
}

TEST_F(JournalStoreTest, AWriteGivenAVersionAMoveTookSinceLooksTheKeyUp) {
  Apply({Put("forever", "f", kForever)});
  Result<std::optional<JournalStore::Version>> found = store_->Get("forever");
  ASSERT_OK(found);
  ASSERT_TRUE(found->has_value());
  FillToNextSegment("short", 100);
  FillToNextSegment("short", 100);
  ASSERT_OK(store_->DropEndedBy(100));
  Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, kMoveAnySparse);
  ASSERT_OK(moved);
  ASSERT_EQ(1u, moved->ops_moved);  // "forever" is elsewhere now
  Write update = Put("forever", "g", kForever);
  update.found = &**found;
  const size_t records = store_->records();
  Apply({update});
  EXPECT_EQ("g", Get("forever"));
  EXPECT_EQ(records, store_->records());  // replaced where it is, not indexed twice
  Reopen(100);
  EXPECT_EQ("g", Get("forever"));
  EXPECT_EQ(1u, store_->records());
}

TEST_F(JournalStoreTest, AMoveSyncsTheCopiesBeforeItDeletesTheSegment) {
  Apply({Put("forever", "f", kForever)});
  const uint64_t first = ActiveSegment();
  FillToNextSegment("short", 100);
  FillToNextSegment("short", 100);
  const std::string first_path = store_->journal().SegmentPath(first);
  const std::string active_path = store_->journal().SegmentPath(ActiveSegment());

  // A sync that fails: the segment stays, and the record reads the same.
  fs_.fail_syncs = true;
  Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, kMoveAnySparse);
  EXPECT_TRUE(moved.status().IsIOError()) << moved.status().ToString();
  fs_.fail_syncs = false;
  EXPECT_TRUE(SegmentFileExists(first));
  Reopen(100);
  EXPECT_EQ("f", Get("forever"));
  EXPECT_EQ(1u, store_->records());

  fs_.record = true;
  moved = store_->MoveSurvivors(100, kMoveAnySparse);
  fs_.record = false;
  ASSERT_OK(moved);
  EXPECT_EQ(1u, moved->segments);
  const std::vector<std::string> events = fs_.events();
  const auto deleted = std::find(events.begin(), events.end(), "delete " + first_path);
  ASSERT_NE(events.end(), deleted);
  EXPECT_NE(deleted, std::find(events.begin(), deleted, "sync " + active_path))
      << "the copy was not synced before the delete";
  Reopen(100);
  EXPECT_EQ("f", Get("forever"));
}

TEST_F(JournalStoreTest, AMoveWhoseDeleteFailedOnlyDeletesNextTime) {
  Apply({Put("k", "old", 1'000'000)});
  FillToNextSegment("long", 1'000'000);
  // The segment to move: a record that never expires and a delete that still guards "old".
  Apply({Put("forever", "f", kForever), Delete("k")});
  const uint64_t moved_out = ActiveSegment();
  FillToNextSegment("short", 100);

  fs_.fail_deletes = true;
  Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, kMoveAnySparse);
  fs_.fail_deletes = false;
  EXPECT_TRUE(moved.status().IsIOError()) << moved.status().ToString();
  EXPECT_TRUE(SegmentFileExists(moved_out));
  moved = store_->MoveSurvivors(100, kMoveAnySparse);
  ASSERT_OK(moved);
  EXPECT_EQ(1u, moved->segments);
  EXPECT_EQ(0u, moved->ops_moved);  // copied the first time: not again
  EXPECT_FALSE(SegmentFileExists(moved_out));
  Reopen(100);
  EXPECT_EQ("f", Get("forever"));
  EXPECT_EQ("(none)", Get("k"));
}

TEST_F(JournalStoreTest, ADamagedSegmentIsNotMoved) {
  Apply({Put("forever", "f", kForever)});
  const uint64_t first = ActiveSegment();
  FillToNextSegment("short", 100);
  Apply({Put("forever-2", "f2", kForever)});
  FillToNextSegment("short", 100);
  {
    // A dead record's byte in the middle of the segment.
    std::fstream f(store_->journal().SegmentPath(first),
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2000);
    f.write("X", 1);
  }
  Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, kMoveAnySparse);
  ASSERT_OK(moved);
  EXPECT_EQ(1u, moved->skipped);
  EXPECT_TRUE(moved->first_skipped.IsCorruption()) << moved->first_skipped.ToString();
  EXPECT_EQ(1u, moved->segments);  // the next one still goes
  EXPECT_TRUE(SegmentFileExists(first));
  EXPECT_EQ("f", Get("forever"));
  EXPECT_EQ("f2", Get("forever-2"));
  moved = store_->MoveSurvivors(100, kMoveAnySparse);  // not read again for a while
  ASSERT_OK(moved);
  EXPECT_EQ(0u, moved->skipped);
  EXPECT_TRUE(SegmentFileExists(first));
  for (uint64_t i = 2; i < JournalStore::kMoveRetryCalls; ++i) {
    ASSERT_OK(store_->MoveSurvivors(100, kMoveAnySparse));
  }
  moved = store_->MoveSurvivors(100, kMoveAnySparse);  // then again
  ASSERT_OK(moved);
  EXPECT_EQ(1u, moved->skipped);
}

TEST_F(JournalStoreTest, AReadThatOutlivesTheSegmentItBeganInFindsTheMovedRecord) {
  // Over kReadAhead: a lookup reads its header, then the rest, in two reads.
  const std::string value(2 * JournalStore::kReadAhead, 'v');
  Apply({Put("stable", value, kForever)});
  const std::string first = store_->journal().SegmentPath(ActiveSegment());
  FillToNextSegment("short", 100);
  FillToNextSegment("short", 100);

  // The reader's first read of the segment holds until the segment has been moved and deleted.
  testing::HoldPoint between_reads;
  std::atomic<std::thread::id> reader_id{std::thread::id()};
  fs_.after_read = [&](const std::string& name) {
    if (std::this_thread::get_id() == reader_id.load() && name == first) between_reads.Hold();
  };
  Result<std::optional<JournalStore::Version>> got = Status::Ok();
  std::thread reader([&] {
    reader_id = std::this_thread::get_id();
    got = store_->Get("stable");
  });
  between_reads.WaitUntilHeld();
  Result<JournalStore::MoveReport> moved =
      store_->MoveSurvivors(100, {.max_needed_fraction = 1, .min_stay_ms = 0});
  between_reads.Release();
  reader.join();
  fs_.after_read = nullptr;
  ASSERT_OK(moved);
  ASSERT_FALSE(std::filesystem::exists(first));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(value, (*got)->value);
}

TEST_P(JournalStoreReadsTest, AReaderFindsARecordWhileItIsMovedOnAndOn) {
  options_.prepare_in_background = true;  // and segments prepared on their own thread
  Reopen();
  Apply({Put("stable", "kept", kForever)});
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::atomic<uint64_t> moves{0};
  // Every segment the writer fills is dead but for "stable", so each move takes it on.
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) {
      if (!store_->Apply({{Put("churn-" + std::to_string(i % 50), std::string(200, 'c'), 0)}})
               .ok()) {
        ++wrong;
      }
    }
  });
  std::thread mover([&] {
    while (!stop) {
      Result<JournalStore::MoveReport> moved = store_->MoveSurvivors(100, kMoveAnySparse);
      if (!moved.ok()) ++wrong;
      if (moved.ok()) moves += moved->segments;
    }
  });
  const auto start = std::chrono::steady_clock::now();
  while (moves.load() < 100 &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
    Result<std::optional<JournalStore::Version>> v = store_->Get("stable");
    if (!v.ok() || !*v || (*v)->value != "kept") ++wrong;
  }
  stop = true;
  writer.join();
  mover.join();
  EXPECT_EQ(0, wrong.load());
  EXPECT_GT(moves.load(), 0u);
  EXPECT_EQ("kept", Get("stable"));
}

// The store opened on a copy of this one's journal (CopyTo), under `removal_bound_ms`.
std::unique_ptr<JournalStore> OpenCopy(const std::string& dir, const JournalOptions& options,
                                       const Clock* clock, int64_t removal_bound_ms = 0) {
  Result<std::unique_ptr<JournalStore>> copy = JournalStore::Open(
      rocksdb::FileSystem::Default().get(), dir, options, clock, removal_bound_ms);
  EXPECT_TRUE(copy.ok()) << copy.status().ToString();
  return copy.ok() ? std::move(*copy) : nullptr;
}

std::string ValueIn(const JournalStore& store, std::string_view key) {
  Result<std::optional<JournalStore::Version>> version = store.Get(key);
  if (!version.ok()) return version.status().ToString();
  return *version ? (*version)->value : "(none)";
}

TEST_F(JournalStoreTest, ACopyOpensAsTheStoreItWasCopiedFrom) {
  std::map<std::string, std::string> model;
  for (int i = 0; i < 300; ++i) {
    const std::string key = "key-" + std::to_string(i % 70);
    if (i % 7 == 3) {
      Apply({Delete(key)});
      model.erase(key);
    } else {
      Apply({Put(key, std::string(30, static_cast<char>('a' + i % 26)), 1000)});
      model[key] = std::string(30, static_cast<char>('a' + i % 26));
    }
  }
  ASSERT_GT(SegmentFiles(), 3u);
  const std::string copy_dir = dir_.Sub("copy");
  ASSERT_OK(store_->journal().CopyTo(copy_dir));
  std::unique_ptr<JournalStore> copy = OpenCopy(copy_dir, options_, &clock_);
  ASSERT_NE(nullptr, copy);
  EXPECT_EQ(model.size(), copy->records());
  for (int k = 0; k < 70; ++k) {
    const std::string key = "key-" + std::to_string(k);
    auto it = model.find(key);
    EXPECT_EQ(it == model.end() ? "(none)" : it->second, ValueIn(*copy, key)) << key;
  }
  EXPECT_EQ(store_->journal().last_sequence(), copy->journal().last_sequence());
  // A directory that already holds a journal is not written over.
  EXPECT_TRUE(store_->journal().CopyTo(copy_dir).IsInvalidArgument());
}

TEST_F(JournalStoreTest, ACopyTakenWhileWritersRunHoldsWholeBatchesAndAllBeforeIt) {
  options_.prepare_in_background = true;
  Reopen();
  std::atomic<bool> stop{false};
  std::atomic<int> acknowledged{0};
  std::thread writer([&] {
    for (int i = 1; !stop; ++i) {
      const std::string v = std::to_string(i) + std::string(60, '.');
      if (!store_->Apply({{Put("a", v, 1000), Put("b", v, 1000)}}).ok()) return;
      acknowledged = i;
    }
  });
  while (acknowledged.load() < 200) std::this_thread::yield();
  const int before = acknowledged.load();
  const Status copied = store_->journal().CopyTo(dir_.Sub("copy"));
  stop = true;
  writer.join();
  ASSERT_OK(copied);
  std::unique_ptr<JournalStore> copy = OpenCopy(dir_.Sub("copy"), options_, &clock_);
  ASSERT_NE(nullptr, copy);
  const std::string a = ValueIn(*copy, "a");
  EXPECT_EQ(a, ValueIn(*copy, "b"));
  EXPECT_GE(std::stoi(a), before);
}

TEST_F(JournalStoreTest, AMoveDuringACopyDeletesTheSegmentOnlyAfterIt) {
  const std::string first = store_->journal().SegmentPath(ActiveSegment());
  FillToNextSegment("long", kForever);  // the first segment stays
  Apply({Put("forever", "f", kForever)});
  const std::string second = store_->journal().SegmentPath(ActiveSegment());
  FillToNextSegment("short", 100);  // the second is mostly dead: moved out of
  // The copy's read of the first segment waits while a move runs.
  testing::HoldPoint copy_reading;
  std::atomic<std::thread::id> copier{std::thread::id()};
  fs_.after_read = [&](const std::string& name) {
    if (std::this_thread::get_id() == copier.load() && name == first) copy_reading.Hold();
  };
  Status copied;
  std::thread copy_thread([&] {
    copier = std::this_thread::get_id();
    copied = store_->journal().CopyTo(dir_.Sub("copy"));
  });
  copy_reading.WaitUntilHeld();
  Result<JournalStore::MoveReport> during = store_->MoveSurvivors(100, kMoveAnySparse);
  copy_reading.Release();
  copy_thread.join();
  fs_.after_read = nullptr;
  EXPECT_TRUE(during.status().IsBusy()) << during.status().ToString();
  EXPECT_TRUE(std::filesystem::exists(second));  // moved out of, deleted after the copy
  ASSERT_OK(copied);
  std::unique_ptr<JournalStore> copy = OpenCopy(dir_.Sub("copy"), options_, &clock_, 100);
  ASSERT_NE(nullptr, copy);
  EXPECT_EQ("f", ValueIn(*copy, "forever"));
  Result<JournalStore::MoveReport> after = store_->MoveSurvivors(100, kMoveAnySparse);
  ASSERT_OK(after);
  EXPECT_FALSE(std::filesystem::exists(second));
  EXPECT_EQ("f", ValueIn(*store_, "forever"));
}

TEST_P(JournalStoreReadsTest, WritersDropsMovesAndReadersOnTheirOwnThreads) {
  options_.prepare_in_background = true;  // and segments prepared on their own thread
  options_.max_open_sealed_files = 1;     // and files closed and opened again under readers
  Reopen();
  Apply({Put("stable", "kept", 1'000'000)});
  std::atomic<int> round{1};
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::thread dropper([&] {
    while (!stop) {
      if (!store_->DropEndedBy(round.load() - 2).ok()) ++wrong;
      // Moves "stable" on and on: readers must find it wherever it is.
      if (!store_->MoveSurvivors(round.load() - 2, kMoveAnySparse).ok()) ++wrong;
    }
  });
  std::thread reader([&] {
    while (!stop) {
      Result<std::optional<JournalStore::Version>> v = store_->Get("stable");
      if (!v.ok() || !*v || (*v)->value != "kept") ++wrong;
      for (int i = 0; i < 20; i += 7) {
        if (!store_->Get("churn-" + std::to_string(i)).ok()) ++wrong;
      }
    }
  });
  for (; round.load() <= 40; ++round) {
    for (int i = 0; i < 20; ++i) {
      Apply({Put("churn-" + std::to_string(i), std::string(100, 'c'), round.load())});
    }
  }
  stop = true;
  dropper.join();
  reader.join();
  EXPECT_EQ(0, wrong.load());
  EXPECT_EQ("kept", Get("stable"));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(std::string(100, 'c'), Get("churn-" + std::to_string(i)));
  EXPECT_EQ(21u, store_->records());
}

TEST_P(JournalStoreReadsTest, ReadersRunAlongsideWritesAndDrops) {
  options_.prepare_in_background = true;  // and segments prepared on their own thread
  options_.max_open_sealed_files = 1;     // and files closed and opened again under readers
  Reopen();
  Apply({Put("stable", "kept", 1'000'000)});
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::thread reader([&] {
    while (!stop) {
      Result<std::optional<JournalStore::Version>> v = store_->Get("stable");
      if (!v.ok() || !*v || (*v)->value != "kept") ++wrong;
      Result<std::optional<JournalStore::Version>> other = store_->Get("churn-3");
      if (!other.ok()) ++wrong;  // present or not, never an error
    }
  });
  for (int round = 1; round <= 30; ++round) {
    for (int i = 0; i < 20; ++i) {
      Apply({Put("churn-" + std::to_string(i), std::string(100, 'c'), round)});
    }
    EXPECT_TRUE(store_->Sync().ok());  // sealed segments' files may close from here on
    EXPECT_TRUE(store_->DropEndedBy(round - 1).ok());  // not ASSERT: the reader must be joined
  }
  stop = true;
  reader.join();
  EXPECT_EQ(0, wrong.load());
  EXPECT_EQ("kept", Get("stable"));
}

}  // namespace
}  // namespace idem::journal
