// Remembered keys over the wire: a finished record past its retention, in a namespace that
// remembers keys ("remember": 1 h, then 24 h remembered), answers EXPIRED with the marker's
// fields, the same against the Engine and against a Client over a real server
// (store_conformance.h). The engine's own tests (tests/engine/remembered_keys_test.cc) cover
// compaction and the other rules.
#include "store_conformance.h"

namespace idem::testing {
namespace {

class RememberedKeysTest : public StoreConformanceTest {
 protected:
  // Begin + Complete; returns the completed record.
  Record Completed(std::string_view key, std::string_view fingerprint) {
    Result<OpResult> started =
        store().Execute(Op::Begin({.ns = "remember", .key = key, .fingerprint = fingerprint}));
    EXPECT_TRUE(started.ok() && started->outcome == Outcome::kStarted) << Name(started);
    if (!started.ok() || !started->record) return {};
    Result<OpResult> done = store().Execute(Op::Complete(
        {.ns = "remember", .key = key, .fence = started->record->fence, .response = "HTTP 201"}));
    EXPECT_TRUE(done.ok() && done->record) << Name(done);
    return done.ok() && done->record ? *done->record : Record{};
  }
};

TEST_P(RememberedKeysTest, ALateRetryIsAnsweredExpiredWithTheMarker) {
  const Record done = Completed("req-1", "fp-1");
  clock_->Set(done.expires_at_ms);
  Result<OpResult> late =
      store().Execute(Op::Begin({.ns = "remember", .key = "req-1", .fingerprint = "fp-1"}));
  ASSERT_EQ("EXPIRED", Name(late));
  Record marker;
  marker.kind = RecordKind::kAttempt;
  marker.fingerprint = "fp-1";
  marker.updated_ms = done.updated_ms;
  marker.expires_at_ms = done.expires_at_ms + 24 * kHour;
  ASSERT_TRUE(late->record.has_value());
  EXPECT_EQ(marker, *late->record);
  EXPECT_EQ("EXPIRED", Get("req-1", "remember"));

  Result<OpResult> other =
      store().Execute(Op::Begin({.ns = "remember", .key = "req-1", .fingerprint = "fp-2"}));
  ASSERT_EQ("MISMATCH", Name(other));
  EXPECT_FALSE(other->fingerprint_matches);
}

TEST_P(RememberedKeysTest, InsertCarriesTheFingerprintVerdict) {
  Result<OpResult> first = store().Insert(
      {.ns = "remember", .key = "msg", .status = "DONE", .payload = "p", .fingerprint = "h"});
  ASSERT_EQ("INSERTED", Name(first));
  clock_->Set(first->record->expires_at_ms);
  Result<OpResult> other =
      store().Insert({.ns = "remember", .key = "msg", .status = "DONE", .fingerprint = "x"});
  ASSERT_EQ("EXPIRED", Name(other));
  EXPECT_FALSE(other->fingerprint_matches);
  EXPECT_EQ(RecordKind::kPlain, other->record->kind);
  EXPECT_EQ("", other->record->payload);
}

TEST_P(RememberedKeysTest, DeleteForgetsAndThePeriodEnds) {
  const Record a = Completed("a", "fp");
  Completed("b", "fp");
  clock_->Set(a.expires_at_ms);
  EXPECT_EQ("DELETED", Name(store().Delete({.ns = "remember", .key = "a"})));
  EXPECT_EQ("STARTED", Name(store().Execute(Op::Begin({.ns = "remember", .key = "a"}))));
  clock_->Set(a.expires_at_ms + 24 * kHour);
  EXPECT_EQ("NOT_FOUND", Get("b", "remember"));
  EXPECT_EQ("STARTED", Name(store().Execute(Op::Begin({.ns = "remember", .key = "b"}))));
}

INSTANTIATE_TEST_SUITE_P(Modes, RememberedKeysTest, AllModes(), ModeTestName);

}  // namespace
}  // namespace idem::testing
