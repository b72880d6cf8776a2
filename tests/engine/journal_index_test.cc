// The journal's index (engine/src/journal_index.h) against a model: every key's location is
// among its candidates, through growth, replacement, erasure, whole-segment erasure and probe
// runs that wrap around a table's end.
#include "journal_index.h"

#include <algorithm>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

namespace idem::journal {
namespace {

using Location = JournalIndex::Location;

std::vector<Location> Find(const JournalIndex& index, uint64_t hash) {
  std::vector<Location> out;
  index.Find(hash, &out);
  return out;
}

bool Has(const JournalIndex& index, uint64_t hash, Location at) {
  const std::vector<Location> found = Find(index, hash);
  return std::find(found.begin(), found.end(), at) != found.end();
}

// A hash in shard `shard` whose tag is `tag` (journal_index.cc: shard = bits 56..63, tag = bits
// 31..55, a tag's low bits its home slot).
uint64_t HashOf(uint64_t shard, uint64_t tag) { return (shard << 56) | (tag << 31); }

TEST(JournalIndexTest, InsertFindReplaceErase) {
  JournalIndex index;
  const uint64_t h = 0x123456789abcdef0ull;
  EXPECT_TRUE(Find(index, h).empty());
  ASSERT_TRUE(index.Insert(h, {3, 64}));
  EXPECT_EQ((std::vector<Location>{{3, 64}}), Find(index, h));
  EXPECT_EQ(1u, index.size());

  EXPECT_FALSE(index.Replace(h, {3, 72}, {4, 0}));  // not where the key is
  EXPECT_TRUE(index.Replace(h, {3, 64}, {4, 0}));
  EXPECT_EQ((std::vector<Location>{{4, 0}}), Find(index, h));

  EXPECT_FALSE(index.Erase(h, {3, 64}));
  EXPECT_TRUE(index.Erase(h, {4, 0}));
  EXPECT_TRUE(Find(index, h).empty());
  EXPECT_EQ(0u, index.size());
}

TEST(JournalIndexTest, RefusesLocationsItCannotHold) {
  JournalIndex index;
  for (Location bad : {Location{JournalIndex::kMaxSegments, 0}, Location{0, 4},
                       Location{0, JournalIndex::kMaxOffset + 8}}) {
    EXPECT_FALSE(JournalIndex::Holds(bad));
    EXPECT_FALSE(index.Insert(1, bad));
  }
  EXPECT_EQ(0u, index.size());
  const Location last{JournalIndex::kMaxSegments - 1, JournalIndex::kMaxOffset};
  ASSERT_TRUE(index.Insert(1, last));
  EXPECT_EQ((std::vector<Location>{last}), Find(index, 1));
  EXPECT_FALSE(index.Replace(1, last, Location{0, 3}));
}

TEST(JournalIndexTest, KeysWithTheSameTagAreAllCandidates) {
  JournalIndex index;
  // Two keys whose hashes differ only outside shard and tag: the index cannot tell them apart.
  const uint64_t a = HashOf(9, 12345) | 0x11;
  const uint64_t b = HashOf(9, 12345) | 0x22;
  ASSERT_TRUE(index.Insert(a, {1, 8}));
  ASSERT_TRUE(index.Insert(b, {2, 16}));
  std::vector<Location> found = Find(index, a);
  std::sort(found.begin(), found.end(),
            [](Location x, Location y) { return x.segment < y.segment; });
  EXPECT_EQ((std::vector<Location>{{1, 8}, {2, 16}}), found);
  // A different tag with the same home slot is not a candidate.
  EXPECT_TRUE(Find(index, HashOf(9, 12345 + (1u << 20))).empty());
}

TEST(JournalIndexTest, ProbeRunsThatWrapAroundTheTableEnd) {
  JournalIndex index;
  // A fresh shard has 64 slots: these all have the last slot as home, so their run wraps.
  std::vector<uint64_t> hashes;
  for (uint64_t k = 0; k < 12; ++k) hashes.push_back(HashOf(200, 63 + 64 * (k + 1)));
  for (uint64_t k = 0; k < hashes.size(); ++k) {
    ASSERT_TRUE(
        index.Insert(hashes[k], {static_cast<uint32_t>(k % 3), static_cast<uint32_t>(8 * k)}));
  }
  // Erase from the middle of the run, then a whole segment across the wrap.
  ASSERT_TRUE(index.Erase(hashes[4], {1, 32}));
  EXPECT_EQ(4u, index.EraseSegments({2}));  // k = 2, 5, 8, 11
  for (uint64_t k = 0; k < hashes.size(); ++k) {
    const Location at{static_cast<uint32_t>(k % 3), static_cast<uint32_t>(8 * k)};
    const bool kept = k != 4 && k % 3 != 2;
    EXPECT_EQ(kept, Has(index, hashes[k], at)) << k;
  }
  EXPECT_EQ(7u, index.size());
}

TEST(JournalIndexTest, RunsOfMixedHomesAcrossTheTableEnd) {
  JournalIndex index;
  // Homes 62, 63, 0 and 1 of a 64-slot shard, interleaved: removals must move an entry back only
  // when the gap is not before its home, across the wrap too.
  std::vector<uint64_t> hashes;
  for (uint64_t round = 1; round <= 3; ++round) {
    for (uint64_t home : {62u, 63u, 0u, 1u}) hashes.push_back(HashOf(77, home + 64 * round));
  }
  for (uint64_t k = 0; k < hashes.size(); ++k) {
    ASSERT_TRUE(index.Insert(hashes[k], {static_cast<uint32_t>(k), 8}));
  }
  for (uint64_t removed : {1u, 4u, 6u, 11u}) {
    ASSERT_TRUE(index.Erase(hashes[removed], {static_cast<uint32_t>(removed), 8}));
    for (uint64_t k = 0; k < hashes.size(); ++k) {
      const bool gone = k == 1 || k == 4 || k == 6 || k == 11 ? k <= removed : false;
      EXPECT_EQ(!gone, Has(index, hashes[k], {static_cast<uint32_t>(k), 8}))
          << "after removing " << removed << ", key " << k;
    }
  }
  EXPECT_EQ(2u, index.EraseSegments({0, 2}));
  EXPECT_EQ(6u, index.size());
}

// Many keys, random operations, checked against a model after each phase.
TEST(JournalIndexTest, AgreesWithAModelThroughGrowthAndErasure) {
  JournalIndex index;
  std::unordered_map<uint64_t, Location> model;  // hash -> location; hashes are unique keys
  std::mt19937_64 rng(11);
  auto random_location = [&] {
    return Location{static_cast<uint32_t>(rng() % 40), static_cast<uint32_t>(8 * (rng() % 100000))};
  };
  auto check = [&](const char* phase) {
    ASSERT_EQ(model.size(), index.size()) << phase;
    for (const auto& [hash, at] : model) ASSERT_TRUE(Has(index, hash, at)) << phase;
  };
  std::vector<uint64_t> hashes;
  for (int i = 0; i < 200'000; ++i) {
    const uint64_t h = rng();
    if (model.count(h)) continue;
    const Location at = random_location();
    ASSERT_TRUE(index.Insert(h, at));
    model[h] = at;
    hashes.push_back(h);
  }
  check("inserted");
  for (int i = 0; i < 100'000; ++i) {
    const uint64_t h = hashes[rng() % hashes.size()];
    auto it = model.find(h);
    if (it == model.end()) continue;
    if (rng() % 2 == 0) {
      const Location to = random_location();
      ASSERT_TRUE(index.Replace(h, it->second, to));
      it->second = to;
    } else {
      ASSERT_TRUE(index.Erase(h, it->second));
      model.erase(it);
    }
  }
  check("replaced and erased");
  for (const std::vector<uint32_t>& segments : {std::vector<uint32_t>{0, 7}, {39}}) {
    size_t expected = 0;
    for (auto it = model.begin(); it != model.end();) {
      if (std::find(segments.begin(), segments.end(), it->second.segment) != segments.end()) {
        it = model.erase(it);
        ++expected;
      } else {
        ++it;
      }
    }
    EXPECT_EQ(expected, index.EraseSegments(segments));
  }
  check("segments erased");
  // Erased entries are gone, not just shadowed.
  size_t stale = 0;
  for (uint64_t h : hashes) {
    if (!model.count(h)) stale += Find(index, h).size();
  }
  EXPECT_LT(stale, 10u);  // only other keys' matching tags, rare
}

TEST(JournalIndexTest, AnExportedIndexImportsAsItWas) {
  JournalIndex index;
  std::mt19937_64 rng(5);
  std::vector<std::pair<uint64_t, Location>> entries;
  for (int i = 0; i < 50'000; ++i) {
    entries.emplace_back(rng(), Location{static_cast<uint32_t>(rng() % 9),
                                         static_cast<uint32_t>(8 * (rng() % 100000))});
    ASSERT_TRUE(index.Insert(entries.back().first, entries.back().second));
  }
  // Entries whose probe runs wrap around a shard's end, and an erasure that shifted one back.
  for (uint64_t tag = 62; tag < 66; ++tag) ASSERT_TRUE(index.Insert(HashOf(3, tag), {1, 8}));
  ASSERT_TRUE(index.Erase(HashOf(3, 62), {1, 8}));

  JournalIndex copy;
  for (size_t shard = 0; shard < JournalIndex::kShards; ++shard) {
    ASSERT_TRUE(copy.Import(shard, index.Export(shard))) << shard;
  }
  EXPECT_EQ(index.size(), copy.size());
  EXPECT_EQ(index.MemoryBytes(), copy.MemoryBytes());
  for (const auto& [hash, at] : entries) ASSERT_EQ(Find(index, hash), Find(copy, hash));
  for (uint64_t tag = 63; tag < 66; ++tag) EXPECT_TRUE(Has(copy, HashOf(3, tag), {1, 8}));
  EXPECT_FALSE(Has(copy, HashOf(3, 62), {1, 8}));
  // The copy is an index like any other: it grows, replaces and erases.
  ASSERT_TRUE(copy.Replace(entries[0].first, entries[0].second, {8, 16}));
  EXPECT_TRUE(Has(copy, entries[0].first, {8, 16}));
  ASSERT_TRUE(copy.Erase(entries[1].first, entries[1].second));
  EXPECT_EQ(index.size() - 1, copy.size());

  copy.Clear();
  EXPECT_EQ(0u, copy.size());
  EXPECT_TRUE(Find(copy, entries[2].first).empty());
}

TEST(JournalIndexTest, RefusesImagesExportCouldNotGive) {
  JournalIndex source;
  ASSERT_TRUE(source.Insert(HashOf(0, 5), {2, 64}));
  const JournalIndex::ShardImage good = source.Export(0);
  ASSERT_EQ(1u, good.entries.size());
  JournalIndex index;
  JournalIndex::ShardImage bad = good;
  for (uint32_t slots : {0u, 32u, 96u, (1u << 26)}) {
    bad.slots = slots;
    EXPECT_FALSE(index.Import(0, bad)) << slots;
  }
  bad = good;
  bad.entries.assign(52, good.entries[0]);  // more than 80 % of 64 slots
  EXPECT_FALSE(index.Import(0, bad));
  bad = good;
  bad.entries = {good.entries[0] & ~(((uint64_t{1} << 16) - 1) << 23)};  // no segment: empty
  EXPECT_FALSE(index.Import(0, bad));
  EXPECT_EQ(0u, index.size());
  ASSERT_TRUE(index.Import(0, good));
  EXPECT_FALSE(index.Import(0, good));  // not empty
  EXPECT_EQ((std::vector<Location>{{2, 64}}), Find(index, HashOf(0, 5)));
}

TEST(JournalIndexTest, MemoryIsAboutEightBytesPerSlot) {
  JournalIndex index;
  const size_t empty = index.MemoryBytes();
  EXPECT_EQ(JournalIndex::kShards * 64 * 8, empty);
  std::mt19937_64 rng(3);
  const size_t n = 1'000'000;
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(index.Insert(rng(), {1, 8}));
  // Between 80 % and 40 % load after growth by doubling, a shard or two at the edge aside.
  const double per_entry = static_cast<double>(index.MemoryBytes()) / n;
  EXPECT_GE(per_entry, 8 / 0.8);
  EXPECT_LE(per_entry, 8 / 0.35);
}

TEST(JournalIndexTest, ConcurrentWritersAndReaders) {
  JournalIndex index;
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 50'000;
  auto hash_of = [](int t, uint64_t i) {
    return std::mt19937_64(static_cast<uint64_t>(t) * 1'000'003 + i)();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Location> found;
      for (uint64_t i = 0; i < kPerThread; ++i) {
        const uint64_t h = hash_of(t, i);
        const Location at{static_cast<uint32_t>(t), static_cast<uint32_t>(8 * i)};
        ASSERT_TRUE(index.Insert(h, at));
        found.clear();
        index.Find(h, &found);
        ASSERT_NE(found.end(), std::find(found.begin(), found.end(), at));
        if (i % 2 == 1) {
          ASSERT_TRUE(index.Replace(h, at, {static_cast<uint32_t>(t + 10), 0}));
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(kThreads * kPerThread, index.size());
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(kPerThread / 2, index.EraseSegments({static_cast<uint32_t>(t + 10)}));
  }
  EXPECT_EQ(kThreads * kPerThread / 2, index.size());
}

}  // namespace
}  // namespace idem::journal
