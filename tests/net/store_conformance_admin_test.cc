// Admin queries (idem/admin.h) against the Engine and against a Client over a real server
// (store_conformance.h): the same pages, the same counts, the same refusals. The engine's own
// tests (tests/engine/admin_query_test.cc) cover paging under writes and the bounds in depth.
#include <chrono>
#include <string>
#include <vector>

#include "idem/admin.h"
#include "store_conformance.h"

namespace idem::testing {
namespace {

using namespace std::chrono_literals;

class AdminQueriesTest : public StoreConformanceTest {
 protected:
  // Every page followed through; "key STATUS" per record, in the order returned.
  std::vector<std::string> ScanAll(ScanRequest request) {
    std::vector<std::string> out;
    for (int pages = 0; pages < 1000; ++pages) {
      Result<ScanPage> page = store().Scan(request);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) break;
      for (const ScanEntry& e : page->records) out.push_back(e.key + " " + e.record.status);
      if (page->cursor.empty()) break;
      request.cursor = page->cursor;
    }
    return out;
  }
  Status ScanError(const ScanRequest& request) {
    Result<ScanPage> page = store().Scan(request);
    return page.ok() ? Status::Ok() : page.status();
  }
};

TEST_P(AdminQueriesTest, ScanPagesThroughFilteredRecordsInKeyOrder) {
  for (std::string k : {"order-3", "order-1", "refund-1", "order-2"}) Insert(k);
  ASSERT_EQ(
      "APPLIED",
      Name(store().CompareAndSet({.ns = "pay", .key = "order-2", .update = {.status = "PAID"}})));
  EXPECT_EQ((std::vector<std::string>{"order-1 PENDING", "order-2 PAID", "order-3 PENDING"}),
            ScanAll({.ns = "pay", .prefix = "order-", .limit = 1}));
  EXPECT_EQ(std::vector<std::string>{"order-2 PAID"},
            ScanAll({.ns = "pay", .status_in = {"PAID"}}));
  Result<ScanPage> page = store().Scan({.ns = "pay", .prefix = "order-1"});
  ASSERT_OK(page);
  ASSERT_EQ(1u, page->records.size());
  Result<OpResult> get = store().Get({.ns = "pay", .key = "order-1"});
  ASSERT_OK(get);
  EXPECT_EQ(*get->record, page->records[0].record);  // every field, over the wire too
}

TEST_P(AdminQueriesTest, LeaseEndedFindsTheStuckAttemptOnly) {
  auto begin = [&](std::string_view key, std::chrono::milliseconds lease) {
    return Name(
        store().Execute(Op::Begin({.ns = "pay", .key = key, .owner = "worker-1", .lease = lease})));
  };
  ASSERT_EQ("STARTED", begin("stuck", 10s));
  ASSERT_EQ("STARTED", begin("alive", 60s));
  clock_->Advance(30'000);
  EXPECT_EQ(std::vector<std::string>{"stuck IN_PROGRESS"},
            ScanAll({.ns = "pay", .lease_ended = true}));
  ASSERT_EQ("STARTED", begin("stuck", 10s));  // taken over: no longer stuck
  EXPECT_EQ(std::vector<std::string>{}, ScanAll({.ns = "pay", .lease_ended = true}));
}

TEST_P(AdminQueriesTest, BadScansAreInvalidArgument) {
  Insert("a");
  Insert("b");
  EXPECT_TRUE(ScanError({.ns = "pay", .limit = 0}).IsInvalidArgument());
  EXPECT_TRUE(ScanError({.ns = "pay", .limit = 5000}).IsInvalidArgument());
  Status unknown = ScanError({.ns = "order", .status_in = {"PAYED"}});
  EXPECT_TRUE(unknown.IsInvalidArgument());
  EXPECT_NE(std::string::npos, unknown.message().find("unknown status 'PAYED'"))
      << unknown.message();
  EXPECT_TRUE(
      ScanError({.ns = "pay", .status_in = std::vector<std::string>(17, "X")}).IsInvalidArgument());
  EXPECT_TRUE(ScanError({.ns = "pay", .cursor = "\x01garbage"}).IsInvalidArgument());
  Result<ScanPage> page = store().Scan({.ns = "pay", .limit = 1});
  ASSERT_OK(page);
  Status elsewhere = ScanError({.ns = "forever", .cursor = page->cursor});
  EXPECT_TRUE(elsewhere.IsInvalidArgument());
  EXPECT_NE(std::string::npos, elsewhere.message().find("namespace 'pay'")) << elsewhere.message();
}

TEST_P(AdminQueriesTest, PurgeDeletesAPrefixAndABegunAgainKeyGetsAHigherFence) {
  Result<OpResult> first = store().Execute(Op::Begin({.ns = "pay", .key = "tmp-1"}));
  ASSERT_EQ("STARTED", Name(first));
  Insert("tmp-2");
  Insert("keep");
  Result<PurgeStep> step = store().Purge({.ns = "pay", .prefix = "tmp-"});
  ASSERT_OK(step);
  EXPECT_EQ(2u, step->deleted);
  EXPECT_EQ("", step->cursor);
  EXPECT_EQ("NOT_FOUND", Get("tmp-1"));
  EXPECT_EQ("FOUND", Get("keep"));
  Result<OpResult> again = store().Execute(Op::Begin({.ns = "pay", .key = "tmp-1"}));
  ASSERT_EQ("STARTED", Name(again));
  EXPECT_GT(again->record->fence, first->record->fence);
  EXPECT_TRUE(store().Purge({.ns = "bad ns"}).status().IsInvalidArgument());
}

TEST_P(AdminQueriesTest, CompactANamespaceOrEverything) {
  Insert("a");
  Status ns = store().Compact("pay");
  EXPECT_TRUE(ns.ok()) << ns.ToString();
  Status all = store().Compact("");
  EXPECT_TRUE(all.ok()) << all.ToString();
  EXPECT_TRUE(store().Compact("bad ns").IsInvalidArgument());
  EXPECT_EQ("FOUND", Get("a"));
}

INSTANTIATE_TEST_SUITE_P(Modes, AdminQueriesTest, ModesWithScan(), ModeTestName);

}  // namespace
}  // namespace idem::testing
