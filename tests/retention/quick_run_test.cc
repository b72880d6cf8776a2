// A --quick study (the default models and policies at the quick preset's traffic) on real
// engines: a longer TTL never misses more duplicates than a shorter one, and with the reclaim
// strategy the disk falls back near zero once traffic stops and the clock passes the TTL. The
// expiry-window layout answers every duplicate as the default layout does.
#include <gtest/gtest.h>

#include "cli.h"
#include "duration.h"
#include "idem/options.h"
#include "report_table.h"
#include "simulator.h"
#include "support/temp_dir.h"

namespace idem::retention {
namespace {

// A study of the strategies on one seed: every policy the command line gives, run on the same
// workload, sampled every 10 minutes and drained for `drain_ms` after the last arrival.
struct QuickStudy {
  Workload workload;
  SimOptions options;
  Study study;
};
void RunQuickStudy(std::vector<const char*> argv, size_t policies_expected, int64_t drain_ms,
                   QuickStudy* out) {
  auto config = ParseCommandLine(static_cast<int>(argv.size()), argv.data());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto workload = GenerateWorkload(config->workload);
  ASSERT_TRUE(workload.ok());
  out->workload = std::move(*workload);
  const std::vector<Policy> policies =
      BuildPolicies(config->ttls_ms, config->ns_ttls, config->strategies, config->remembers);
  ASSERT_EQ(policies_expected, policies.size());
  out->options = config->sim;
  out->options.sample_every_ms = 10 * kMinute;
  out->options.drain_ms = drain_ms;
  ::idem::testing::TempDir dir;
  for (size_t i = 0; i < policies.size(); ++i) {
    auto r = RunPolicy(out->workload, policies[i], out->options, dir.Sub("p" + std::to_string(i)));
    ASSERT_TRUE(r.ok()) << policies[i].name << ": " << r.status().ToString();
    out->study.results.push_back(std::move(*r));
  }
}

TEST(RetentionQuickRunTest, LongerTtlsMissNoMoreAndReclaimEmptiesTheDisk) {
  const char* argv[] = {"idem-retention", "--quick", "--strategies", "reclaim",    "--ns-ttl",
                        "none",           "--ttls",  "1h,6h,1d,2d",  "--duration", "12h"};
  auto config = ParseCommandLine(static_cast<int>(std::size(argv)), argv);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto workload = GenerateWorkload(config->workload);
  ASSERT_TRUE(workload.ok());
  const std::vector<Policy> policies =
      BuildPolicies(config->ttls_ms, config->ns_ttls, config->strategies);
  ASSERT_EQ(4u, policies.size());
  SimOptions options = config->sim;
  options.drain_ms = 2 * 24 * 3600 * 1000LL + 2 * 3600 * 1000LL;  // the longest TTL + 2h

  ::idem::testing::TempDir dir;
  uint64_t previous_missed = UINT64_MAX;
  for (size_t i = 0; i < policies.size(); ++i) {
    auto r = RunPolicy(*workload, policies[i], options, dir.Sub("p" + std::to_string(i)));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    SCOPED_TRACE(policies[i].name);
    EXPECT_EQ(workload->Duplicates(), r->duplicates_caught + r->duplicates_missed);
    EXPECT_LE(r->duplicates_missed, previous_missed);
    previous_missed = r->duplicates_missed;
    EXPECT_GT(r->disk_bytes_peak, 500'000u);
    EXPECT_EQ(0u, r->final_live_records);
    EXPECT_LT(r->disk_bytes_final, r->disk_bytes_peak / 50) << "expired data left the disk";
    EXPECT_LE(r->expired_on_disk_final, 1u);
  }
  EXPECT_GT(workload->Duplicates(), 1000u);
}

// The same seed under reclaim and windows: the layout moves where records live, never what a
// duplicate is answered (caught, expired or missed, per namespace). Windows is reported with its
// write amplification, and the disk empties within a window (plus the grace and the tick
// intervals) of the last expiry.
TEST(RetentionQuickRunTest, WindowsCatchAndMissExactlyWhatReclaimDoes) {
  QuickStudy run;
  // 1h and 30m+remember2h, under reclaim then windows; drained past the remembered markers'
  // death and their window.
  ASSERT_NO_FATAL_FAILURE(RunQuickStudy(
      {"idem-retention", "--quick", "--strategies", "reclaim,windows", "--ns-ttl", "none", "--ttls",
       "1h", "--remember", "30m:2h", "--duration", "3h", "--seed", "7"},
      4, 4 * kHour, &run));
  const Study& study = run.study;
  const Workload* workload = &run.workload;
  const SimOptions& options = run.options;
  for (size_t i = 0; i < 2; ++i) {
    const PolicyResult& reclaim = study.results[i];
    const PolicyResult& windows = study.results[i + 2];
    SCOPED_TRACE(windows.policy.name);
    ASSERT_EQ(Strategy::kWindows, windows.policy.strategy);
    EXPECT_EQ(DefaultWindowMs(windows.policy), windows.policy.window_ms);
    EXPECT_EQ(reclaim.first_requests, windows.first_requests);
    EXPECT_EQ(reclaim.duplicates_caught, windows.duplicates_caught);
    EXPECT_EQ(reclaim.duplicates_expired, windows.duplicates_expired);
    EXPECT_EQ(reclaim.duplicates_missed, windows.duplicates_missed);
    for (size_t ns = 0; ns < workload->namespaces.size(); ++ns) {
      EXPECT_EQ(reclaim.per_namespace[ns].caught, windows.per_namespace[ns].caught);
      EXPECT_EQ(reclaim.per_namespace[ns].expired, windows.per_namespace[ns].expired);
      EXPECT_EQ(reclaim.per_namespace[ns].missed, windows.per_namespace[ns].missed);
    }
    EXPECT_EQ(0u, reclaim.expiry_windows_peak);
    EXPECT_EQ(0u, reclaim.windows_dropped);
    // Traffic for 3 h with records dying over 1 h (2.5 h when remembered) after their write:
    // several windows at once, and each dropped once it ended.
    EXPECT_GE(windows.expiry_windows_peak, 4u);
    EXPECT_GE(windows.windows_dropped, windows.expiry_windows_peak);
    EXPECT_GT(windows.user_bytes_written, 0u);
    EXPECT_GT(windows.flush_bytes_written, 0u) << "flushes of the window column families count";
    EXPECT_GT(windows.WriteAmplification(), 0.0);
    EXPECT_GT(windows.disk_bytes_peak, 100'000u);
    EXPECT_LT(windows.disk_bytes_final, windows.disk_bytes_peak / 20) << "ended windows dropped";
  }
  EXPECT_GT(study.results[0].duplicates_missed, 0u);   // the 1h TTL misses some duplicates,
  EXPECT_GT(study.results[1].duplicates_expired, 0u);  // the remembered keys answer some
  // Keys not remembered: the last window ends at most a window after the last expiry, is
  // dropped at the first reclaim pass past the grace, and seen at the next sample.
  const PolicyResult& plain = study.results[2];
  EXPECT_GE(plain.reclaim_lag_ms, 0);
  EXPECT_LE(plain.reclaim_lag_ms, plain.policy.window_ms + EngineOptions().expiry_grace_ms +
                                      options.reclaim_every_ms + options.sample_every_ms);

  const std::string table = FormatTable(study);
  EXPECT_NE(std::string::npos, table.find("\n1h/windows "));
  EXPECT_NE(std::string::npos, table.find("window"));
}

// The same seed under reclaim and the journal, compressed or not: what a duplicate is answered
// does not move either; nothing is flushed or compacted, what is moved out of mostly dead
// segments stays well under a byte per byte written, the disk empties once the last record has
// been dead for the grace, and compression takes less of it.
TEST(RetentionQuickRunTest, TheJournalCatchesAndMissesExactlyWhatReclaimDoes) {
  QuickStudy run;
  ASSERT_NO_FATAL_FAILURE(RunQuickStudy(
      {"idem-retention", "--quick", "--strategies", "reclaim,journal,journal-compressed",
       "--ns-ttl", "none", "--ttls", "1h", "--remember", "none", "--duration", "3h", "--seed", "7"},
      3, 2 * kHour, &run));
  const SimOptions& options = run.options;
  const PolicyResult& reclaim = run.study.results[0];
  ASSERT_EQ(Strategy::kJournal, run.study.results[1].policy.strategy);
  ASSERT_EQ(Strategy::kJournalCompressed, run.study.results[2].policy.strategy);
  EXPECT_GT(reclaim.duplicates_missed, 0u);
  for (const PolicyResult* journal : {&run.study.results[1], &run.study.results[2]}) {
    SCOPED_TRACE(journal->policy.name);
    EXPECT_EQ(reclaim.first_requests, journal->first_requests);
    EXPECT_EQ(reclaim.duplicates_caught, journal->duplicates_caught);
    EXPECT_EQ(reclaim.duplicates_expired, journal->duplicates_expired);
    EXPECT_EQ(reclaim.duplicates_missed, journal->duplicates_missed);
    EXPECT_GT(journal->user_bytes_written, 0u);
    EXPECT_EQ(0u, journal->compactions);
    EXPECT_LT(journal->WriteAmplification(), 1.5);
    EXPECT_GT(journal->disk_bytes_peak, 100'000u);
    EXPECT_LT(journal->disk_bytes_final, journal->disk_bytes_peak / 20) << "dead segments deleted";
    EXPECT_GE(journal->reclaim_lag_ms, 0);
    EXPECT_LE(journal->reclaim_lag_ms,
              EngineOptions().expiry_grace_ms + options.reclaim_every_ms + options.sample_every_ms);
  }
  EXPECT_LT(run.study.results[2].disk_bytes_peak, run.study.results[1].disk_bytes_peak);
}

}  // namespace
}  // namespace idem::retention
