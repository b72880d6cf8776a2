// Admin queries on the engine (idem/admin.h): Scan's filters, paging and bounds, Purge's counts,
// batches and fences, Compact; under the leveled layout (key order) and the journal's (the order
// written). Time only moves through the ManualClock.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "idem/admin.h"
#include "support/engine_fixture.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
using testing::EngineTest;
using testing::Name;

class AdminQueryTest : public EngineTest,
                       public ::testing::WithParamInterface<EngineOptions::Layout> {
 protected:
  AdminQueryTest() {
    if (journal()) {
      options_.layout = EngineOptions::Layout::kJournal;
      options_.journal_segment_bytes = 4 << 20;  // a batch of kMaxScanExamined records fits
    }
    options_.state_graphs["orders"] = *StateGraph::Parse("NEW>PAID>SHIPPED");
    options_.retention["remember"] =
        RetentionPolicy{kHour, 24 * kHour, /*allow_forever=*/false, /*remember_ms=*/10 * kHour};
  }

  // Every page of a scan, followed through to the end; the keys in the order returned.
  std::vector<std::string> ScanAll(ScanRequest request) {
    std::vector<std::string> keys;
    for (int pages = 0; pages < 10'000; ++pages) {
      Result<ScanPage> page = engine().Scan(request);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) break;
      for (const ScanEntry& e : page->records) keys.push_back(e.key);
      if (page->cursor.empty()) break;
      request.cursor = page->cursor;
    }
    return keys;
  }
  // Purge steps followed through to the end: {deleted, forgotten, steps}.
  struct PurgeTotals {
    uint64_t deleted = 0, forgotten = 0, steps = 0;
  };
  PurgeTotals PurgeAll(PurgeRequest request) {
    PurgeTotals totals;
    while (true) {
      Result<PurgeStep> step = engine().Purge(request);
      EXPECT_TRUE(step.ok()) << step.status().ToString();
      if (!step.ok()) break;
      totals.deleted += step->deleted;
      totals.forgotten += step->forgotten;
      totals.steps++;
      if (step->cursor.empty()) break;
      request.cursor = step->cursor;
    }
    return totals;
  }
  // Inserts `n` records "<prefix><i>" (zero-padded) in one Apply.
  void InsertMany(std::string_view ns, std::string_view prefix, int n,
                  std::string_view status = "PENDING") {
    std::vector<std::string> keys;
    for (int i = 0; i < n; ++i) {
      char digits[16];
      std::snprintf(digits, sizeof(digits), "%06d", i);
      keys.push_back(std::string(prefix) + digits);
    }
    std::vector<Op> ops;
    for (const std::string& k : keys)
      ops.push_back(Op::Insert({.ns = ns, .key = k, .status = status}));
    std::vector<Result<OpResult>> results;
    ASSERT_OK(engine().Apply(ops, &results));
  }
  static bool journal() { return GetParam() == EngineOptions::Layout::kJournal; }
  Status ScanError(ScanRequest request) {
    Result<ScanPage> page = engine().Scan(request);
    return page.ok() ? Status::Ok() : page.status();
  }
};

TEST_P(AdminQueryTest, ScanListsANamespacesLiveRecordsInKeyOrderOrTheOrderWritten) {
  Insert("pay", "b");
  Insert("pay", "a", "PAID", "response");
  Insert("pay", "c");
  Insert("payx", "a");  // a namespace that shares the name's first bytes
  Insert("other", "a");
  Result<ScanPage> page = engine().Scan({.ns = "pay"});
  ASSERT_OK(page);
  ASSERT_EQ(3u, page->records.size());
  const size_t a = journal() ? 1 : 0;
  EXPECT_EQ("a", page->records[a].key);
  EXPECT_EQ(GetRecord("pay", "a"), page->records[a].record);
  EXPECT_EQ("b", page->records[journal() ? 0 : 1].key);
  EXPECT_EQ("c", page->records[2].key);
  EXPECT_EQ("", page->cursor);
  EXPECT_EQ(journal() ? 5u : 3u, page->examined);  // the journal walks every namespace's records
}

TEST_P(AdminQueryTest, ScanFiltersByPrefixAndStatus) {
  Insert("pay", "order-1", "PAID");
  Insert("pay", "order-2", "PENDING");
  Insert("pay", "order-3", "FAILED");
  Insert("pay", "refund-1", "PAID");
  EXPECT_EQ((std::vector<std::string>{"order-1", "order-2", "order-3"}),
            ScanAll({.ns = "pay", .prefix = "order-"}));
  EXPECT_EQ((std::vector<std::string>{"order-1", "order-3", "refund-1"}),
            ScanAll({.ns = "pay", .status_in = {"PAID", "FAILED"}}));
  EXPECT_EQ((std::vector<std::string>{"order-1"}),
            ScanAll({.ns = "pay", .prefix = "order-", .status_in = {"PAID"}}));
}

TEST_P(AdminQueryTest, LeaseEndedListsOnlyAttemptsNobodyHoldsOrFinished) {
  auto begin = [&](std::string_view key, std::chrono::milliseconds lease) {
    return engine().Execute(Op::Begin({.ns = "pay", .key = key, .owner = "w1", .lease = lease}));
  };
  ASSERT_EQ("STARTED", Name(begin("stuck", 10s)));
  ASSERT_EQ("STARTED", Name(begin("alive", 60s)));
  auto done = begin("done", 10s);
  ASSERT_EQ("STARTED", Name(done));
  ASSERT_EQ("APPLIED",
            Name(engine().Execute(Op::Complete(
                {.ns = "pay", .key = "done", .fence = done->record->fence, .response = "ok"}))));
  ASSERT_EQ("STARTED", Name(begin("taken-over", 10s)));
  Insert("pay", "plain", "IN_PROGRESS");  // not an attempt, whatever its status says
  ASSERT_EQ(
      "ACQUIRED",
      Name(engine().Execute(Op::Lock({.ns = "pay", .key = "lock", .owner = "w1", .lease = 10s}))));
  clock_->Advance(15'000);
  ASSERT_EQ("STARTED", Name(begin("taken-over", 10s)));  // a new holder, a new lease

  Result<ScanPage> page = engine().Scan({.ns = "pay", .lease_ended = true});
  ASSERT_OK(page);
  ASSERT_EQ(1u, page->records.size());
  EXPECT_EQ("stuck", page->records[0].key);
  EXPECT_EQ("w1", page->records[0].record.owner);
  EXPECT_EQ(clock_->NowMillis() - 5'000, page->records[0].record.lease_until_ms);
}

TEST_P(AdminQueryTest, LeaseEndedAtTheInstantBeginWouldTakeItOver) {
  ASSERT_EQ("STARTED", Name(engine().Execute(Op::Begin({.ns = "pay", .key = "k", .lease = 10s}))));
  clock_->Advance(9'999);
  EXPECT_EQ(0u, engine().Scan({.ns = "pay", .lease_ended = true})->records.size());
  clock_->Advance(1);
  EXPECT_EQ(1u, engine().Scan({.ns = "pay", .lease_ended = true})->records.size());
}

TEST_P(AdminQueryTest, ExpiredRecordsAndRememberedKeysAreNeverListed) {
  Insert("short", "gone", "PENDING", {}, {}, 1000);
  Insert("short", "kept", "PENDING", {}, {}, 5000);
  Insert("remember", "done", "PAID", {}, {}, 1000);
  clock_->Advance(1000);  // expiry is exclusive: absent from this instant on
  EXPECT_EQ((std::vector<std::string>{"kept"}), ScanAll({.ns = "short"}));
  EXPECT_EQ("EXPIRED", Insert("remember", "done"));  // remembered: a marker, not a record
  EXPECT_EQ(std::vector<std::string>{}, ScanAll({.ns = "remember"}));
  ASSERT_OK(engine().CompactAll());  // the same once compaction rewrote or removed them
  EXPECT_EQ((std::vector<std::string>{"kept"}), ScanAll({.ns = "short"}));
  EXPECT_EQ(std::vector<std::string>{}, ScanAll({.ns = "remember"}));
}

TEST_P(AdminQueryTest, PagingNeitherRepeatsNorSkipsKeysWrittenBetweenPages) {
  for (char c = 'a'; c <= 't'; c += 2) Insert("pay", std::string(1, c));  // a c e ... s
  ScanRequest request{.ns = "pay", .limit = 3};
  std::vector<std::string> seen;
  int page_number = 0;
  while (true) {
    Result<ScanPage> page = engine().Scan(request);
    ASSERT_OK(page);
    for (const ScanEntry& e : page->records) seen.push_back(e.key);
    if (page->cursor.empty()) break;
    request.cursor = page->cursor;
    if (++page_number == 1) {
      // After a c e: a key behind the cursor, the cursor's own key deleted, keys ahead written
      // and deleted.
      Insert("pay", "b");  // behind: not seen
      ASSERT_EQ("DELETED", Name(engine().Delete({.ns = "pay", .key = "e"})));
      Insert("pay", "h");                                                      // ahead: seen
      ASSERT_EQ("DELETED", Name(engine().Delete({.ns = "pay", .key = "k"})));  // ahead: not seen
      Insert("pay", "ga");
    }
  }
  if (journal()) {
    // In the order written: what is written after the walk began comes at its end.
    EXPECT_EQ(
        (std::vector<std::string>{"a", "c", "e", "g", "i", "m", "o", "q", "s", "b", "h", "ga"}),
        seen);
  } else {
    EXPECT_EQ((std::vector<std::string>{"a", "c", "e", "g", "ga", "h", "i", "m", "o", "q", "s"}),
              seen);
  }
}

TEST_P(AdminQueryTest, APageExaminesAtMostTheBoundOfKeysMatchingOrNot) {
  InsertMany("pay", "a", static_cast<int>(kMaxScanExamined));
  Insert("pay", "b", "PAID");
  Result<ScanPage> first = engine().Scan({.ns = "pay", .status_in = {"PAID"}});
  ASSERT_OK(first);
  EXPECT_EQ(0u, first->records.size());
  EXPECT_EQ(kMaxScanExamined, first->examined);
  ASSERT_NE("", first->cursor);  // nothing found yet, more to look at
  Result<ScanPage> second =
      engine().Scan({.ns = "pay", .status_in = {"PAID"}, .cursor = first->cursor});
  ASSERT_OK(second);
  ASSERT_EQ(1u, second->records.size());
  EXPECT_EQ("b", second->records[0].key);
  EXPECT_EQ("", second->cursor);
}

TEST_P(AdminQueryTest, APageStopsAtItsLimitAndItsByteBound) {
  const std::string payload(1000, 'x');
  for (std::string k : {"a", "b", "c", "d"}) Insert("pay", k, "PAID", payload);
  Result<ScanPage> limited = engine().Scan({.ns = "pay", .limit = 2});
  ASSERT_OK(limited);
  EXPECT_EQ(2u, limited->records.size());
  EXPECT_NE("", limited->cursor);

  const size_t one = ScanEntryBytes("a", GetRecord("pay", "a"));
  Result<ScanPage> bounded = engine().Scan({.ns = "pay", .max_bytes = 2 * one + one / 2});
  ASSERT_OK(bounded);
  EXPECT_EQ(2u, bounded->records.size());
  EXPECT_EQ((std::vector<std::string>{"a", "b", "c", "d"}),
            ScanAll({.ns = "pay", .max_bytes = 2 * one + one / 2}));
  // A record larger than the bound alone still comes, one per page: a scan always progresses.
  EXPECT_EQ((std::vector<std::string>{"a", "b", "c", "d"}), ScanAll({.ns = "pay", .max_bytes = 1}));
}

TEST_P(AdminQueryTest, BadScansAreInvalidArgumentsSayingWhy) {
  Insert("pay", "a");
  Insert("pay", "b");
  auto message_of = [&](ScanRequest request) {
    Status s = ScanError(std::move(request));
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    return s.message();
  };
  EXPECT_NE(std::string::npos, message_of({.ns = "pay", .limit = 0}).find("1..1000"));
  EXPECT_NE(std::string::npos, message_of({.ns = "pay", .limit = 1'000'000}).find("1..1000"));
  EXPECT_NE(std::string::npos,
            message_of({.ns = "orders", .status_in = {"PAYED"}}).find("unknown status 'PAYED'"));
  EXPECT_TRUE(ScanError({.ns = "orders", .status_in = {"PAID"}}).ok());
  EXPECT_NE(std::string::npos, message_of({.ns = "pay", .status_in = {""}}).find("1.."));
  EXPECT_NE(std::string::npos,
            message_of({.ns = "pay", .status_in = std::vector<std::string>(17, "A")})
                .find("max_status_set"));
  EXPECT_NE(std::string::npos, message_of({.ns = "bad ns"}).find("namespace"));
  EXPECT_NE(std::string::npos, message_of({.ns = "pay", .cursor = "garbage"}).find("cursor"));
  EXPECT_NE(std::string::npos,
            message_of({.ns = "pay", .prefix = std::string(513, 'k')}).find("max_key_bytes"));

  Result<ScanPage> page = engine().Scan({.ns = "pay", .limit = 1});
  ASSERT_OK(page);
  ASSERT_NE("", page->cursor);
  EXPECT_NE(std::string::npos,
            message_of({.ns = "other", .cursor = page->cursor}).find("namespace 'pay'"));
  EXPECT_NE(std::string::npos,
            message_of({.ns = "pay", .prefix = "z", .cursor = page->cursor}).find("prefix"));
  Result<PurgeStep> purge = engine().Purge({.ns = "other", .cursor = page->cursor});
  EXPECT_TRUE(purge.status().IsInvalidArgument()) << purge.status().ToString();
}

TEST_P(AdminQueryTest, PurgeDeletesThePrefixAndCountsRecordsAndRememberedKeys) {
  Insert("pay", "order-1");
  Insert("pay", "order-2");
  Insert("pay", "keep");
  Insert("payx", "order-1");
  PurgeTotals totals = PurgeAll({.ns = "pay", .prefix = "order-"});
  EXPECT_EQ(2u, totals.deleted);
  EXPECT_EQ("NOT_FOUND", Get("pay", "order-1"));
  EXPECT_EQ("NOT_FOUND", Get("pay", "order-2"));
  EXPECT_EQ("FOUND", Get("pay", "keep"));
  EXPECT_EQ("FOUND", Get("payx", "order-1"));

  Insert("remember", "done", "PAID", {}, {}, 1000);
  Insert("remember", "live", "PAID");
  Insert("remember", "gone", "PAID", {}, {}, 500);
  clock_->Advance(1000);
  totals = PurgeAll({.ns = "remember"});
  EXPECT_EQ(1u, totals.deleted);                      // live
  EXPECT_EQ(2u, totals.forgotten);                    // done, gone: their markers
  EXPECT_EQ("INSERTED", Insert("remember", "done"));  // forgotten: a retry runs again
}

TEST_P(AdminQueryTest, PurgeWorksInBoundedBatches) {
  const int n = static_cast<int>(kPurgeBatchKeys) * 2 + 5;
  InsertMany("pay", "k", n);
  PurgeTotals totals = PurgeAll({.ns = "pay"});
  EXPECT_EQ(static_cast<uint64_t>(n), totals.deleted);
  EXPECT_EQ(3u, totals.steps);
  EXPECT_EQ(std::vector<std::string>{}, ScanAll({.ns = "pay"}));
}

TEST_P(AdminQueryTest, AKeyPurgedAndBegunAgainGetsAHigherFenceEvenAfterAReopen) {
  auto first = engine().Execute(Op::Begin({.ns = "pay", .key = "k"}));
  ASSERT_EQ("STARTED", Name(first));
  PurgeAll({.ns = "pay"});
  auto second = engine().Execute(Op::Begin({.ns = "pay", .key = "k"}));
  ASSERT_EQ("STARTED", Name(second));
  EXPECT_GT(second->record->fence, first->record->fence);
  // The old holder's fence no longer completes anything.
  EXPECT_EQ("FENCE_MISMATCH", Name(engine().Execute(Op::Complete(
                                  {.ns = "pay", .key = "k", .fence = first->record->fence}))));
  PurgeAll({.ns = "pay"});
  Reopen();
  auto third = engine().Execute(Op::Begin({.ns = "pay", .key = "k"}));
  ASSERT_EQ("STARTED", Name(third));
  EXPECT_GT(third->record->fence, second->record->fence);
}

TEST_P(AdminQueryTest, PurgeWakesWhoeverWatchesAPurgedKey) {
  ASSERT_EQ("STARTED", Name(engine().Execute(Op::Begin({.ns = "pay", .key = "k"}))));
  std::atomic<int> fired{0};
  engine().Watch("pay", "k", [&] { fired++; });
  PurgeAll({.ns = "pay"});
  EXPECT_EQ(1, fired.load());
}

TEST_P(AdminQueryTest, CompactRemovesAPurgedNamespacesTombstonesAndRefusesBadNames) {
  InsertMany("pay", "k", 100);
  ASSERT_OK(engine().Flush());
  PurgeAll({.ns = "pay"});
  ASSERT_OK(engine().Compact("pay"));
  ASSERT_OK(engine().Compact(""));  // the whole database
  Result<StoreStats> stats = engine().Stats();
  ASSERT_OK(stats);
  // The journal keeps a purged record's bytes until it would have died (a delete keeps what it
  // deletes from coming back at a restart until then: journal_store.h).
  if (!journal()) EXPECT_GE(stats->records_dropped_by_compaction, 100u);
  EXPECT_TRUE(engine().Compact("bad ns").IsInvalidArgument());
  EXPECT_EQ(std::vector<std::string>{}, ScanAll({.ns = "pay"}));
}

// Under the journal layout a walk goes on across what moves meanwhile: a record moved out of a
// mostly dead segment after the walk passed it is listed again where it went, never lost.
TEST_P(AdminQueryTest, AWalkListsEveryRecordPresentThroughoutWhateverMovesMeanwhile) {
  if (!journal()) GTEST_SKIP() << "the journal layout's walk";
  testing::UseSmallJournal(&options_);  // many segments
  Reopen();
  for (int i = 0; i < 20; ++i) {
    Insert("pay", "long-" + std::to_string(i));
    InsertMany("short", "s" + std::to_string(i) + "-", 500);  // they die in a second
  }
  ASSERT_GE(engine().Stats()->journal_segments, 10u);
  ScanRequest request{.ns = "pay", .limit = 5};
  std::vector<std::string> seen;
  for (int page_number = 0; page_number < 1000; ++page_number) {
    Result<ScanPage> page = engine().Scan(request);
    ASSERT_OK(page);
    for (const ScanEntry& e : page->records) seen.push_back(e.key);
    if (page->cursor.empty()) break;
    request.cursor = page->cursor;
    if (page_number == 1) {
      clock_->Advance(2'000);
      ASSERT_OK(engine().CompactAll());  // moves the long-lived records, drops the rest
    }
  }
  std::set<std::string> distinct(seen.begin(), seen.end());
  EXPECT_EQ(20u, distinct.size());
  EXPECT_LE(seen.size(), 30u);  // the first two pages' ten may come again
}

INSTANTIATE_TEST_SUITE_P(Layouts, AdminQueryTest,
                         ::testing::Values(EngineOptions::Layout::kLeveled,
                                           EngineOptions::Layout::kJournal),
                         [](const ::testing::TestParamInfo<EngineOptions::Layout>& p) {
                           return testing::LayoutName(p.param);
                         });

}  // namespace
}  // namespace idem
