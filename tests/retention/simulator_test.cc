// The simulator on real engines: the ManualClock drives expiry and compaction, and the
// accounting of caught and missed duplicates is exact on hand-built workloads.
#include "simulator.h"

#include <memory>

#include <gtest/gtest.h>

#include "duration.h"
#include "idem/engine.h"
#include "support/temp_dir.h"

namespace idem::retention {
namespace {

using ::idem::testing::TempDir;

// A workload of one namespace from (time, key, duplicate) triples, already in time order.
Workload HandBuilt(std::vector<Event> events) {
  Workload w;
  w.namespaces = {"pay"};
  w.events = std::move(events);
  for (const Event& e : w.events) {
    if (!e.duplicate) w.first_requests_end_ms = std::max(w.first_requests_end_ms, e.t_ms + 1);
  }
  return w;
}

Policy OneTtl(int64_t ttl_ms, Strategy strategy = Strategy::kReclaim) {
  return Policy{"test", strategy, ttl_ms, {}};
}

SimOptions Options(int64_t drain_ms) {
  SimOptions o;
  o.reclaim_every_ms = 10 * kMinute;
  o.sample_every_ms = 10 * kMinute;
  o.drain_ms = drain_ms;
  return o;
}

TEST(RetentionSimulatorTest, ADuplicateBeforeExpiryIsCaughtAndOneAtOrAfterExpiryIsMissed) {
  const Workload w = HandBuilt({
      {0, 1, 0, false},
      {kHour - 1, 1, 0, true},      // 1 ms before expiry: caught
      {kHour, 1, 0, true},          // exactly at expiry: missed, starts a new life
      {2 * kHour - 1, 1, 0, true},  // inside the new life: caught
      {2 * kHour + 5, 2, 0, false},
      {3 * kHour + 5, 2, 0, true},  // exactly one TTL later: missed
      {3 * kHour + 6, 3, 0, false},
      {3 * kHour + 7, 3, 0, true},  // caught
  });
  TempDir dir;
  auto r = RunPolicy(w, OneTtl(kHour), Options(0), dir.Sub("db"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(3u, r->first_requests);
  EXPECT_EQ(3u, r->duplicates_caught);
  EXPECT_EQ(2u, r->duplicates_missed);
  EXPECT_EQ(3u, r->per_namespace[0].caught);
  EXPECT_EQ(2u, r->per_namespace[0].missed);
  // Live records: key 1's second life [1h, 2h) overlaps nothing else; keys 2 and 3 are live
  // together at 3h+6 (key 2's second life and key 3).
  EXPECT_EQ(2u, r->peak_live_records);
}

// Keep 1 h, remember 2 h more: a duplicate in the remembered window is answered EXPIRED (not
// executed again), one after it is missed.
TEST(RetentionSimulatorTest, ARememberedKeyTurnsAMissIntoExpiredUntilThePeriodEnds) {
  const Workload w = HandBuilt({
      {0, 1, 0, false},
      {kHour - 1, 1, 0, true},      // caught
      {kHour, 1, 0, true},          // the record expired: EXPIRED, not executed again
      {3 * kHour - 1, 1, 0, true},  // still remembered: EXPIRED
      {3 * kHour, 1, 0, true},      // forgotten: missed, a new life
  });
  TempDir dir;
  Policy remember = OneTtl(kHour);
  remember.remember_ms = 2 * kHour;
  auto r = RunPolicy(w, remember, Options(0), dir.Sub("remember"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(1u, r->duplicates_caught);
  EXPECT_EQ(2u, r->duplicates_expired);
  EXPECT_EQ(1u, r->duplicates_missed);
  EXPECT_EQ(2u, r->per_namespace[0].expired);
  auto plain = RunPolicy(w, OneTtl(kHour), Options(0), dir.Sub("plain"));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(0u, plain->duplicates_expired);
  EXPECT_EQ(2u, plain->duplicates_missed);  // at 1 h, and at 3 h - 1 ms after the new life
}

TEST(RetentionSimulatorTest, ALongerTtlCatchesWhatAShorterOneMisses) {
  const Workload w = HandBuilt({{0, 1, 0, false}, {90 * kMinute, 1, 0, true}});
  TempDir dir;
  auto short_ttl = RunPolicy(w, OneTtl(kHour), Options(0), dir.Sub("a"));
  auto long_ttl = RunPolicy(w, OneTtl(2 * kHour), Options(0), dir.Sub("b"));
  ASSERT_TRUE(short_ttl.ok() && long_ttl.ok());
  EXPECT_EQ(1u, short_ttl->duplicates_missed);
  EXPECT_EQ(0u, long_ttl->duplicates_missed);
  EXPECT_EQ(1u, long_ttl->duplicates_caught);
}

TEST(RetentionSimulatorTest, PerNamespaceTtlsApplyToTheirNamespace) {
  Workload w = HandBuilt(
      {{0, 1, 0, false}, {0, 2, 1, false}, {2 * kHour, 1, 0, true}, {2 * kHour, 2, 1, true}});
  w.namespaces = {"short", "long"};
  Policy p{"ns", Strategy::kReclaim, kHour, {{"long", 3 * kHour}}};
  TempDir dir;
  auto r = RunPolicy(w, p, Options(0), dir.Sub("db"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(1u, r->per_namespace[0].missed);
  EXPECT_EQ(1u, r->per_namespace[1].caught);
}

// The engine the simulator drives, on a ManualClock: a record is there 1 ms before its TTL and
// gone for reads at exactly the TTL, and (with no expiry grace) ReclaimExpired removes it from
// disk once the clock has passed it.
TEST(RetentionSimulatedClockTest, RecordsVanishAtExactlyTheTtlAndReclaimRemovesThemFromDisk) {
  TempDir dir;
  auto clock = std::make_shared<ManualClock>();
  EngineOptions options;
  options.clock = clock;
  options.durability = Durability::kAsync;
  options.reclaim_interval_ms = 0;
  options.expiry_grace_ms = 0;  // removable at the TTL exactly, as reads see it
  options.retention["pay"] = RetentionPolicy{kHour, kDay, false};
  auto engine = Engine::Open(dir.Sub("db"), options);
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  const std::string payload(100, 'p');  // compresses well: the file is small, still > 20 kB
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(
        e.Insert(
             {.ns = "pay", .key = "key-" + std::to_string(i), .status = "DONE", .payload = payload})
            .ok());
  }
  ASSERT_TRUE(e.Flush().ok());
  auto before = e.Stats();
  ASSERT_TRUE(before.ok());
  EXPECT_GE(before->estimated_live_records, 2000u);
  EXPECT_GT(before->sst_bytes, 20'000u);

  clock->Advance(kHour - 1);
  EXPECT_EQ(Outcome::kFound, e.Get({.ns = "pay", .key = "key-7"})->outcome);
  EXPECT_EQ(Outcome::kExists, e.Insert({.ns = "pay", .key = "key-8", .status = "DONE"})->outcome);
  ASSERT_TRUE(e.ReclaimExpired().ok());
  EXPECT_EQ(before->sst_bytes, e.Stats()->sst_bytes) << "nothing has expired yet";

  clock->Advance(1);  // exactly the TTL
  EXPECT_EQ(Outcome::kNotFound, e.Get({.ns = "pay", .key = "key-7"})->outcome);
  auto report = e.ReclaimExpired();
  ASSERT_TRUE(report.ok());
  EXPECT_GE(report->files_compacted, 1u);
  auto after = e.Stats();
  ASSERT_TRUE(after.ok());
  EXPECT_LE(after->estimated_live_records, 1u);  // the engine's fence-reservation key
  EXPECT_LT(after->sst_bytes, before->sst_bytes / 20);
}

// The same through the simulator: disk follows the simulated clock, and only the reclaim
// strategy frees it once traffic has stopped.
TEST(RetentionSimulatedClockTest,
     ReclaimStrategyEmptiesTheDiskAfterTheTtlAndCompactionOnlyDoesNot) {
  std::vector<Event> events;
  for (uint64_t i = 0; i < 5000; ++i) {
    events.push_back({static_cast<int64_t>(i) * 100, i, 0, false});  // 500 s of traffic
  }
  const Workload w = HandBuilt(events);
  TempDir dir;
  auto reclaim = RunPolicy(w, OneTtl(kHour), Options(3 * kHour), dir.Sub("a"));
  auto compaction_only =
      RunPolicy(w, OneTtl(kHour, Strategy::kCompactionOnly), Options(3 * kHour), dir.Sub("b"));
  ASSERT_TRUE(reclaim.ok()) << reclaim.status().ToString();
  ASSERT_TRUE(compaction_only.ok()) << compaction_only.status().ToString();

  for (const PolicyResult* r : {&*reclaim, &*compaction_only}) {
    EXPECT_EQ(5000u, r->peak_live_records);
    EXPECT_EQ(0u, r->final_live_records);
    // Samples every 10 min: all 5000 live until the first expiry at 1h.
    for (const Sample& s : r->samples) {
      if (s.t_ms >= 10 * kMinute && s.t_ms < kHour) {
        EXPECT_EQ(5000u, s.live_records);
        EXPECT_GT(s.sst_bytes, 300'000u);
      }
      if (s.t_ms >= kHour + 10 * kMinute) {
        EXPECT_EQ(0u, s.live_records);
      }
    }
  }
  EXPECT_GT(reclaim->reclaim_files_compacted, 0u);
  EXPECT_LT(reclaim->disk_bytes_final, reclaim->disk_bytes_peak / 20);
  EXPECT_LE(reclaim->expired_on_disk_final, 1u);
  EXPECT_GE(reclaim->reclaim_lag_ms, 0);
  EXPECT_LE(reclaim->reclaim_lag_ms, 20 * kMinute);  // one reclaim pass plus sampling
  // No writes after the traffic: nothing triggers a compaction, the expired records stay.
  EXPECT_EQ(compaction_only->disk_bytes_peak, compaction_only->disk_bytes_final);
  EXPECT_GE(compaction_only->expired_on_disk_final, 5000u);
  EXPECT_EQ(-1, compaction_only->reclaim_lag_ms);
}

}  // namespace
}  // namespace idem::retention
