// FailureLimiter: a peer that fails `limit` times is refused until its window (60 s from its
// first failure) ends; other peers are not affected; the table never holds more than max_peers.
#include "failure_limiter.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace idem {
namespace {

class FailureLimiterTest : public ::testing::Test {
 protected:
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(0);
};

TEST_F(FailureLimiterTest, APeerIsBlockedAfterLimitFailuresWithinTheWindow) {
  FailureLimiter limiter(3, clock_);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(limiter.Blocked("10.0.0.1")) << "failure " << i;
    limiter.CountFailure("10.0.0.1");
  }
  EXPECT_TRUE(limiter.Blocked("10.0.0.1"));
  EXPECT_FALSE(limiter.Blocked("10.0.0.2"));  // per address
}

TEST_F(FailureLimiterTest, TheBlockEndsWithTheWindowOfTheFirstFailure) {
  FailureLimiter limiter(2, clock_);
  limiter.CountFailure("p");
  clock_->Advance(30'000);
  limiter.CountFailure("p");
  EXPECT_TRUE(limiter.Blocked("p"));
  clock_->Advance(29'999);  // 59.999 s after the first failure
  EXPECT_TRUE(limiter.Blocked("p"));
  clock_->Advance(1);
  EXPECT_FALSE(limiter.Blocked("p"));
  // A new window: one failure does not block again.
  limiter.CountFailure("p");
  EXPECT_FALSE(limiter.Blocked("p"));
}

TEST_F(FailureLimiterTest, FailuresSpreadOverWindowsDoNotAddUp) {
  FailureLimiter limiter(2, clock_);
  limiter.CountFailure("p");
  clock_->Advance(FailureLimiter::kWindowMs);
  limiter.CountFailure("p");
  EXPECT_FALSE(limiter.Blocked("p"));
}

TEST_F(FailureLimiterTest, AFullTableDropsEndedWindowsFirstThenTheOldest) {
  FailureLimiter limiter(1, clock_, /*max_peers=*/3);
  limiter.CountFailure("a");
  clock_->Advance(1'000);
  limiter.CountFailure("b");
  clock_->Advance(1'000);
  limiter.CountFailure("c");
  EXPECT_EQ(3u, limiter.peers());
  limiter.CountFailure("d");  // full, nothing ended: "a", the oldest, goes
  EXPECT_EQ(3u, limiter.peers());
  EXPECT_FALSE(limiter.Blocked("a"));
  EXPECT_TRUE(limiter.Blocked("b"));
  EXPECT_TRUE(limiter.Blocked("d"));

  clock_->Advance(FailureLimiter::kWindowMs);  // b, c and d have all ended
  limiter.CountFailure("e");
  EXPECT_EQ(1u, limiter.peers());
  EXPECT_TRUE(limiter.Blocked("e"));
}

}  // namespace
}  // namespace idem
