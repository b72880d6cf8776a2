// The journal store (engine/src/journal_store.h) against a model: batches are atomic, a reopen
// replays what was written, a drop deletes only segments whose operations all ended and never
// brings back a replaced version, and readers run alongside writers and drops.
#include "journal_store.h"

#include <sys/resource.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <rocksdb/file_system.h>

#include "support/temp_dir.h"

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

class JournalStoreTest : public ::testing::Test {
 protected:
  JournalStoreTest() { Reopen(); }

  void Reopen(int64_t removal_bound_ms = 0) {
    store_.reset();
    Result<std::unique_ptr<JournalStore>> store =
        JournalStore::Open(rocksdb::FileSystem::Default().get(), dir_.Sub("journal"), options_,
                           &clock_, removal_bound_ms);
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

  testing::TempDir dir_;
  ManualClock clock_;
  JournalOptions options_{.segment_bytes = 4096, .zeros_ahead_bytes = 1024};
  std::unique_ptr<JournalStore> store_;
};

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

TEST_F(JournalStoreTest, DroppingTheNewerSegmentNeverBringsBackTheOlderVersion) {
  // Writes `key` (keep-until `keep`) until a new segment begins: the last one is its first.
  auto fill_to_next_segment = [&](const std::string& key, int64_t keep) {
    const uint64_t segment = store_->journal().Segments().back().number;
    for (int guard = 0; guard < 10'000 && store_->journal().Segments().back().number == segment;
         ++guard) {
      Apply({Put(key, "x", keep)});
    }
  };
  Apply({Put("k", "old", 9000)});
  fill_to_next_segment("filler-a", 9000);
  fill_to_next_segment("filler-b", 10);
  // The delete, among short-lived records only: without keeping the old version's keep-until,
  // its segment would end at 10 and go, and a reopen would find "old".
  Apply({Delete("k", 10)});
  fill_to_next_segment("filler-c", 10);
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

TEST_F(JournalStoreTest, AgreesWithAModelAcrossReopens) {
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(5);
  for (int round = 0; round < 4; ++round) {
    for (int b = 0; b < 400; ++b) {
      std::vector<std::string> keys, values;
      std::vector<Write> batch;
      const int n = 1 + static_cast<int>(rng() % 5);
      for (int i = 0; i < n; ++i) {
        keys.push_back("key-" + std::to_string(rng() % 300));
        values.push_back(std::string(rng() % 200, static_cast<char>('a' + rng() % 26)));
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

TEST_F(JournalStoreTest, WritersDropsAndReadersOnTheirOwnThreads) {
  Apply({Put("stable", "kept", 1'000'000)});
  std::atomic<int> round{1};
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::thread dropper([&] {
    while (!stop) {
      if (!store_->DropEndedBy(round.load() - 2).ok()) ++wrong;
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

TEST_F(JournalStoreTest, ReadersRunAlongsideWritesAndDrops) {
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
    ASSERT_TRUE(store_->DropEndedBy(round - 1).ok());
  }
  stop = true;
  reader.join();
  EXPECT_EQ(0, wrong.load());
  EXPECT_EQ("kept", Get("stable"));
}

}  // namespace
}  // namespace idem::journal
