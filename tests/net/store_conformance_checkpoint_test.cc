// Recovery points inside an attempt (rocket-rides' "atomic phases"): the holder of an attempt
// records how far it got with Checkpoint, the attempt stays in progress, and whoever takes the
// attempt over after the lease ends gets the last checkpoint in Begin's record and resumes from
// it. Only the current holder may checkpoint. The same cases against the Engine and against a
// Client over a real server (store_conformance.h).
#include <chrono>

#include "store_conformance.h"

namespace idem::testing {
namespace {

using namespace std::chrono_literals;

class CheckpointTest : public StoreConformanceTest {
 protected:
  Result<OpResult> Begin(std::string_view owner, std::chrono::milliseconds lease = 10s) {
    return store().Execute(Op::Begin({.ns = "pay", .key = "job", .owner = owner, .lease = lease}));
  }
  // A Begin that must start (or take over) the attempt: its record.
  Record Started(std::string_view owner) {
    Result<OpResult> r = Begin(owner);
    EXPECT_EQ("STARTED", Name(r));
    return r.ok() && r->record ? *r->record : Record{};
  }
  // What a Begin by `owner` answers, and the payload it returns: "IN_PROGRESS charged".
  std::string BeginSees(std::string_view owner) {
    Result<OpResult> r = Begin(owner);
    return Name(r) + (r.ok() && r->record ? " " + r->record->payload : "");
  }
  std::string Complete(uint64_t fence, std::string_view response) {
    return Name(store().Execute(
        Op::Complete({.ns = "pay", .key = "job", .fence = fence, .response = response})));
  }
  Result<OpResult> Checkpoint(uint64_t fence, std::string_view payload) {
    return store().Execute(
        Op::Checkpoint({.ns = "pay", .key = "job", .fence = fence, .payload = payload}));
  }
  std::string PayloadNow() {
    Result<OpResult> r = store().Get({.ns = "pay", .key = "job"});
    return r.ok() && r->record ? r->record->payload : Name(r);
  }
};

TEST_P(CheckpointTest, StoresThePhaseAndKeepsTheAttemptInProgressLeaseAndFence) {
  const Record started = Started("worker-a");
  clock_->Advance(1'000);
  Result<OpResult> saved = Checkpoint(started.fence, "charged:ch_123");
  ASSERT_OK(saved);
  EXPECT_EQ(Outcome::kApplied, saved->outcome);
  EXPECT_EQ("IN_PROGRESS", saved->record->status);
  EXPECT_EQ("charged:ch_123", saved->record->payload);
  EXPECT_EQ(started.fence, saved->record->fence);
  EXPECT_EQ(started.lease_until_ms, saved->record->lease_until_ms);  // not a heartbeat
  EXPECT_EQ(started.expires_at_ms, saved->record->expires_at_ms);
  EXPECT_EQ(started.version + 1, saved->record->version);
  EXPECT_EQ(now(), saved->record->updated_ms);
  // Another Begin meanwhile sees the attempt in progress, with its progress.
  EXPECT_EQ("IN_PROGRESS charged:ch_123", BeginSees("worker-b"));
}

TEST_P(CheckpointTest, ATakeoverResumesFromTheLastCheckpointAndTheOldHolderIsRefused) {
  const uint64_t old_fence = Started("worker-a").fence;
  ASSERT_EQ("APPLIED", Name(Checkpoint(old_fence, "charged:ch_123")));
  ASSERT_EQ("APPLIED", Name(Checkpoint(old_fence, "charged:ch_123;shipped:sh_9")));
  clock_->Advance(10'001);  // worker-a's lease ends without a word from it

  const Record taken = Started("worker-b");
  EXPECT_EQ("charged:ch_123;shipped:sh_9", taken.payload);
  EXPECT_EQ("worker-b", taken.owner);
  EXPECT_GT(taken.fence, old_fence);

  // worker-a wakes up: its checkpoint and its completion are refused, the record is untouched.
  Result<OpResult> stale = Checkpoint(old_fence, "charged:ch_OTHER");
  ASSERT_OK(stale);
  EXPECT_EQ(Outcome::kFenceMismatch, stale->outcome);
  EXPECT_EQ(taken.fence, stale->record->fence);
  EXPECT_EQ("charged:ch_123;shipped:sh_9", PayloadNow());
  EXPECT_EQ("FENCE_MISMATCH", Complete(old_fence, "done twice"));

  // worker-b finishes: the response replaces the checkpoint and is what Begin replays.
  ASSERT_EQ("APPLIED", Name(Checkpoint(taken.fence, "charged;shipped;emailed")));
  ASSERT_EQ("APPLIED", Complete(taken.fence, "done"));
  EXPECT_EQ("COMPLETED done", BeginSees("worker-c"));
}

// As with Heartbeat and Complete, a lease that ran out ends nothing by itself: until another Begin
// takes over, the holder's fence is current and its checkpoint is APPLIED. It does not revive
// the lease, so the next Begin takes over, with that checkpoint.
TEST_P(CheckpointTest, AfterTheLeaseEndedButBeforeATakeoverTheHoldersCheckpointIsApplied) {
  const uint64_t fence = Started("worker-a").fence;
  clock_->Advance(15'000);
  Result<OpResult> late = Checkpoint(fence, "charged");
  ASSERT_OK(late);
  EXPECT_EQ(Outcome::kApplied, late->outcome);
  EXPECT_LT(late->record->lease_until_ms, now());
  EXPECT_EQ("charged", Started("worker-b").payload);
}

// A Heartbeat in the same Apply extends the lease too: one round trip, one commit.
TEST_P(CheckpointTest, WithAHeartbeatInTheSameApplyItAlsoExtendsTheLease) {
  const uint64_t fence = Started("worker-a").fence;
  clock_->Advance(5'000);
  std::vector<Op> ops = {
      Op::Checkpoint({.ns = "pay", .key = "job", .fence = fence, .payload = "charged"}),
      Op::Heartbeat({.ns = "pay", .key = "job", .fence = fence, .lease = 1min})};
  std::vector<Result<OpResult>> results;
  ASSERT_OK(store().Apply(ops, &results));
  ASSERT_EQ(2u, results.size());
  EXPECT_EQ("APPLIED", Name(results[0]));
  ASSERT_EQ("APPLIED", Name(results[1]));
  EXPECT_EQ("charged", results[1]->record->payload);
  EXPECT_EQ(now() + 60'000, results[1]->record->lease_until_ms);
}

// A finished attempt is never reopened: its holder's checkpoint is answered as its Complete would
// be (ALREADY, with the final record), and anyone else's is FENCE_MISMATCH.
TEST_P(CheckpointTest, OnAFinishedAttemptItIsAlreadyAndChangesNothing) {
  const uint64_t fence = Started("worker-a").fence;
  ASSERT_EQ("APPLIED", Complete(fence, "done"));
  Result<OpResult> after = Checkpoint(fence, "charged");
  ASSERT_OK(after);
  EXPECT_EQ(Outcome::kAlready, after->outcome);
  EXPECT_EQ("COMPLETED", after->record->status);
  EXPECT_EQ("done", after->record->payload);
  EXPECT_EQ("FENCE_MISMATCH", Name(Checkpoint(fence + 1, "charged")));
  EXPECT_EQ("done", PayloadNow());
}

TEST_P(CheckpointTest, OnlyAnAttemptTakesACheckpoint) {
  EXPECT_EQ("NOT_FOUND", Name(Checkpoint(1, "charged")));
  ASSERT_EQ("INSERTED", Insert("plain"));
  EXPECT_EQ("WRONG_KIND", Name(store().Execute(Op::Checkpoint(
                              {.ns = "pay", .key = "plain", .fence = 1, .payload = "x"}))));
  Result<OpResult> lock =
      store().Execute(Op::Lock({.ns = "locks", .key = "report", .owner = "alice"}));
  ASSERT_OK(lock);
  EXPECT_EQ("WRONG_KIND",
            Name(store().Execute(Op::Checkpoint(
                {.ns = "locks", .key = "report", .fence = lock->record->fence, .payload = "x"}))));
  EXPECT_EQ("body", store().Get({.ns = "pay", .key = "plain"})->record->payload);
}

TEST_P(CheckpointTest, NeedsTheFenceAndAPayloadWithinTheLimit) {
  const uint64_t fence = Started("worker-a").fence;
  Op no_fence = Op::Checkpoint({.ns = "pay", .key = "job", .payload = "charged"});
  no_fence.condition.fence.reset();
  Result<OpResult> r = store().Execute(no_fence);
  ASSERT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  EXPECT_EQ("checkpoint needs the holder's fence", r.status().message());
  const std::string too_big(Limits().max_payload_bytes + 1, 'x');
  r = Checkpoint(fence, too_big);
  ASSERT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  EXPECT_NE(std::string::npos, r.status().message().find("checkpoint payload is 1048577 bytes"))
      << r.status().message();
  EXPECT_EQ("", PayloadNow());
}

// A checkpoint is what a takeover's Begin returns, so the namespace's response limit bounds it.
TEST_P(CheckpointTest, APayloadOverTheNamespacesResponseLimitIsRefused) {
  Result<OpResult> begun =
      store().Execute(Op::Begin({.ns = "capped", .key = "job", .owner = "worker-a"}));
  ASSERT_EQ("STARTED", Name(begun));
  const uint64_t fence = begun->record->fence;
  auto checkpoint = [&](std::string_view payload) {
    return store().Execute(
        Op::Checkpoint({.ns = "capped", .key = "job", .fence = fence, .payload = payload}));
  };
  Result<OpResult> r = checkpoint("123456789");
  ASSERT_TRUE(r.status().IsInvalidArgument()) << Name(r);
  EXPECT_EQ("checkpoint payload is 9 bytes; this namespace's max_response_bytes is 8",
            r.status().message());
  EXPECT_EQ("APPLIED", Name(checkpoint("12345678")));
}

INSTANTIATE_TEST_SUITE_P(Modes, CheckpointTest, AllModes(), ModeTestName);

}  // namespace
}  // namespace idem::testing
