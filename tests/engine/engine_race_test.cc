// Atomicity under contention: many threads on a few hot keys.
#include <atomic>
#include <barrier>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "support/engine_fixture.h"

namespace idem {
namespace {

using testing::EngineTest;

constexpr int kThreads = 16;
constexpr int kHotKeys = 100;

std::string HotKey(int i) { return "hot" + std::to_string(i); }

class EngineRaceTest : public EngineTest, public ::testing::WithParamInterface<Durability> {
 protected:
  void SetUp() override {
    options_.durability = GetParam();
    EngineTest::SetUp();
  }
};

TEST_P(EngineRaceTest, ConcurrentInsertsOfHotKeysYieldExactlyOneInsertedEach) {
  std::vector<std::atomic<int>> inserted(kHotKeys);
  std::vector<std::atomic<int>> exists(kHotKeys);
  std::mutex fences_mu;
  std::set<uint64_t> fences;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<int> order(kHotKeys);
      for (int i = 0; i < kHotKeys; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      for (int i : order) {
        auto r = engine().Insert({.ns = "race", .key = HotKey(i), .status = "S"});
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        if (r->outcome == Outcome::kInserted) {
          inserted[i]++;
          std::lock_guard<std::mutex> lock(fences_mu);
          EXPECT_TRUE(fences.insert(r->record->fence).second) << "fence reused";
        } else {
          EXPECT_EQ(Outcome::kExists, r->outcome);
          exists[i]++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < kHotKeys; ++i) {
    EXPECT_EQ(1, inserted[i].load()) << HotKey(i);
    EXPECT_EQ(kThreads - 1, exists[i].load()) << HotKey(i);
  }
}

TEST_P(EngineRaceTest, EveryKeyLifeHasExactlyOneInsert) {
  // Threads randomly insert and delete the hot keys. Each successful Delete ends a life and each
  // INSERTED begins one, so per key: inserts == deletes + (1 if live at the end).
  std::vector<std::atomic<int>> inserted(kHotKeys), deleted(kHotKeys);
  const int ops_per_thread = GetParam() == Durability::kSync ? 300 : 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      for (int n = 0; n < ops_per_thread; ++n) {
        int i = static_cast<int>(rng() % kHotKeys);
        if (rng() % 2) {
          auto r = engine().Insert({.ns = "life", .key = HotKey(i), .status = "S"});
          ASSERT_TRUE(r.ok());
          if (r->outcome == Outcome::kInserted) inserted[i]++;
        } else {
          auto r = engine().Delete({.ns = "life", .key = HotKey(i)});
          ASSERT_TRUE(r.ok());
          if (r->outcome == Outcome::kDeleted) deleted[i]++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < kHotKeys; ++i) {
    auto r = engine().Get({.ns = "life", .key = HotKey(i)});
    ASSERT_OK(r);
    int live = r->outcome == Outcome::kFound ? 1 : 0;
    EXPECT_EQ(inserted[i].load(), deleted[i].load() + live) << HotKey(i);
  }
}

TEST_P(EngineRaceTest, CompareAndSetFromTheSameVersionAppliesExactlyOnce) {
  for (int i = 0; i < kHotKeys; ++i) ASSERT_EQ("INSERTED", Insert("cas", HotKey(i), "V"));
  constexpr int kRounds = 5;
  // applied[round][key]: how many threads won that key's CAS from the round's version.
  std::vector<std::vector<std::atomic<int>>> applied(kRounds);
  for (auto& row : applied) row = std::vector<std::atomic<int>>(kHotKeys);
  std::barrier sync_point(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        sync_point.arrive_and_wait();  // everyone starts the round from version round+1
        for (int k = 0; k < kHotKeys; ++k) {
          int i = (k + t * 7) % kHotKeys;
          Condition from{{}, static_cast<uint64_t>(round + 1), {}};
          auto r = engine().CompareAndSet({.ns = "cas",
                                           .key = HotKey(i),
                                           .condition = from,
                                           .update = {{}, "by" + std::to_string(t), {}}});
          ASSERT_TRUE(r.ok());
          if (r->outcome == Outcome::kApplied) {
            applied[round][i]++;
            EXPECT_EQ(static_cast<uint64_t>(round + 2), r->record->version);
          } else {
            EXPECT_EQ(Outcome::kConditionFailed, r->outcome);
          }
        }
        sync_point.arrive_and_wait();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kHotKeys; ++i) EXPECT_EQ(1, applied[round][i].load());
  }
  for (int i = 0; i < kHotKeys; ++i) EXPECT_EQ(kRounds + 1u, GetRecord("cas", HotKey(i)).version);
}

TEST_P(EngineRaceTest, OverlappingBatchesNeitherDeadlockNorLoseUpdates) {
  // Each thread applies batches that bump the same 8 counters in different orders; if stripe
  // locking deadlocked this would hang, if it were not atomic versions would be lost.
  constexpr int kCounters = 8;
  std::vector<std::string> keys;  // Ops borrow their keys: these outlive every batch
  for (int i = 0; i < kCounters; ++i) keys.push_back(HotKey(i));
  for (const auto& key : keys) ASSERT_EQ("INSERTED", Insert("ctr", key, "C"));
  const int batches = GetParam() == Durability::kSync ? 40 : 200;
  std::atomic<int> applied{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int b = 0; b < batches; ++b) {
        std::vector<int> order(kCounters);
        for (int i = 0; i < kCounters; ++i) order[i] = i;
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<Result<OpResult>> gets;
        std::vector<Op> reads;
        for (int i : order) reads.push_back(Op::Get({.ns = "ctr", .key = keys[i]}));
        ASSERT_TRUE(engine().Apply(reads, &gets).ok());
        std::vector<Op> ops;
        for (size_t j = 0; j < order.size(); ++j) {
          ops.push_back(Op::CompareAndSet({.ns = "ctr",
                                           .key = keys[order[j]],
                                           .condition = {{}, gets[j]->record->version, {}},
                                           .update = {}}));
        }
        std::vector<Result<OpResult>> results;
        ASSERT_TRUE(engine().Apply(ops, &results).ok());
        for (auto& r : results) applied += r->outcome == Outcome::kApplied;
      }
    });
  }
  for (auto& th : threads) th.join();
  uint64_t total_versions = 0;
  for (int i = 0; i < kCounters; ++i) total_versions += GetRecord("ctr", HotKey(i)).version - 1;
  EXPECT_EQ(static_cast<uint64_t>(applied.load()), total_versions);
}

INSTANTIATE_TEST_SUITE_P(Durability, EngineRaceTest,
                         ::testing::Values(Durability::kAsync, Durability::kSync),
                         testing::DurabilityName);

}  // namespace
}  // namespace idem
