// Insert, CompareAndSet, Get, Delete, batches, limits and stats: the same cases against the
// Engine and against a Client over a real server (store_conformance.h).
#include "store_conformance.h"

#include <chrono>

namespace idem::testing {
namespace {

using namespace std::chrono_literals;

TEST_P(StoreConformanceTest, InsertCreatesTheRecord) {
  Result<OpResult> r = store().Insert({.ns = "pay",
                                       .key = "k1",
                                       .status = "PENDING",
                                       .payload = "payload",
                                       .fingerprint = "fp",
                                       .ttl = std::chrono::milliseconds(2 * kHour)});
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kInserted, r->outcome);
  ASSERT_TRUE(r->record);
  EXPECT_EQ("PENDING", r->record->status);
  EXPECT_EQ("payload", r->record->payload);
  EXPECT_EQ("fp", r->record->fingerprint);
  EXPECT_EQ(1u, r->record->version);
  EXPECT_GT(r->record->fence, 0u);
  EXPECT_EQ(now(), r->record->created_ms);
  EXPECT_EQ(now(), r->record->updated_ms);
  EXPECT_EQ(now() + 2 * kHour, r->record->expires_at_ms);
  EXPECT_EQ("", r->record->owner);
  EXPECT_EQ(0, r->record->lease_until_ms);
}

TEST_P(StoreConformanceTest, InsertOfALiveKeyReturnsTheExistingRecord) {
  Result<OpResult> first = store().Insert(
      {.ns = "pay", .key = "k1", .status = "PENDING", .payload = "one", .fingerprint = "fp-1"});
  ASSERT_OK(first);
  Result<OpResult> again = store().Insert(
      {.ns = "pay", .key = "k1", .status = "OTHER", .payload = "two", .fingerprint = "fp-1"});
  ASSERT_OK(again);
  EXPECT_EQ(Outcome::kExists, again->outcome);
  EXPECT_TRUE(again->fingerprint_matches);
  EXPECT_EQ(*first->record, *again->record);
}

TEST_P(StoreConformanceTest, FingerprintMismatchIsReported) {
  ASSERT_EQ("INSERTED", Insert("k1", "PENDING", "fp-1"));
  Result<OpResult> other =
      store().Insert({.ns = "pay", .key = "k1", .status = "PENDING", .fingerprint = "fp-2"});
  ASSERT_OK(other);
  EXPECT_EQ(Outcome::kExists, other->outcome);
  EXPECT_FALSE(other->fingerprint_matches);
  Result<OpResult> none = store().Insert({.ns = "pay", .key = "k1", .status = "PENDING"});
  ASSERT_OK(none);
  EXPECT_TRUE(none->fingerprint_matches);  // no fingerprint given: nothing to compare
}

TEST_P(StoreConformanceTest, GetFindsLiveRecordsOnly) {
  EXPECT_EQ("NOT_FOUND", Get("k1"));
  ASSERT_EQ("INSERTED", Insert("k1", "PENDING", "", kHour));
  Result<OpResult> found = store().Get({.ns = "pay", .key = "k1"});
  ASSERT_OK(found);
  EXPECT_EQ(Outcome::kFound, found->outcome);
  EXPECT_EQ("body", found->record->payload);
  clock_->Advance(kHour);
  Result<OpResult> gone = store().Get({.ns = "pay", .key = "k1"});
  ASSERT_OK(gone);
  EXPECT_EQ(Outcome::kNotFound, gone->outcome);
  EXPECT_FALSE(gone->record);
  EXPECT_EQ("INSERTED", Insert("k1"));  // an expired key is free again
}

TEST_P(StoreConformanceTest, CompareAndSetOnStatus) {
  ASSERT_EQ("INSERTED", Insert("k1"));
  clock_->Advance(10);
  Result<OpResult> applied = store().CompareAndSet(
      {.ns = "pay",
       .key = "k1",
       .condition = Condition{.status_in = {"PENDING"}},
       .update = Update{
           .status = "PAID", .payload = "receipt", .ttl = std::chrono::milliseconds(3 * kHour)}});
  ASSERT_OK(applied);
  EXPECT_EQ(Outcome::kApplied, applied->outcome);
  EXPECT_EQ("PAID", applied->record->status);
  EXPECT_EQ("receipt", applied->record->payload);
  EXPECT_EQ(2u, applied->record->version);
  EXPECT_EQ(now(), applied->record->updated_ms);
  EXPECT_EQ(now() + 3 * kHour, applied->record->expires_at_ms);

  Result<OpResult> failed = store().CompareAndSet({.ns = "pay",
                                                   .key = "k1",
                                                   .condition = Condition{.status_in = {"PENDING"}},
                                                   .update = Update{.status = "FAILED"}});
  ASSERT_OK(failed);
  EXPECT_EQ(Outcome::kConditionFailed, failed->outcome);
  EXPECT_EQ(*applied->record, *failed->record);
}

TEST_P(StoreConformanceTest, CompareAndSetOnVersionAndFence) {
  Result<OpResult> r = store().Insert({.ns = "pay", .key = "k1", .status = "PENDING"});
  ASSERT_OK(r);
  const uint64_t fence = r->record->fence;
  EXPECT_EQ(
      Outcome::kConditionFailed,
      store()
          .CompareAndSet(
              {.ns = "pay", .key = "k1", .condition = {.version = 2}, .update = {.status = "X"}})
          ->outcome);
  EXPECT_EQ(Outcome::kConditionFailed, store()
                                           .CompareAndSet({.ns = "pay",
                                                           .key = "k1",
                                                           .condition = {.fence = fence + 1},
                                                           .update = {.status = "X"}})
                                           ->outcome);
  Result<OpResult> ok = store().CompareAndSet({.ns = "pay",
                                               .key = "k1",
                                               .condition = {.version = 1, .fence = fence},
                                               .update = {.payload = ""}});
  ASSERT_OK(ok);
  EXPECT_EQ(Outcome::kApplied, ok->outcome);
  EXPECT_EQ("", ok->record->payload);        // an empty payload is a value, not "unchanged"
  EXPECT_EQ("PENDING", ok->record->status);  // unset: unchanged
}

// docs/protocol.md §4 "Versions, fences and updates": a record's life starts at version 1;
// every applied write adds 1, an empty Update included (it only bumps the version and
// updated_ms); CompareAndSet never changes the fence; an answer that writes nothing (here
// CONDITION_FAILED) leaves the version alone.
TEST_P(StoreConformanceTest, EveryAppliedWriteAddsOneToTheVersionAndKeepsTheFence) {
  Result<OpResult> inserted =
      store().Insert({.ns = "pay", .key = "k1", .status = "PENDING", .payload = "body"});
  ASSERT_OK(inserted);
  EXPECT_EQ(1u, inserted->record->version);
  const Record first = *inserted->record;

  Result<OpResult> changed =
      store().CompareAndSet({.ns = "pay", .key = "k1", .update = {.status = "PAID"}});
  ASSERT_OK(changed);
  EXPECT_EQ(Outcome::kApplied, changed->outcome);
  EXPECT_EQ(2u, changed->record->version);
  EXPECT_EQ(first.fence, changed->record->fence);

  EXPECT_EQ(
      Outcome::kConditionFailed,
      store().CompareAndSet({.ns = "pay", .key = "k1", .condition = {.version = 1}})->outcome);

  clock_->Advance(1000);
  Result<OpResult> touched = store().CompareAndSet({.ns = "pay", .key = "k1"});  // empty Update
  ASSERT_OK(touched);
  EXPECT_EQ(Outcome::kApplied, touched->outcome);
  EXPECT_EQ(3u, touched->record->version);
  EXPECT_EQ(first.fence, touched->record->fence);
  EXPECT_EQ("PAID", touched->record->status);
  EXPECT_EQ("body", touched->record->payload);
  EXPECT_EQ(first.created_ms, touched->record->created_ms);
  EXPECT_EQ(now(), touched->record->updated_ms);
  EXPECT_EQ(first.expires_at_ms, touched->record->expires_at_ms);
  Result<OpResult> read = store().Get({.ns = "pay", .key = "k1"});
  ASSERT_OK(read);
  EXPECT_EQ(3u, read->record->version);
}

TEST_P(StoreConformanceTest, CompareAndSetOfAMissingKeyIsNotFound) {
  Result<OpResult> r =
      store().CompareAndSet({.ns = "pay", .key = "nope", .update = {.status = "X"}});
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kNotFound, r->outcome);
}

TEST_P(StoreConformanceTest, DeleteReturnsTheRemovedRecord) {
  ASSERT_EQ("INSERTED", Insert("k1"));
  Result<OpResult> refused =
      store().Delete({.ns = "pay", .key = "k1", .condition = {.status_in = {"PAID", "FAILED"}}});
  ASSERT_OK(refused);
  EXPECT_EQ(Outcome::kConditionFailed, refused->outcome);
  Result<OpResult> deleted =
      store().Delete({.ns = "pay", .key = "k1", .condition = {.status_in = {"PENDING"}}});
  ASSERT_OK(deleted);
  EXPECT_EQ(Outcome::kDeleted, deleted->outcome);
  EXPECT_EQ("PENDING", deleted->record->status);
  EXPECT_EQ("NOT_FOUND", Get("k1"));
  EXPECT_EQ("NOT_FOUND", Name(store().Delete({.ns = "pay", .key = "k1"})));
}

TEST_P(StoreConformanceTest, ApplyRunsOpsInOrderAndIsolatesInvalidOnes) {
  std::string long_key(600, 'x');
  std::vector<Op> ops = {
      Op::Insert({.ns = "pay", .key = "a", .status = "PENDING"}),
      Op::Insert({.ns = "pay", .key = long_key, .status = "PENDING"}),
      Op::CompareAndSet({.ns = "pay",
                         .key = "a",
                         .condition = {.status_in = {"PENDING"}},
                         .update = {.status = "PAID"}}),
      Op::Get({.ns = "pay", .key = "a"}),
      Op::Insert({.ns = "bad namespace!", .key = "a", .status = "PENDING"}),
      Op::Delete({.ns = "pay", .key = "a", .condition = {.version = 2}}),
      Op::Get({.ns = "pay", .key = "a"}),
  };
  std::vector<Result<OpResult>> results;
  ASSERT_OK(store().Apply(ops, &results));
  std::vector<std::string> names;
  for (const auto& r : results) names.push_back(Name(r));
  EXPECT_EQ((std::vector<std::string>{"INSERTED", "INVALID_ARGUMENT", "APPLIED", "FOUND",
                                      "INVALID_ARGUMENT", "DELETED", "NOT_FOUND"}),
            names);
  EXPECT_EQ("PAID", results[3]->record->status);
}

TEST_P(StoreConformanceTest, EmptyApplySucceeds) {
  std::vector<Result<OpResult>> results(3, Status::IOError("stale"));
  ASSERT_OK(store().Apply({}, &results));
  EXPECT_TRUE(results.empty());
}

TEST_P(StoreConformanceTest, TooManyOpsFailTheWholeCall) {
  std::vector<Op> ops(65, Op::Insert({.ns = "pay", .key = "k", .status = "PENDING"}));
  std::vector<Result<OpResult>> results;
  Status s = store().Apply(ops, &results);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_TRUE(results.empty());
  EXPECT_EQ("NOT_FOUND", Get("k"));  // nothing applied
  ops.resize(64);
  ASSERT_OK(store().Apply(ops, &results));
  EXPECT_EQ(64u, results.size());
}

TEST_P(StoreConformanceTest, InputLimitsAreInvalidArgument) {
  const Limits& limits = Limits{};
  EXPECT_EQ("INVALID_ARGUMENT", Insert(std::string(limits.max_key_bytes + 1, 'k')));
  EXPECT_EQ("INSERTED", Insert(std::string(limits.max_key_bytes, 'k')));
  EXPECT_EQ("INVALID_ARGUMENT", Insert(""));
  EXPECT_EQ("INVALID_ARGUMENT", Insert("k", std::string(limits.max_status_bytes + 1, 'S')));
  EXPECT_EQ("INVALID_ARGUMENT", Insert("k", ""));
  EXPECT_EQ("INVALID_ARGUMENT",
            Insert("k", "PENDING", std::string(limits.max_fingerprint_bytes + 1, 'f')));
  EXPECT_EQ("INVALID_ARGUMENT",
            Name(store().Insert({.ns = std::string(65, 'n'), .key = "k", .status = "PENDING"})));
  EXPECT_EQ("INVALID_ARGUMENT",
            Name(store().Insert({.ns = "pay",
                                 .key = "k",
                                 .status = "PENDING",
                                 .payload = std::string(limits.max_payload_bytes + 1, 'p')})));
  std::vector<std::string_view> statuses(limits.max_status_set + 1, "S");
  EXPECT_EQ("INVALID_ARGUMENT", Name(store().CompareAndSet({.ns = "pay",
                                                            .key = "k",
                                                            .condition = {.status_in = statuses},
                                                            .update = {.status = "X"}})));
}

TEST_P(StoreConformanceTest, RetentionPolicyBoundsTtls) {
  EXPECT_EQ("INVALID_ARGUMENT", Insert("k", "PENDING", "", 48 * kHour + 1));
  EXPECT_EQ("INVALID_ARGUMENT", Insert("k", "PENDING", "", kForever));
  EXPECT_EQ("INSERTED", Insert("k", "PENDING", "", 48 * kHour));
  Result<OpResult> forever =
      store().Insert({.ns = "forever", .key = "k", .status = "PENDING", .ttl = Ttl::Forever()});
  ASSERT_OK(forever);
  EXPECT_EQ(kNeverExpires, forever->record->expires_at_ms);
  Result<OpResult> defaulted = store().Insert({.ns = "forever", .key = "k2", .status = "PENDING"});
  ASSERT_OK(defaulted);
  EXPECT_EQ(now() + kHour, defaulted->record->expires_at_ms);
}

// Zero is not "the default": a TTL that is given must be in range, and the answer names the range.
TEST_P(StoreConformanceTest, AnExplicitZeroTtlIsRefusedWithTheRange) {
  const std::string range = "ttl 0 ms is out of range: 1 ms .. 172800000 ms";
  Result<OpResult> insert = store().Insert({.ns = "pay", .key = "k", .status = "S", .ttl = 0ms});
  ASSERT_TRUE(insert.status().IsInvalidArgument()) << insert.status().ToString();
  EXPECT_NE(std::string::npos, insert.status().message().find(range)) << insert.status().message();
  Result<OpResult> cas = store().CompareAndSet({.ns = "pay", .key = "k", .update = {.ttl = 0ms}});
  ASSERT_TRUE(cas.status().IsInvalidArgument()) << cas.status().ToString();
  EXPECT_NE(std::string::npos, cas.status().message().find(range)) << cas.status().message();
  EXPECT_EQ("INVALID_ARGUMENT", Insert("k", "PENDING", "", -2));
  EXPECT_EQ("NOT_FOUND", Get("k"));
}

TEST_P(StoreConformanceTest, KeysAndPayloadsAreBinary) {
  const std::string key("a\0b\xff", 4);
  const std::string payload("\0\1\2\xfe\xff", 5);
  const std::string fingerprint("\xde\xad\0\xef", 4);
  ASSERT_OK(store().Insert({.ns = "pay",
                            .key = key,
                            .status = "PENDING",
                            .payload = payload,
                            .fingerprint = fingerprint}));
  Result<OpResult> r = store().Get({.ns = "pay", .key = key});
  ASSERT_OK(r);
  EXPECT_EQ(payload, r->record->payload);
  EXPECT_EQ(fingerprint, r->record->fingerprint);
  EXPECT_EQ("NOT_FOUND", Get(std::string("a\0c\xff", 4)));
}

TEST_P(StoreConformanceTest, LargePayloadRoundTrips) {
  std::string payload(Limits{}.max_payload_bytes, 'p');
  payload[12345] = '\0';
  ASSERT_OK(store().Insert({.ns = "pay", .key = "big", .status = "PENDING", .payload = payload}));
  Result<OpResult> r = store().Get({.ns = "pay", .key = "big"});
  ASSERT_OK(r);
  EXPECT_EQ(payload, r->record->payload);
}

TEST_P(StoreConformanceTest, StatsCountOps) {
  ASSERT_EQ("INSERTED", Insert("k1"));
  ASSERT_EQ("EXISTS", Insert("k1"));
  Result<StoreStats> stats = store().Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(2u, stats->ops);
  EXPECT_EQ(1u, stats->writes);
  EXPECT_GT(stats->next_fence, 0u);
  EXPECT_GT(stats->block_cache_capacity_bytes, 0u);  // the memory figures reach clients too
  EXPECT_LE(stats->block_cache_bytes, stats->block_cache_capacity_bytes);
  EXPECT_EQ(Synced(GetParam()) ? Durability::kSync : Durability::kAsync, stats->durability);
}

INSTANTIATE_TEST_SUITE_P(Modes, StoreConformanceTest, AllModes(), ModeTestName);

}  // namespace
}  // namespace idem::testing
