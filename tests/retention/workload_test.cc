// Generated workloads: reproducible from the seed, in time order, with the rate, the mix and
// the delay models they were asked for.
#include "workload.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

#include <gtest/gtest.h>

#include "duration.h"

namespace idem::retention {
namespace {

WorkloadSpec Spec(uint64_t seed) {
  WorkloadSpec spec;
  spec.seed = seed;
  spec.rate_per_s = 2;
  spec.duration_ms = 6 * kHour;
  auto mix = ParseMix("payments:callbacks:0.5,orders:retry:0.3,web:human:0.2");
  EXPECT_TRUE(mix.ok());
  spec.mix = *mix;
  return spec;
}

bool SameEvents(const Workload& a, const Workload& b) {
  return a.events.size() == b.events.size() &&
         std::equal(a.events.begin(), a.events.end(), b.events.begin(),
                    [](const Event& x, const Event& y) {
                      return x.t_ms == y.t_ms && x.key_id == y.key_id && x.ns == y.ns &&
                             x.duplicate == y.duplicate;
                    });
}

TEST(RetentionWorkloadTest, TheSameSeedReproducesTheWorkloadAndAnotherSeedDoesNot) {
  auto a = GenerateWorkload(Spec(1));
  auto b = GenerateWorkload(Spec(1));
  auto c = GenerateWorkload(Spec(2));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_TRUE(SameEvents(*a, *b));
  EXPECT_FALSE(SameEvents(*a, *c));
}

TEST(RetentionWorkloadTest, EventsAreInTimeOrderAndDuplicatesFollowTheirFirstRequest) {
  auto w = GenerateWorkload(Spec(3));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(std::is_sorted(w->events.begin(), w->events.end(),
                             [](const Event& x, const Event& y) { return x.t_ms < y.t_ms; }));
  std::unordered_map<uint64_t, std::pair<int64_t, uint32_t>> first;  // id -> (time, ns)
  for (const Event& e : w->events) {
    if (!e.duplicate) {
      ASSERT_TRUE(first.emplace(e.key_id, std::make_pair(e.t_ms, e.ns)).second);
      ASSERT_LT(e.t_ms, w->first_requests_end_ms);
    } else {
      auto it = first.find(e.key_id);
      ASSERT_NE(first.end(), it) << "duplicate before its first request";
      ASSERT_GT(e.t_ms, it->second.first);
      ASSERT_EQ(it->second.second, e.ns);
    }
  }
}

TEST(RetentionWorkloadTest, FirstRequestsArriveAtTheRateAndFollowTheMix) {
  WorkloadSpec spec = Spec(4);
  auto w = GenerateWorkload(spec);
  ASSERT_TRUE(w.ok());
  std::vector<double> per_ns(3);
  double first = 0;
  for (const Event& e : w->events) {
    if (e.duplicate) continue;
    ++first;
    ++per_ns[e.ns];
  }
  const double expected = spec.rate_per_s * 6 * 3600;  // 43200; Poisson sd ~208
  EXPECT_NEAR(expected, first, 4 * std::sqrt(expected));
  EXPECT_NEAR(0.5, per_ns[0] / first, 0.01);
  EXPECT_NEAR(0.3, per_ns[1] / first, 0.01);
  EXPECT_NEAR(0.2, per_ns[2] / first, 0.01);
  // Callbacks (payments) duplicates land exactly on the schedule's offsets.
  std::set<int64_t> offsets;
  std::unordered_map<uint64_t, int64_t> first_at;
  for (const Event& e : w->events) {
    if (!e.duplicate)
      first_at[e.key_id] = e.t_ms;
    else if (e.ns == 0)
      offsets.insert(e.t_ms - first_at[e.key_id]);
  }
  int64_t cumulative = 0;
  std::set<int64_t> schedule;
  for (int64_t step : kCallbackSteps) schedule.insert(cumulative += step);
  for (int64_t d : offsets) EXPECT_TRUE(schedule.count(d)) << d;
}

TEST(RetentionWorkloadTest, KeysAreUniqueAndTimeOrderedKeysSortLikeTheirIds) {
  Workload w;
  std::set<std::string> keys;
  for (uint64_t id = 0; id < 10'000; ++id) {
    std::string k = w.KeyName(id);
    ASSERT_EQ(32u, k.size());
    ASSERT_TRUE(keys.insert(k).second);
  }
  std::vector<std::string> by_id;
  for (uint64_t id = 0; id < 100; ++id) by_id.push_back(w.KeyName(id));
  EXPECT_FALSE(std::is_sorted(by_id.begin(), by_id.end()));  // random: spread over the key space
  w.key_order = KeyOrder::kTime;
  for (uint64_t id = 1; id < 10'000; ++id) ASSERT_LT(w.KeyName(id - 1), w.KeyName(id));
}

TEST(RetentionParseMixTest, ReadsNamespacesModelsAndWeights) {
  auto mix = ParseMix("payments:callbacks:0.5,a:b:retry:2");
  ASSERT_TRUE(mix.ok()) << mix.status().ToString();
  ASSERT_EQ(2u, mix->size());
  EXPECT_EQ("payments", (*mix)[0].ns);
  EXPECT_EQ(DelayModel::kCallbacks, (*mix)[0].model);
  EXPECT_EQ(0.5, (*mix)[0].weight);
  EXPECT_EQ("a:b", (*mix)[1].ns);  // namespaces may contain ':'
  EXPECT_EQ(DelayModel::kRetry, (*mix)[1].model);
}

TEST(RetentionParseMixTest, RejectsMalformedEntries) {
  for (const char* bad : {"", "payments", "payments:callbacks", "payments:nope:1",
                          "payments:retry:0", "payments:retry:-1", "payments:retry:x",
                          "bad space:retry:1", "p:retry:1,p:human:1", "payments:retry:1,"}) {
    EXPECT_FALSE(ParseMix(bad).ok()) << bad;
  }
}

TEST(RetentionWorkloadTest, RejectsImpossibleSpecs) {
  WorkloadSpec spec = Spec(1);
  spec.rate_per_s = 0;
  EXPECT_FALSE(GenerateWorkload(spec).ok());
  spec = Spec(1);
  spec.rate_per_s = 1e6;
  spec.duration_ms = 30 * kDay;
  EXPECT_FALSE(GenerateWorkload(spec).ok());  // memory guard, before allocating
}

}  // namespace
}  // namespace idem::retention
