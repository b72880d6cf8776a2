// Remembered keys ("seen but expired"): in a namespace with a remember period, a finished record
// past its retention leaves a marker on which Begin and Insert answer EXPIRED instead of running
// the work again. Every answer is checked twice, before any compaction (the read path treats the
// expired record as its marker) and after a forced compaction (the filter rewrote it into one):
// what a caller sees must never depend on when compaction ran. Time only moves through the
// ManualClock.
#include <cstdio>
#include <string>
#include <vector>

#include <rocksdb/db.h>

#include "key_codec.h"
#include "record_codec.h"
#include "remembered_key.h"
#include "support/engine_fixture.h"

namespace idem {
namespace {

using testing::EngineTest;
using testing::Name;

constexpr int64_t kHourMs = 3600 * 1000;
constexpr int64_t kKeep = kHourMs;           // "pay" and "plain" keep records 1 h...
constexpr int64_t kRemember = 10 * kHourMs;  // ...and remember their keys 10 h more

// The stored values of every record key, read from the closed database at `path`.
std::vector<std::string> RawValues(const std::string& path) {
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(rocksdb::Options(), path, &raw);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::vector<std::string> values;
  if (!s.ok()) return values;
  std::unique_ptr<rocksdb::DB> db(raw);
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (!IsMetaKey(std::string_view(it->key().data(), it->key().size()))) {
      values.push_back(it->value().ToString());
    }
  }
  return values;
}

class RememberedKeysTest : public EngineTest {
 protected:
  RememberedKeysTest() {
    options_.retention["pay"] = RetentionPolicy{kKeep, 24 * kHourMs, false, kRemember};
    options_.retention["plain"] = RetentionPolicy{kKeep, 24 * kHourMs, false, kRemember};
    options_.retention["forget"] = RetentionPolicy{kKeep, 24 * kHourMs, false, 0};
    options_.lifecycle["pay"] = LifecyclePolicy{30'000, kHourMs, 0, /*remember_failures=*/true};
  }

  Result<OpResult> Do(const Op& op) { return engine().Execute(op); }
  std::string Begin(std::string_view ns, std::string_view key, std::string_view fp = "fp-1") {
    return Name(Do(Op::Begin({.ns = ns, .key = key, .fingerprint = fp})));
  }
  // Begin + Complete with `response`; returns the time the record expires.
  int64_t Completed(std::string_view ns, std::string_view key, std::string_view response = "resp",
                    std::string_view fp = "fp-1") {
    auto started = Do(Op::Begin({.ns = ns, .key = key, .fingerprint = fp, .owner = "w"}));
    EXPECT_TRUE(started.ok() && started->outcome == Outcome::kStarted) << Name(started);
    if (!started.ok() || !started->record) return 0;
    auto done = Do(Op::Complete(
        {.ns = ns, .key = key, .fence = started->record->fence, .response = response}));
    EXPECT_TRUE(done.ok() && done->outcome == Outcome::kApplied) << Name(done);
    return done.ok() && done->record ? done->record->expires_at_ms : 0;
  }
  // The stored values of every record, the engine closed for the look and opened again.
  std::vector<std::string> StoredValues() {
    engine_.reset();
    std::vector<std::string> values = RawValues(dir_.Sub("db"));
    Open();
    return values;
  }
};

// Runs every test in both states of the store: the expired record still stored in full, and
// rewritten into its marker by a compaction at the same instant.
class RememberedKeysBothStatesTest : public RememberedKeysTest,
                                     public ::testing::WithParamInterface<bool> {
 protected:
  bool compacted() const { return GetParam(); }
  // Moves the clock to `t`, then (compacted state) compacts everything.
  void At(int64_t t) {
    clock_->Set(t);
    if (compacted()) ASSERT_OK(engine().CompactAll());
  }
};

INSTANTIATE_TEST_SUITE_P(States, RememberedKeysBothStatesTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Compacted" : "NotCompacted";
                         });

TEST_P(RememberedKeysBothStatesTest, LateRetryOfACompletedAttemptIsExpiredNotStartedAgain) {
  const int64_t expires = Completed("pay", "req-1", "HTTP 201");
  const int64_t completed_at = clock_->NowMillis();
  At(expires);
  auto late = Do(Op::Begin({.ns = "pay", .key = "req-1", .fingerprint = "fp-1"}));
  ASSERT_OK(late);
  EXPECT_EQ("EXPIRED", Name(late));
  ASSERT_TRUE(late->record.has_value());
  // The marker: kind, fingerprint, when it finished, when it is forgotten. Nothing else.
  Record marker;
  marker.kind = RecordKind::kAttempt;
  marker.fingerprint = "fp-1";
  marker.updated_ms = completed_at;
  marker.expires_at_ms = expires + kRemember;
  EXPECT_EQ(marker, *late->record);
  // Nothing was written: asking again answers the same.
  EXPECT_EQ("EXPIRED", Begin("pay", "req-1"));
}

TEST_P(RememberedKeysBothStatesTest, WithoutARememberPeriodTheLateRetryStartsAgain) {
  const int64_t expires = Completed("forget", "req-1");
  At(expires);
  EXPECT_EQ("STARTED", Begin("forget", "req-1"));
}

TEST_P(RememberedKeysBothStatesTest, FingerprintRulesOnARememberedKey) {
  At(Completed("pay", "k"));
  // Another request under the same key: MISMATCH, as on the live record.
  auto other = Do(Op::Begin({.ns = "pay", .key = "k", .fingerprint = "fp-2"}));
  ASSERT_OK(other);
  EXPECT_EQ("MISMATCH", Name(other));
  EXPECT_FALSE(other->fingerprint_matches);
  EXPECT_EQ("fp-1", other->record->fingerprint);
  // A retry without a fingerprint cannot be told apart from the request: EXPIRED.
  EXPECT_EQ("EXPIRED", Begin("pay", "k", ""));
}

TEST_P(RememberedKeysBothStatesTest, InsertOnARememberedKeyIsExpiredWithTheFingerprintVerdict) {
  auto first =
      engine().Insert({.ns = "plain", .key = "msg-1", .status = "DONE", .fingerprint = "h"});
  ASSERT_OK(first);
  At(first->record->expires_at_ms);
  auto same =
      engine().Insert({.ns = "plain", .key = "msg-1", .status = "DONE", .fingerprint = "h"});
  ASSERT_OK(same);
  EXPECT_EQ("EXPIRED", Name(same));
  EXPECT_TRUE(same->fingerprint_matches);
  EXPECT_EQ(RecordKind::kPlain, same->record->kind);
  auto other =
      engine().Insert({.ns = "plain", .key = "msg-1", .status = "DONE", .fingerprint = "x"});
  ASSERT_OK(other);
  EXPECT_EQ("EXPIRED", Name(other));  // as EXISTS does: the verdict rides along
  EXPECT_FALSE(other->fingerprint_matches);
  EXPECT_EQ("EXPIRED", Insert("plain", "msg-1"));  // no fingerprint: matches
}

TEST_P(RememberedKeysBothStatesTest, GetReportsTheMarkerAsExpired) {
  const int64_t expires = Completed("pay", "k");
  At(expires - 1);
  EXPECT_EQ("FOUND", Get("pay", "k"));
  At(expires);
  auto got = engine().Get({.ns = "pay", .key = "k"});
  ASSERT_OK(got);
  EXPECT_EQ("EXPIRED", Name(got));
  EXPECT_EQ("", got->record->payload);
  EXPECT_EQ("", got->record->status);
  EXPECT_EQ(expires + kRemember, got->record->expires_at_ms);
}

TEST_P(RememberedKeysBothStatesTest, TheKeyIsForgottenWhenTheRememberPeriodEnds) {
  const int64_t expires = Completed("pay", "k");
  At(expires + kRemember - 1);
  EXPECT_EQ("EXPIRED", Begin("pay", "k"));
  At(expires + kRemember);
  EXPECT_EQ("NOT_FOUND", Get("pay", "k"));
  EXPECT_EQ("STARTED", Begin("pay", "k"));
}

TEST_P(RememberedKeysBothStatesTest, DeleteForgetsTheKey) {
  At(Completed("pay", "k"));
  // A condition names a status, version or fence, which a marker has none of.
  EXPECT_EQ("CONDITION_FAILED",
            Name(engine().Delete({.ns = "pay", .key = "k", .condition = {.version = 2}})));
  EXPECT_EQ("EXPIRED", Get("pay", "k"));
  auto deleted = engine().Delete({.ns = "pay", .key = "k"});
  ASSERT_OK(deleted);
  EXPECT_EQ("DELETED", Name(deleted));
  EXPECT_EQ("fp-1", deleted->record->fingerprint);
  EXPECT_EQ("NOT_FOUND", Get("pay", "k"));
  EXPECT_EQ("STARTED", Begin("pay", "k"));
}

TEST_P(RememberedKeysBothStatesTest, OtherOperationsFindNoRecordOrTheWrongKind) {
  const int64_t expires = Completed("pay", "k");
  At(expires);
  // The holder's late Complete, a CompareAndSet, a Transition: as after plain expiry.
  EXPECT_EQ("NOT_FOUND", Name(Do(Op::Complete({.ns = "pay", .key = "k", .fence = 1}))));
  EXPECT_EQ("NOT_FOUND", Name(engine().CompareAndSet({.ns = "pay", .key = "k"})));
  EXPECT_EQ("NOT_FOUND", Name(Do(Op::Transition({.ns = "pay", .key = "k", .to_status = "X"}))));
  // What would start another scheme's record there is told the key is an attempt's.
  EXPECT_EQ("WRONG_KIND", Insert("pay", "k"));
  EXPECT_EQ("WRONG_KIND", Name(Do(Op::Lock({.ns = "pay", .key = "k", .owner = "o"}))));
  EXPECT_EQ("EXPIRED", Begin("pay", "k"));
}

TEST_P(RememberedKeysBothStatesTest, AFailedAttemptKeptByPolicyIsRememberedTooAReleasedOneIsNot) {
  auto started = Do(Op::Begin({.ns = "pay", .key = "failed", .fingerprint = "fp-1"}));
  ASSERT_OK(started);
  auto aborted = Do(Op::Abort({.ns = "pay", .key = "failed", .fence = started->record->fence}));
  ASSERT_OK(aborted);
  ASSERT_EQ(kStatusFailed, aborted->record->status);
  At(aborted->record->expires_at_ms);
  EXPECT_EQ("EXPIRED", Begin("pay", "failed"));
  // "plain" has no remember_failures: Abort released the key, so nothing is remembered.
  auto other = Do(Op::Begin({.ns = "plain", .key = "released"}));
  ASSERT_OK(other);
  ASSERT_EQ("RELEASED",
            Name(Do(Op::Abort({.ns = "plain", .key = "released", .fence = other->record->fence}))));
  At(clock_->NowMillis() + kKeep);
  EXPECT_EQ("STARTED", Begin("plain", "released"));
}

TEST_P(RememberedKeysBothStatesTest, UnfinishedAttemptsLocksAndTokensLeaveNoMarker) {
  // An attempt whose holder never finished: its work may not have happened.
  auto abandoned = Do(Op::Begin({.ns = "pay", .key = "abandoned", .ttl = std::chrono::hours(2)}));
  ASSERT_OK(abandoned);
  auto lock = Do(Op::Lock({.ns = "plain", .key = "lock", .owner = "o"}));
  ASSERT_OK(lock);
  auto token = Do(Op::IssueToken({.ns = "plain"}));
  ASSERT_OK(token);
  At(abandoned->record->expires_at_ms);
  EXPECT_EQ("STARTED", Begin("pay", "abandoned"));
  EXPECT_EQ("NOT_FOUND", Get("plain", "lock"));
  EXPECT_EQ("ACQUIRED", Name(Do(Op::Lock({.ns = "plain", .key = "lock", .owner = "p"}))));
  EXPECT_EQ("NOT_FOUND", Get("plain", token->token));
}

TEST_F(RememberedKeysTest, CompactionRewritesTheRecordIntoASmallMarkerAndLaterRemovesIt) {
  const std::string response(200, 'r');
  const int64_t expires = Completed("pay", "k", response);
  ASSERT_OK(engine().CompactAll());
  std::vector<std::string> values = StoredValues();
  ASSERT_EQ(1u, values.size());
  EXPECT_FALSE(IsMarker(values[0]));
  const size_t full_bytes = values[0].size();

  clock_->Set(expires);
  ASSERT_OK(engine().CompactAll());
  values = StoredValues();
  ASSERT_EQ(1u, values.size());
  ASSERT_TRUE(IsMarker(values[0]));
  EXPECT_LT(values[0].size() * 5, full_bytes) << values[0].size() << " vs " << full_bytes;
  Marker marker;
  ASSERT_OK(DecodeMarker(values[0], &marker));
  EXPECT_EQ(expires, marker.record_expired_ms);
  EXPECT_EQ(expires + kRemember, marker.expires_at_ms);

  clock_->Set(expires + kRemember);
  ASSERT_OK(engine().CompactAll());
  EXPECT_TRUE(StoredValues().empty());
}

// The remember period is the namespace's as it is now, also for markers written under another.
TEST_F(RememberedKeysTest, AChangedRememberPeriodAppliesToMarkersAlreadyWritten) {
  const int64_t expires = Completed("pay", "marker");
  const int64_t expires_full = Completed("pay", "full");  // same instant
  ASSERT_EQ(expires, expires_full);
  clock_->Set(expires);
  ASSERT_OK(engine().CompactAll());  // both become markers...
  ASSERT_EQ("EXPIRED", Begin("pay", "full"));
  engine_.reset();
  options_.retention["pay"].remember_ms = kHourMs;  // ...then the period shrinks to 1 h
  Open();
  clock_->Set(expires + kHourMs - 1);
  EXPECT_EQ("EXPIRED", Begin("pay", "marker"));
  clock_->Set(expires + kHourMs);
  EXPECT_EQ("STARTED", Begin("pay", "marker"));

  engine_.reset();
  options_.retention["pay"].remember_ms = 0;  // not remembering at all: the marker is gone
  Open();
  EXPECT_EQ("NOT_FOUND", Get("pay", "full"));
  ASSERT_OK(engine().CompactAll());
  EXPECT_EQ(1u, StoredValues().size());  // only "marker"'s new attempt
}

TEST_F(RememberedKeysTest, ARememberPeriodOutOfRangeFailsOpen) {
  engine_.reset();
  options_.retention["pay"].remember_ms = -1;
  auto engine = ServingEngine::Open(dir_.Sub("db"), options_);
  ASSERT_FALSE(engine.ok());
  EXPECT_TRUE(engine.status().IsInvalidArgument());
  EXPECT_NE(std::string::npos, engine.status().message().find("remember_ms"))
      << engine.status().message();
}

// Bytes per key on disk after compaction: completed attempts with a typical 200-byte response
// and a 32-byte fingerprint, then the same keys as markers. Printed for docs/performance.md. The
// key (a UUID) and RocksDB's per-entry costs are the same in both: the marker saves the value.
TEST_F(RememberedKeysTest, AMarkerCostsLessThanHalfTheCompletedRecordOnDisk) {
  constexpr int kKeys = 20'000;
  // Bytes that differ from key to key, as hashes and generated ids do: incompressible.
  auto random_bytes = [](int i, uint64_t salt, size_t n, bool hex) {
    std::string out(n, '\0');
    uint64_t x = 0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(i) + 1) ^ salt;
    for (char& c : out) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = hex ? "0123456789abcdef"[x & 15] : static_cast<char>(x);
    }
    return out;
  };
  auto fingerprint = [&](int i) { return random_bytes(i, 1, 32, false); };  // a SHA-256
  auto key = [&](int i) {  // an Idempotency-Key as clients make them: a UUID
    std::string k = random_bytes(i, 5, 32, true);
    for (size_t at : {8, 13, 18, 23}) k.insert(at, "-");
    return k;
  };
  // A typical 200-byte JSON response: fixed field names around per-request ids and values.
  auto response = [&](int i) {
    std::string r = R"({"id":"pi_)" + random_bytes(i, 2, 24, true) +
                    R"(","status":"succeeded","amount":)" + std::to_string(100 + i % 9000) +
                    R"(,"currency":"eur","customer":"cus_)" + random_bytes(i, 3, 14, true) +
                    R"(","receipt":"https://pay.example/r/)" + random_bytes(i, 4, 20, true) +
                    R"(","created":)" + std::to_string(1733097600 + i) + "}";
    r.resize(200, ' ');
    return r;
  };
  engine_.reset();
  options_.durability = Durability::kAsync;  // what is measured is the disk, not the fsyncs
  Open();
  int64_t expires = 0;
  for (int i = 0; i < kKeys; ++i) expires = Completed("pay", key(i), response(i), fingerprint(i));
  ASSERT_OK(engine().Flush());
  ASSERT_OK(engine().CompactAll());
  const Record record = GetRecord("pay", key(0));
  std::string record_value, marker_value;
  EncodeRecord(record, &record_value);
  EncodeMarker(MarkerOf(record, kRemember), &marker_value);
  auto full = engine().Stats();
  ASSERT_OK(full);
  clock_->Set(expires);
  ASSERT_OK(engine().CompactAll());
  auto markers = engine().Stats();
  ASSERT_OK(markers);
  const double full_per_key = static_cast<double>(full->live_sst_bytes) / kKeys;
  const double marker_per_key = static_cast<double>(markers->live_sst_bytes) / kKeys;
  std::printf(
      "%d keys of %zu bytes, 200-byte responses, 32-byte fingerprints:\n"
      "  value bytes:                 completed record %zu, marker %zu\n"
      "  table-file bytes per key:    completed record %.1f, marker %.1f (%.0f %%)\n",
      kKeys, key(0).size(), record_value.size(), marker_value.size(), full_per_key, marker_per_key,
      100 * marker_per_key / full_per_key);
  EXPECT_EQ("EXPIRED", Begin("pay", key(0), fingerprint(0)));
  EXPECT_LT(marker_per_key, full_per_key / 2);
}

}  // namespace
}  // namespace idem
