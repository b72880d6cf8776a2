// OpBatch owns the strings of the ops it is given; a plain Op borrows them (idem/op_batch.h,
// idem/operation.h). Run under ASan (IDEM_SANITIZE=ON), these tests also show that a batch never
// reads its sources after Add and that keeping a borrowing Op past its strings is caught.
#include "idem/op_batch.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "support/engine_fixture.h"

#if defined(__SANITIZE_ADDRESS__)
#define IDEM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IDEM_TEST_ASAN 1
#endif
#endif

namespace idem {
namespace {

using namespace std::chrono_literals;
using testing::EngineTest;
using testing::Name;

// Longer than any short-string buffer: the bytes live on the heap, where ASan sees a read of
// them after they are freed.
std::string Heap(std::string_view prefix, int i) {
  return std::string(prefix) + std::string(40, '.') + std::to_string(i);
}

// Adds every kind of string an Op carries, from sources that are overwritten and freed before
// the batch is read.
OpBatch BatchFromTemporaries() {
  OpBatch batch;
  for (int i = 0; i < 3; ++i) {
    batch.Add(Op::Insert({.ns = "pay",
                          .key = Heap("order-", i),
                          .status = "PENDING",
                          .payload = Heap("body-", i),
                          .fingerprint = Heap("fp-", i)}));
  }
  std::string key = Heap("attempt-", 0);
  std::string owner = Heap("worker-", 0);
  batch.Add(Op::Begin({.ns = "pay", .key = key, .owner = owner, .lease = 30s}));
  std::string from = "PENDING";
  std::string to = Heap("PAID-", 0);
  std::string receipt = Heap("receipt-", 0);
  batch.Add(Op::CompareAndSet({.ns = "pay",
                               .key = Heap("order-", 1),
                               .condition = {.status_in = {from, "NEW"}},
                               .update = {.status = to.substr(0, 4), .payload = receipt}}));
  for (std::string* s : {&key, &owner, &from, &to, &receipt}) std::fill(s->begin(), s->end(), '#');
  return batch;
}

TEST(OpBatch, KeepsEveryStringAfterItsSourceIsGone) {
  OpBatch batch = BatchFromTemporaries();
  ASSERT_EQ(5u, batch.size());
  EXPECT_EQ(Heap("order-", 2), batch[2].key);
  EXPECT_EQ(Heap("body-", 2), batch[2].payload);
  EXPECT_EQ(Heap("fp-", 2), batch[2].fingerprint);
  EXPECT_EQ(Heap("attempt-", 0), batch[3].key);
  EXPECT_EQ(Heap("worker-", 0), batch[3].owner);
  EXPECT_EQ(std::chrono::milliseconds(30'000), batch[3].lease);
  const Op& cas = batch[4];
  ASSERT_EQ(2u, cas.condition.status_in.size());
  EXPECT_EQ("PENDING", cas.condition.status_in[0]);
  EXPECT_EQ("NEW", cas.condition.status_in[1]);
  EXPECT_EQ("PAID", cas.update.status);
  EXPECT_EQ(Heap("receipt-", 0), cas.update.payload);
}

TEST(OpBatch, StaysValidWhenMovedCopiedAndGrown) {
  OpBatch moved = BatchFromTemporaries();
  OpBatch copy = moved;
  OpBatch target;
  target = std::move(moved);
  for (int i = 0; i < 1000; ++i) target.Add(Op::Get({.ns = "pay", .key = Heap("grow-", i)}));
  EXPECT_EQ(Heap("body-", 0), target[0].payload);  // the first op's bytes did not move
  EXPECT_EQ(Heap("grow-", 999), target[1004].key);
  target.Clear();
  EXPECT_TRUE(target.empty());
  EXPECT_EQ(Heap("worker-", 0), copy[3].owner);  // a copy owns its own bytes
}

TEST(OpBatch, KeepsAnUpdatePayloadThatIsPresentButEmpty) {
  OpBatch batch;
  batch.Add(Op::CompareAndSet({.ns = "n", .key = "k", .update = {.payload = ""}}));
  ASSERT_TRUE(batch[0].update.payload.has_value());
  EXPECT_TRUE(batch[0].update.payload->empty());
  EXPECT_FALSE(batch[0].update.status.has_value());
}

class OpBatchApplyTest : public EngineTest {};

TEST_F(OpBatchApplyTest, ABatchBuiltEarlierAppliesAsItsOpsWould) {
  OpBatch batch = BatchFromTemporaries();
  std::vector<Result<OpResult>> results;
  ASSERT_OK(engine().Apply(batch, &results));
  ASSERT_EQ(5u, results.size());
  EXPECT_EQ("INSERTED", Name(results[0]));
  EXPECT_EQ("INSERTED", Name(results[1]));
  EXPECT_EQ("INSERTED", Name(results[2]));
  EXPECT_EQ("STARTED", Name(results[3]));
  EXPECT_EQ("APPLIED", Name(results[4]));
  Record order = GetRecord("pay", Heap("order-", 1));
  EXPECT_EQ("PAID", order.status);
  EXPECT_EQ(Heap("receipt-", 0), order.payload);
  EXPECT_EQ(Heap("fp-", 1), order.fingerprint);
  EXPECT_EQ(Heap("worker-", 0), GetRecord("pay", Heap("attempt-", 0)).owner);
}

// The rule for the borrowing form, shown failing: an Op kept past the statement that built it
// from a temporary views freed memory. ASan reports it; without ASan it is undefined behaviour
// that may go unnoticed, which is why batches that are kept should be OpBatches.
TEST(OpBorrowingDeathTest, AnOpKeptPastItsTemporaryReadsFreedMemory) {
#ifdef IDEM_TEST_ASAN
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        std::vector<Op> ops;
        ops.push_back(Op::Get({.ns = "pay", .key = Heap("key-", 1)}));  // the string dies here
        volatile char first = ops[0].key[0];
        (void)first;
      },
      "heap-use-after-free");
#else
  GTEST_SKIP() << "needs AddressSanitizer (IDEM_SANITIZE=ON) to observe the use after free";
#endif
}

}  // namespace
}  // namespace idem
