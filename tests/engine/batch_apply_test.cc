// A batch must mean what its ops mean one at a time. Apply reads a batch's keys with one
// RocksDB MultiGet and lets later ops see earlier ones' writes through an overlay; this test
// drives two engines on one clock with the same random ops — one in batches, one op per Apply
// (a lone key is read with Get) — and requires the same answers, with the records spread over
// the memtable and table files at several levels, expiring, deleted and written twice in a batch.
#include <random>

#include "support/engine_fixture.h"

namespace idem {
namespace {

using testing::EngineTest;
using testing::Name;

// Everything an answer says, as one comparable string.
std::string Describe(const Result<OpResult>& r) {
  std::string out = Name(r);
  if (r.ok() && r->record) {
    const Record& rec = *r->record;
    out += " status=" + rec.status + " payload=" + rec.payload + " v" +
           std::to_string(rec.version) + " fence=" + std::to_string(rec.fence) +
           " expires=" + std::to_string(rec.expires_at_ms);
  }
  return out;
}

class BatchApplyTest : public EngineTest {
 protected:
  // Backing storage for the string_views of one round's ops.
  std::vector<std::string> keys_;
  std::mt19937 rng_{20261129};

  int Draw(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  Op RandomOp() {
    static const std::string_view kStatuses[] = {"A", "B", "C"};
    std::string_view key = keys_[Draw(static_cast<int>(keys_.size()))];
    std::string_view ns = Draw(4) == 0 ? "short" : "b";
    std::string_view status = kStatuses[Draw(3)];
    switch (Draw(6)) {
      case 0:
      case 1: {
        const std::optional<int64_t> ttls[] = {std::nullopt, 1000, 3000};
        const std::optional<int64_t> ttl = ns == "short" ? ttls[1 + Draw(2)] : ttls[Draw(3)];
        return Op::Insert(
            {.ns = ns, .key = key, .status = status, .payload = "p", .ttl = testing::TtlMs(ttl)});
      }
      case 2:
        return Op::Get({.ns = ns, .key = key});
      case 3:
        return Op::CompareAndSet({.ns = ns,
                                  .key = key,
                                  .condition = {{status}, {}, {}},
                                  .update = {kStatuses[Draw(3)], "q", {}}});
      case 4:
        return Op::Delete({.ns = ns,
                           .key = key,
                           .condition = Draw(2) == 0 ? Condition{} : Condition{{status}, {}, {}}});
      default:
        return Op::Insert({.key = key, .status = status});  // invalid: an empty namespace
    }
  }
};

TEST_F(BatchApplyTest, ABatchAnswersAsItsOpsDoOneAtATime) {
  auto opened = Engine::Open(dir_.Sub("one_by_one"), options_);
  ASSERT_OK(opened);
  Engine& single = **opened;
  for (int i = 0; i < 48; ++i) keys_.push_back("key" + std::to_string(i));

  size_t ops_checked = 0, from_tables = 0;
  for (int round = 0; round < 400; ++round) {
    std::vector<Op> ops;
    const int n = 1 + Draw(40);
    for (int i = 0; i < n; ++i) ops.push_back(RandomOp());

    std::vector<Result<OpResult>> batched;
    ASSERT_TRUE(engine().Apply(ops, &batched).ok());
    ASSERT_EQ(ops.size(), batched.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      std::vector<Result<OpResult>> alone;
      ASSERT_TRUE(single.Apply(std::span<const Op>(&ops[i], 1), &alone).ok());
      ASSERT_EQ(1u, alone.size());
      ASSERT_EQ(Describe(alone[0]), Describe(batched[i]))
          << "round " << round << ", op " << i << " of " << ops.size();
      ++ops_checked;
    }
    // Move records out of the memtable now and then, to every level.
    if (round % 7 == 3) {
      ASSERT_TRUE(engine().Flush().ok());
      ASSERT_TRUE(single.Flush().ok());
      ++from_tables;
    }
    if (round % 50 == 25) {
      ASSERT_TRUE(engine().CompactAll().ok());
      ASSERT_TRUE(single.CompactAll().ok());
    }
    clock_->Advance(Draw(400));
  }
  EXPECT_GT(ops_checked, 6000u);
  EXPECT_GT(from_tables, 50u);
}

}  // namespace
}  // namespace idem
