// Every outcome of every engine operation, batches, limits, corruption and reopen.
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <rocksdb/db.h>

#include "key_codec.h"
#include "support/engine_fixture.h"

namespace idem {
namespace {

using testing::EngineTest;
using testing::Name;

TEST_F(EngineTest, InsertCreatesVersionOneWithAFenceAndTimes) {
  auto r = engine().Insert(
      {.ns = "pay", .key = "k1", .status = "PENDING", .payload = "body", .fingerprint = "fp1"});
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kInserted, r->outcome);
  ASSERT_TRUE(r->record);
  EXPECT_EQ("PENDING", r->record->status);
  EXPECT_EQ("body", r->record->payload);
  EXPECT_EQ("fp1", r->record->fingerprint);
  EXPECT_EQ(1u, r->record->version);
  EXPECT_GE(r->record->fence, 1u);
  EXPECT_EQ(clock_->NowMillis(), r->record->created_ms);
  EXPECT_EQ(clock_->NowMillis(), r->record->updated_ms);
  EXPECT_EQ(clock_->NowMillis() + options_.default_retention.default_ttl_ms,
            r->record->expires_at_ms);
  EXPECT_EQ(*r->record, GetRecord("pay", "k1"));
}

TEST_F(EngineTest, InsertOfATakenKeyReturnsTheExistingRecord) {
  ASSERT_EQ("INSERTED", Insert("pay", "k1", "PENDING", "first"));
  auto r = engine().Insert({.ns = "pay", .key = "k1", .status = "OTHER", .payload = "second"});
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kExists, r->outcome);
  EXPECT_EQ("first", r->record->payload);
  EXPECT_EQ("PENDING", r->record->status);
  EXPECT_TRUE(r->fingerprint_matches);  // no fingerprint given: nothing to compare
}

TEST_F(EngineTest, FingerprintMismatchIsReportedWithTheExistingRecord) {
  ASSERT_EQ("INSERTED", Insert("pay", "k1", "PENDING", "", "hash-a"));
  auto same =
      engine().Insert({.ns = "pay", .key = "k1", .status = "PENDING", .fingerprint = "hash-a"});
  ASSERT_OK(same);
  EXPECT_EQ(Outcome::kExists, same->outcome);
  EXPECT_TRUE(same->fingerprint_matches);
  auto other =
      engine().Insert({.ns = "pay", .key = "k1", .status = "PENDING", .fingerprint = "hash-b"});
  ASSERT_OK(other);
  EXPECT_EQ(Outcome::kExists, other->outcome);
  EXPECT_FALSE(other->fingerprint_matches);
  EXPECT_EQ("hash-a", other->record->fingerprint);
}

TEST_F(EngineTest, NamespacesAreIndependent) {
  EXPECT_EQ("INSERTED", Insert("a", "bc"));
  EXPECT_EQ("INSERTED", Insert("ab", "c"));  // same concatenation, different record
  EXPECT_EQ("INSERTED", Insert("b", "bc"));
  EXPECT_EQ("EXISTS", Insert("a", "bc"));
}

TEST_F(EngineTest, FencesIncreaseAcrossKeysAndNamespaces) {
  uint64_t last = 0;
  for (int i = 0; i < 100; ++i) {
    auto r =
        engine().Insert({.ns = i % 2 ? "a" : "b", .key = "k" + std::to_string(i), .status = "S"});
    ASSERT_OK(r);
    EXPECT_GT(r->record->fence, last);
    last = r->record->fence;
  }
}

TEST_F(EngineTest, CompareAndSetOnStatusSet) {
  ASSERT_EQ("INSERTED", Insert("order", "o1", "WAIT_PAY"));
  Condition paying{{"WAIT_PAY", "PAYING"}, {}, {}};
  Update to_paid{"PAID", "receipt", {}};
  auto r =
      engine().CompareAndSet({.ns = "order", .key = "o1", .condition = paying, .update = to_paid});
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kApplied, r->outcome);
  EXPECT_EQ("PAID", r->record->status);
  EXPECT_EQ("receipt", r->record->payload);
  EXPECT_EQ(2u, r->record->version);
  // The second callback finds PAID: condition fails and reports the current record.
  auto again =
      engine().CompareAndSet({.ns = "order", .key = "o1", .condition = paying, .update = to_paid});
  ASSERT_OK(again);
  EXPECT_EQ(Outcome::kConditionFailed, again->outcome);
  EXPECT_EQ("PAID", again->record->status);
  EXPECT_EQ(2u, again->record->version);
}

TEST_F(EngineTest, CompareAndSetOnVersionIsOptimisticLocking) {
  ASSERT_EQ("INSERTED", Insert("doc", "d"));
  Condition v1{{}, 1, {}};
  EXPECT_EQ("APPLIED", Name(engine().CompareAndSet(
                           {.ns = "doc", .key = "d", .condition = v1, .update = {"V2", {}, {}}})));
  EXPECT_EQ("CONDITION_FAILED",
            Name(engine().CompareAndSet(
                {.ns = "doc", .key = "d", .condition = v1, .update = {"V2b", {}, {}}})));
  EXPECT_EQ("V2", GetRecord("doc", "d").status);
}

TEST_F(EngineTest, CompareAndSetOnFence) {
  auto ins = engine().Insert({.ns = "job", .key = "j", .status = "RUNNING"});
  ASSERT_OK(ins);
  uint64_t fence = ins->record->fence;
  EXPECT_EQ("CONDITION_FAILED", Name(engine().CompareAndSet({.ns = "job",
                                                             .key = "j",
                                                             .condition = {{}, {}, fence + 1},
                                                             .update = {"DONE", {}, {}}})));
  auto r = engine().CompareAndSet(
      {.ns = "job", .key = "j", .condition = {{}, {}, fence}, .update = {"DONE", {}, {}}});
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kApplied, r->outcome);
  EXPECT_EQ(fence, r->record->fence);  // CAS keeps the record's life, so its fence
}

TEST_F(EngineTest, CompareAndSetAllConditionPartsMustHold) {
  ASSERT_EQ("INSERTED", Insert("x", "k", "A"));
  EXPECT_EQ("CONDITION_FAILED",
            Name(engine().CompareAndSet(
                {.ns = "x", .key = "k", .condition = {{"A"}, 2, {}}, .update = {"B", {}, {}}})));
  EXPECT_EQ("APPLIED",
            Name(engine().CompareAndSet(
                {.ns = "x", .key = "k", .condition = {{"A"}, 1, {}}, .update = {"B", {}, {}}})));
}

TEST_F(EngineTest, CompareAndSetCanChangeExpiry) {
  ASSERT_EQ("INSERTED", Insert("x", "k"));
  auto r = engine().CompareAndSet(
      {.ns = "x", .key = "k", .update = {{}, {}, std::chrono::milliseconds(5000)}});
  ASSERT_OK(r);
  EXPECT_EQ(clock_->NowMillis() + 5000, r->record->expires_at_ms);
  EXPECT_EQ("PENDING", r->record->status);
  EXPECT_EQ(2u, r->record->version);
}

TEST_F(EngineTest, CompareAndSetOnMissingKeyIsNotFound) {
  EXPECT_EQ("NOT_FOUND",
            Name(engine().CompareAndSet({.ns = "x", .key = "nope", .update = {"B", {}, {}}})));
}

TEST_F(EngineTest, GetOutcomes) {
  EXPECT_EQ("NOT_FOUND", Get("x", "k"));
  ASSERT_EQ("INSERTED", Insert("x", "k"));
  EXPECT_EQ("FOUND", Get("x", "k"));
}

TEST_F(EngineTest, DeleteOutcomes) {
  EXPECT_EQ("NOT_FOUND", Name(engine().Delete({.ns = "x", .key = "k"})));
  ASSERT_EQ("INSERTED", Insert("x", "k", "DONE"));
  EXPECT_EQ("CONDITION_FAILED",
            Name(engine().Delete({.ns = "x", .key = "k", .condition = {{"PENDING"}, {}, {}}})));
  auto r = engine().Delete({.ns = "x", .key = "k", .condition = {{"DONE"}, 1, {}}});
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kDeleted, r->outcome);
  EXPECT_EQ("DONE", r->record->status);  // the removed record
  EXPECT_EQ("NOT_FOUND", Get("x", "k"));
}

TEST_F(EngineTest, ReinsertAfterDeleteStartsANewLifeWithAHigherFence) {
  auto first = engine().Insert({.ns = "x", .key = "k", .status = "A"});
  ASSERT_OK(first);
  ASSERT_EQ("DELETED", Name(engine().Delete({.ns = "x", .key = "k"})));
  auto second = engine().Insert({.ns = "x", .key = "k", .status = "B"});
  ASSERT_OK(second);
  EXPECT_EQ(Outcome::kInserted, second->outcome);
  EXPECT_EQ(1u, second->record->version);
  EXPECT_GT(second->record->fence, first->record->fence);
}

TEST_F(EngineTest, ApplyReturnsResultsInOrderAndLaterOpsSeeEarlierOnes) {
  std::vector<Op> ops = {
      Op::Insert({.ns = "b", .key = "k", .status = "NEW"}),
      Op::Insert({.ns = "b", .key = "k", .status = "NEW"}),
      Op::CompareAndSet(
          {.ns = "b", .key = "k", .condition = {{"NEW"}, {}, {}}, .update = {"DONE", {}, {}}}),
      Op::Get({.ns = "b", .key = "k"}),
      Op::Delete({.ns = "b", .key = "k"}),
      Op::Get({.ns = "b", .key = "k"}),
      Op::Insert({.ns = "b", .key = "k", .status = "AGAIN"}),
      Op::Get({.ns = "b", .key = "other"}),
  };
  std::vector<Result<OpResult>> results;
  ASSERT_TRUE(engine().Apply(ops, &results).ok());
  ASSERT_EQ(ops.size(), results.size());
  std::vector<std::string> names;
  for (const auto& r : results) names.push_back(Name(r));
  EXPECT_EQ((std::vector<std::string>{"INSERTED", "EXISTS", "APPLIED", "FOUND", "DELETED",
                                      "NOT_FOUND", "INSERTED", "NOT_FOUND"}),
            names);
  EXPECT_EQ("DONE", results[3]->record->status);
  EXPECT_EQ(2u, results[3]->record->version);
  EXPECT_GT(results[6]->record->fence, results[0]->record->fence);
  EXPECT_EQ("AGAIN", GetRecord("b", "k").status);
}

TEST_F(EngineTest, ApplyCommitsAllWritesAsOneRocksDbWrite) {
  std::vector<std::string> keys;
  for (int i = 0; i < 128; ++i) keys.push_back("k" + std::to_string(i));
  std::vector<Op> ops;
  for (const auto& k : keys) ops.push_back(Op::Insert({.ns = "b", .key = k, .status = "S"}));
  auto before = engine().Stats();
  ASSERT_OK(before);
  std::vector<Result<OpResult>> results;
  ASSERT_TRUE(engine().Apply(ops, &results).ok());
  auto after = engine().Stats();
  ASSERT_OK(after);
  EXPECT_EQ(1u, after->writes - before->writes);
  EXPECT_EQ(128u, after->ops - before->ops);
}

// A batch writing several keys, some more than once and out of key order, leaves each key with
// its last write, in memory and after the WAL is replayed.
TEST_F(EngineTest, ABatchWritingKeysOutOfOrderLeavesEachKeysLastWrite) {
  ASSERT_EQ("INSERTED", Insert("b", "m", "OLD"));
  std::vector<Op> ops = {
      Op::Insert({.ns = "b", .key = "z", .status = "Z1"}),
      Op::Insert({.ns = "b", .key = "a", .status = "A1"}),
      Op::Delete({.ns = "b", .key = "m"}),
      Op::CompareAndSet(
          {.ns = "b", .key = "a", .condition = {{"A1"}, {}, {}}, .update = {"A2", {}, {}}}),
      Op::Insert({.ns = "b", .key = "m", .status = "M2"}),
      Op::Delete({.ns = "b", .key = "z"}),
      Op::CompareAndSet(
          {.ns = "b", .key = "a", .condition = {{"A2"}, {}, {}}, .update = {"A3", {}, {}}}),
      Op::Insert({.ns = "b", .key = "c", .status = "C1"}),
  };
  std::vector<Result<OpResult>> results;
  ASSERT_TRUE(engine().Apply(ops, &results).ok());
  std::vector<std::string> names;
  for (const auto& r : results) names.push_back(Name(r));
  EXPECT_EQ((std::vector<std::string>{"INSERTED", "INSERTED", "DELETED", "APPLIED", "INSERTED",
                                      "DELETED", "APPLIED", "INSERTED"}),
            names);
  for (int pass = 0; pass < 2; ++pass) {
    SCOPED_TRACE(pass == 0 ? "before reopen" : "after reopen");
    EXPECT_EQ("A3", GetRecord("b", "a").status);
    EXPECT_EQ(3u, GetRecord("b", "a").version);
    EXPECT_EQ("C1", GetRecord("b", "c").status);
    EXPECT_EQ("M2", GetRecord("b", "m").status);
    EXPECT_EQ("NOT_FOUND", Get("b", "z"));
    Reopen();
  }
}

// Operators tune RocksDB through EngineOptions::rocksdb_options; a typo must fail the open, not
// be ignored.
TEST_F(EngineTest, RocksDbOptionsAreAppliedAndBadOnesFailTheOpen) {
  engine_.reset();
  EngineOptions tuned = options_;
  tuned.rocksdb_options = "level0_file_num_compaction_trigger=7;max_write_buffer_number=5";
  auto opened = Engine::Open(dir_.Sub("tuned"), tuned);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ASSERT_EQ("INSERTED", Name((*opened)->Insert({.ns = "b", .key = "k", .status = "S"})));
  opened->reset();
  bool found = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.Sub("tuned"))) {
    if (!entry.path().filename().string().starts_with("OPTIONS-")) continue;
    std::ifstream in(entry.path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    found |= text.find("level0_file_num_compaction_trigger=7") != std::string::npos &&
             text.find("max_write_buffer_number=5") != std::string::npos &&
             text.find("ExpiryCompactionFilterFactory") != std::string::npos;  // ours kept
  }
  EXPECT_TRUE(found);
  for (std::string bad :
       {"no_such_option=1", "level0_file_num_compaction_trigger=many", "junk",
        // the memtable and the key order are the engine's (hash_memtable.h)
        "memtable_factory=skip_list", "comparator=rocksdb.ReverseBytewiseComparator",
        // each would turn the hash memtable's writes into sorts or races
        "allow_concurrent_memtable_write=true", "inplace_update_support=true",
        "max_successive_merges=2",
        // RocksDB would drop it without a word under point-in-time recovery
        "recycle_log_file_num=4"}) {
    tuned.rocksdb_options = bad;
    auto r = Engine::Open(dir_.Sub("bad"), tuned);
    EXPECT_TRUE(r.status().IsInvalidArgument()) << bad << ": " << r.status().ToString();
    EXPECT_FALSE(std::filesystem::exists(dir_.Sub("bad"))) << bad << ": left a directory behind";
  }
}

// RocksDB's pool threads lower their own priority when they next take a job: after a flush,
// the flush thread runs at nice 19 (Linux).
TEST_F(EngineTest, LowBackgroundPriorityNicesTheFlushThread) {
  engine_.reset();
  options_.background_priority = EngineOptions::BackgroundPriority::kLow;
  Open();
  ASSERT_EQ("INSERTED", Insert("b", "k"));
  ASSERT_TRUE(engine().Flush().ok());
  std::vector<int> flush_thread_nice;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name != "rocksdb:high") continue;
    errno = 0;
    const int nice = getpriority(PRIO_PROCESS, std::stoi(task.path().filename().string()));
    if (errno == 0) flush_thread_nice.push_back(nice);
  }
  ASSERT_FALSE(flush_thread_nice.empty());
  EXPECT_NE(flush_thread_nice.end(),
            std::find(flush_thread_nice.begin(), flush_thread_nice.end(), 19));
}

// RocksDB's skiplist memtable stays selectable, and both memtables keep the same records across
// a reopen that replays the log and across a flush.
TEST_F(EngineTest, BothMemtablesKeepRecordsAcrossReopenAndFlush) {
  engine_.reset();
  for (auto kind : {EngineOptions::Memtable::kSkipList, EngineOptions::Memtable::kHash}) {
    EngineOptions o = options_;
    o.memtable = kind;
    const std::string dir = dir_.Sub(kind == EngineOptions::Memtable::kHash ? "hash" : "skip");
    {
      auto opened = Engine::Open(dir, o);
      ASSERT_TRUE(opened.ok()) << opened.status().ToString();
      for (int i = 0; i < 100; ++i) {
        ASSERT_EQ(
            "INSERTED",
            Name((*opened)->Insert({.ns = "b", .key = std::to_string(i * 7919), .status = "S"})));
      }
    }
    auto reopened = Engine::Open(dir, o);  // the records come back from the log
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    Engine& e = **reopened;
    for (int i = 0; i < 100; ++i) {
      EXPECT_EQ("EXISTS",
                Name(e.Insert({.ns = "b", .key = std::to_string(i * 7919), .status = "S"})));
    }
    ASSERT_OK(e.Flush());
    for (int i = 0; i < 100; ++i)
      EXPECT_EQ("FOUND", Name(e.Get({.ns = "b", .key = std::to_string(i * 7919)})));
    EXPECT_EQ("NOT_FOUND", Name(e.Get({.ns = "b", .key = "7918"})));
  }
}

// ApplyDeferSync (the server's group commit under Durability::kSync): written and visible at
// once, fsynced by SyncWal; a synced Apply that only reads such a write syncs before answering.
TEST_F(EngineTest, DeferredSyncWritesAreSyncedByTheNextSyncWalOrTheNextReader) {
  auto syncs = [&] {
    Result<StoreStats> stats = engine().Stats();
    EXPECT_TRUE(stats.ok());
    return stats.ok() ? stats->wal_syncs : 0;
  };
  ASSERT_EQ(Durability::kSync, engine().options().durability);
  const uint64_t start = syncs();
  std::vector<Op> insert = {Op::Insert({.ns = "pay", .key = "k1", .status = "NEW"})};
  std::vector<Result<OpResult>> results;
  bool needs_sync = false;
  ASSERT_OK(engine().ApplyDeferSync(insert, &results, &needs_sync));
  EXPECT_EQ("INSERTED", Name(results[0]));
  EXPECT_TRUE(needs_sync);  // it wrote
  EXPECT_EQ(start, syncs());
  // A duplicate before the sync read an unsynced write: it must wait for the sync too.
  ASSERT_OK(engine().ApplyDeferSync(insert, &results, &needs_sync));
  EXPECT_EQ("EXISTS", Name(results[0]));
  EXPECT_TRUE(needs_sync);
  ASSERT_OK(engine().SyncWal());
  EXPECT_EQ(start + 1, syncs());
  // After it, a duplicate wrote nothing and saw only durable data: no sync needed.
  ASSERT_OK(engine().ApplyDeferSync(insert, &results, &needs_sync));
  EXPECT_EQ("EXISTS", Name(results[0]));
  EXPECT_FALSE(needs_sync);

  insert = {Op::Insert({.ns = "pay", .key = "k2", .status = "NEW"})};
  ASSERT_OK(engine().ApplyDeferSync(insert, &results, &needs_sync));
  EXPECT_EQ("FOUND", Get("pay", "k2"));  // read before any SyncWal: synced first
  EXPECT_EQ(start + 2, syncs());
  EXPECT_EQ("FOUND", Get("pay", "k2"));  // nothing deferred since
  EXPECT_EQ(start + 2, syncs());
  EXPECT_EQ("INSERTED", Insert("pay", "k3"));  // a synced write
  EXPECT_EQ(start + 3, syncs());
}

TEST_F(EngineTest, ABadOpInABatchGetsItsOwnErrorAndTheOthersProceed) {
  const std::string long_key(600, 'k');  // Ops borrow their strings: keep it alive
  std::vector<Op> ops = {Op::Insert({.ns = "b", .key = "ok1", .status = "S"}),
                         Op::Insert({.ns = "b", .key = long_key, .status = "S"}),
                         Op::Insert({.ns = "bad ns", .key = "k", .status = "S"}),
                         Op::Insert({.ns = "b", .key = "ok2", .status = "S"})};
  std::vector<Result<OpResult>> results;
  ASSERT_TRUE(engine().Apply(ops, &results).ok());
  ASSERT_EQ(4u, results.size());
  EXPECT_EQ("INSERTED", Name(results[0]));
  EXPECT_EQ("INVALID_ARGUMENT", Name(results[1]));
  EXPECT_NE(std::string::npos, results[1].status().message().find("512"));
  EXPECT_EQ("INVALID_ARGUMENT", Name(results[2]));
  EXPECT_EQ("INSERTED", Name(results[3]));
}

TEST_F(EngineTest, BatchOverTheLimitIsRejectedWhole) {
  std::vector<Op> ops(options_.limits.max_batch_ops + 1, Op::Get({.ns = "b", .key = "k"}));
  std::vector<Result<OpResult>> results;
  Status s = engine().Apply(ops, &results);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(std::string::npos, s.message().find("max_batch_ops"));
  EXPECT_TRUE(results.empty());
}

TEST_F(EngineTest, EveryLimitIsInvalidArgumentAndStoresNothing) {
  EXPECT_EQ("INVALID_ARGUMENT", Insert("", "k"));
  EXPECT_EQ("INVALID_ARGUMENT", Insert(std::string(65, 'n'), "k"));
  EXPECT_EQ("INVALID_ARGUMENT", Insert("white space", "k"));
  EXPECT_EQ("INVALID_ARGUMENT", Insert("x", ""));
  EXPECT_EQ("INVALID_ARGUMENT", Insert("x", std::string(513, 'k')));
  EXPECT_EQ("INVALID_ARGUMENT", Insert("x", "k", ""));
  EXPECT_EQ("INVALID_ARGUMENT", Insert("x", "k", std::string(33, 's')));
  EXPECT_EQ("INVALID_ARGUMENT", Insert("x", "k", "S", std::string((1 << 20) + 1, 'p')));
  EXPECT_EQ("INVALID_ARGUMENT", Insert("x", "k", "S", "", std::string(65, 'f')));
  EXPECT_EQ("INVALID_ARGUMENT", Insert("x", "k", "S", "", "", kForever));
  EXPECT_EQ("INVALID_ARGUMENT",
            Insert("x", "k", "S", "", "", options_.default_retention.max_ttl_ms + 1));
  EXPECT_EQ("INVALID_ARGUMENT", Insert("x", "k", "S", "", "", -2));
  EXPECT_EQ("NOT_FOUND", Get("x", "k"));
  // Exactly at the limits is fine.
  EXPECT_EQ("INSERTED", Insert(std::string(64, 'n'), std::string(512, 'k'), std::string(32, 's'),
                               std::string(1 << 20, 'p'), std::string(64, 'f')));
}

TEST_F(EngineTest, LimitsAreConfigurable) {
  options_.limits.max_key_bytes = 4;
  Reopen();
  EXPECT_EQ("INSERTED", Insert("x", "1234"));
  EXPECT_EQ("INVALID_ARGUMENT", Insert("x", "12345"));
}

TEST_F(EngineTest, PerNamespaceRetentionPolicies) {
  auto r = engine().Insert({.ns = "short", .key = "k", .status = "S"});
  ASSERT_OK(r);
  EXPECT_EQ(clock_->NowMillis() + 1000, r->record->expires_at_ms);
  EXPECT_EQ("INVALID_ARGUMENT", Insert("short", "k2", "S", "", "", 10'001));
  auto forever =
      engine().Insert({.ns = "forever", .key = "k", .status = "S", .ttl = Ttl::Forever()});
  ASSERT_OK(forever);
  EXPECT_EQ(kNeverExpires, forever->record->expires_at_ms);
}

TEST_F(EngineTest, InvalidPoliciesAreRejectedAtOpen) {
  engine_.reset();
  EngineOptions bad = options_;
  bad.retention["x"] = RetentionPolicy{20'000, 10'000, false};
  auto r = Engine::Open(dir_.Sub("db"), bad);
  EXPECT_TRUE(r.status().IsInvalidArgument());
  bad = options_;
  bad.retention["bad ns"] = RetentionPolicy{};
  EXPECT_TRUE(Engine::Open(dir_.Sub("db"), bad).status().IsInvalidArgument());
}

TEST_F(EngineTest, ReopenKeepsEveryRecordAndFencesNeverGoBackwards) {
  uint64_t max_fence = 0;
  for (int i = 0; i < 50; ++i) {
    auto r = engine().Insert({.ns = "x",
                              .key = "k" + std::to_string(i),
                              .status = "S",
                              .payload = "p" + std::to_string(i)});
    ASSERT_OK(r);
    max_fence = std::max(max_fence, r->record->fence);
  }
  ASSERT_EQ("APPLIED",
            Name(engine().CompareAndSet({.ns = "x", .key = "k7", .update = {"CHANGED", {}, {}}})));
  Reopen();
  for (int i = 0; i < 50; ++i) {
    Record rec = GetRecord("x", "k" + std::to_string(i));
    EXPECT_EQ("p" + std::to_string(i), rec.payload);
  }
  EXPECT_EQ("CHANGED", GetRecord("x", "k7").status);
  auto next = engine().Insert({.ns = "x", .key = "new", .status = "S"});
  ASSERT_OK(next);
  EXPECT_GT(next->record->fence, max_fence);
}

TEST_F(EngineTest, AsyncDurabilityAlsoSurvivesCleanReopen) {
  options_.durability = Durability::kAsync;
  Reopen();
  ASSERT_EQ("INSERTED", Insert("x", "k"));
  auto stats = engine().Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(Durability::kAsync, stats->durability);
  Reopen();
  EXPECT_EQ("FOUND", Get("x", "k"));
}

TEST_F(EngineTest, CorruptStoredValueIsCorruptionAndDamagesNothingElse) {
  ASSERT_EQ("INSERTED", Insert("x", "good"));
  engine_.reset();
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), dir_.Sub("db"), &raw).ok());
    ASSERT_TRUE(raw->Put(rocksdb::WriteOptions(), RecordKey("x", "bad"), "\x01garbage").ok());
    delete raw;
  }
  Open();
  EXPECT_EQ("CORRUPTION", Get("x", "bad"));
  EXPECT_EQ("CORRUPTION", Insert("x", "bad"));
  EXPECT_EQ("CORRUPTION",
            Name(engine().CompareAndSet({.ns = "x", .key = "bad", .update = {"S", {}, {}}})));
  EXPECT_EQ("FOUND", Get("x", "good"));
  // A batch with the corrupt key still applies its other ops.
  std::vector<Op> ops = {Op::Get({.ns = "x", .key = "bad"}),
                         Op::Insert({.ns = "x", .key = "fresh", .status = "S"})};
  std::vector<Result<OpResult>> results;
  ASSERT_TRUE(engine().Apply(ops, &results).ok());
  EXPECT_EQ("CORRUPTION", Name(results[0]));
  EXPECT_EQ("INSERTED", Name(results[1]));
}

TEST_F(EngineTest, OpenFailsCleanlyOnAMissingDirWithoutCreate) {
  EngineOptions o = options_;
  o.create_if_missing = false;
  auto r = Engine::Open(dir_.Sub("missing"), o);
  EXPECT_TRUE(r.status().IsNotFound()) << r.status().ToString();
}

TEST_F(EngineTest, OpenCreatesMissingParentDirectories) {
  auto r = Engine::Open(dir_.Sub("a/b/c"), options_);
  ASSERT_OK(r);
  auto blocked = Engine::Open("/proc/idem-cannot-create/db", options_);
  EXPECT_TRUE(blocked.status().IsIOError()) << blocked.status().ToString();
}

TEST_F(EngineTest, StatsReportFenceAndCounts) {
  ASSERT_EQ("INSERTED", Insert("x", "k"));
  auto s = engine().Stats();
  ASSERT_OK(s);
  EXPECT_EQ(Durability::kSync, s->durability);
  EXPECT_GE(s->next_fence, 2u);
  EXPECT_EQ(1u, s->ops);
  EXPECT_EQ(options_.block_cache_bytes, s->block_cache_capacity_bytes);
  EXPECT_LE(s->block_cache_bytes, s->block_cache_capacity_bytes);
  EXPECT_GT(s->memtable_bytes, 0u);
}

}  // namespace
}  // namespace idem
