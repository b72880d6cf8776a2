// A --quick study (the default models and policies at the quick preset's traffic) on real
// engines: a longer TTL never misses more duplicates than a shorter one, and with the reclaim
// strategy the disk falls back near zero once traffic stops and the clock passes the TTL.
#include <gtest/gtest.h>

#include "cli.h"
#include "simulator.h"
#include "support/temp_dir.h"

namespace idem::retention {
namespace {

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

}  // namespace
}  // namespace idem::retention
