// WindowKeyFilter: never a false negative, about 1 % false positives, growth past its first
// size, readiness, and adds racing lookups.
#include "window_key_filter.h"

#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace idem {
namespace {

using Filter = WindowKeyFilter;

std::unique_ptr<Filter> ReadyFilter(uint64_t expected_keys) {
  return std::make_unique<Filter>(expected_keys, std::weak_ptr<const Filter>(), /*ready=*/true);
}

// Keys shaped like the engine's (namespace prefix, then a caller's id); `salt` keeps two sets
// apart.
std::vector<std::string> RandomKeys(size_t n, uint64_t seed, std::string_view salt) {
  std::mt19937_64 random(seed);
  std::vector<std::string> keys;
  keys.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    keys.push_back("\x01pay\x00" + std::string(salt) + std::to_string(random()));
  }
  return keys;
}

// The fraction of `absent` keys the filter may contain.
double FalsePositiveRate(const Filter& filter, const std::vector<std::string>& absent) {
  size_t positives = 0;
  for (const std::string& key : absent) positives += filter.MayContain(Filter::Hash(key));
  return double(positives) / double(absent.size());
}

TEST(WindowKeyFilterTest, EmptyReadyFilterContainsNothingAndTakesNoMemory) {
  auto filter = ReadyFilter(1'000'000);
  EXPECT_FALSE(filter->MayContain(Filter::Hash("k")));
  EXPECT_EQ(0u, filter->bytes());
  EXPECT_EQ(0u, filter->keys());
}

TEST(WindowKeyFilterTest, AMillionKeysSizedRightAreAllFoundWithAboutOnePercentFalsePositives) {
  const std::vector<std::string> keys = RandomKeys(1'000'000, 1, "in-");
  auto filter = ReadyFilter(keys.size());
  for (const std::string& key : keys) filter->Add(Filter::Hash(key));
  size_t missed = 0;
  for (const std::string& key : keys) missed += !filter->MayContain(Filter::Hash(key));
  EXPECT_EQ(0u, missed);
  const double rate = FalsePositiveRate(*filter, RandomKeys(200'000, 2, "out-"));
  EXPECT_LT(rate, 0.015);
  EXPECT_GT(rate, 0.002) << "fewer false positives than 10 bits per key allow: is it sized so?";
  EXPECT_EQ(keys.size(), filter->keys());
  // About 10 bits per key.
  EXPECT_LE(filter->bytes(), keys.size() * 10 / 8 + 64);
}

TEST(WindowKeyFilterTest, GrowsFarBeyondItsFirstSizeWithoutLosingAKey) {
  const std::vector<std::string> keys = RandomKeys(1'000'000, 3, "in-");
  auto filter = ReadyFilter(0);  // the floor: 16 Ki keys, then doubling segments
  for (const std::string& key : keys) filter->Add(Filter::Hash(key));
  size_t missed = 0;
  for (const std::string& key : keys) missed += !filter->MayContain(Filter::Hash(key));
  EXPECT_EQ(0u, missed);
  // Six full segments and a seventh partly: later segments have more bits per key, so the
  // rates do not simply add up.
  EXPECT_LT(FalsePositiveRate(*filter, RandomKeys(200'000, 4, "out-")), 0.03);
  EXPECT_GT(filter->bytes(), keys.size() * 10 / 8);
  EXPECT_LT(filter->bytes(), keys.size() * 5);
}

TEST(WindowKeyFilterTest, TheFirstSegmentIsSizedLikeTheFilterGivenWhenTheFirstKeyArrives) {
  auto before = std::make_shared<Filter>(0, std::weak_ptr<const Filter>(), true);
  Filter filter(0, before, /*ready=*/true);
  // The predecessor fills after this filter was made, before its first key.
  for (const std::string& key : RandomKeys(200'000, 5, "")) before->Add(Filter::Hash(key));
  filter.Add(Filter::Hash("first"));
  EXPECT_GE(filter.bytes(), 200'000u * 10 / 8);
  EXPECT_LE(filter.bytes(), 200'000u * 10 / 8 + 64);

  Filter orphan(0, std::weak_ptr<const Filter>(), true);  // no predecessor: the floor
  orphan.Add(Filter::Hash("first"));
  EXPECT_EQ(Filter::kMinKeys * 10 / 8, orphan.bytes());
}

TEST(WindowKeyFilterTest, ANotReadyFilterMayContainEverythingUntilMarkedReady) {
  Filter filter(100, std::weak_ptr<const Filter>(), /*ready=*/false);
  EXPECT_TRUE(filter.MayContain(Filter::Hash("absent")));
  filter.Add(Filter::Hash("present"));
  EXPECT_FALSE(filter.ready());
  filter.MarkReady();
  EXPECT_TRUE(filter.ready());
  EXPECT_TRUE(filter.MayContain(Filter::Hash("present")));
  EXPECT_FALSE(filter.MayContain(Filter::Hash("absent")));
}

// Writers add, then publish the key's index (as a RocksDB write publishes a record); readers
// that see an index must find every key up to it. Several writers make the filter grow while
// others read it.
TEST(WindowKeyFilterTest, ConcurrentAddsAndLookupsNeverMissAPublishedKey) {
  constexpr int kWriters = 4;
  constexpr size_t kPerWriter = 100'000;
  std::vector<std::vector<std::string>> keys;
  for (int w = 0; w < kWriters; ++w) {
    keys.push_back(RandomKeys(kPerWriter, 10 + w, "w" + std::to_string(w) + "-"));
  }
  auto filter = ReadyFilter(0);
  std::vector<std::atomic<size_t>> published(kWriters);
  std::atomic<bool> done{false};
  std::atomic<size_t> missed{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&, r] {
      std::mt19937_64 random(r);
      while (!done.load()) {
        const int w = static_cast<int>(random() % kWriters);
        const size_t upto = published[w].load(std::memory_order_acquire);
        if (upto == 0) continue;
        missed += !filter->MayContain(Filter::Hash(keys[w][random() % upto]));
      }
    });
  }
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (size_t i = 0; i < kPerWriter; ++i) {
        filter->Add(Filter::Hash(keys[w][i]));
        published[w].store(i + 1, std::memory_order_release);
      }
    });
  }
  for (std::thread& t : writers) t.join();
  done.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(0u, missed.load());
  size_t absent = 0;
  for (const auto& per_writer : keys) {
    for (const std::string& key : per_writer) absent += !filter->MayContain(Filter::Hash(key));
  }
  EXPECT_EQ(0u, absent);
  EXPECT_GE(filter->keys(), kWriters * kPerWriter - kWriters * 8);
}

}  // namespace
}  // namespace idem
