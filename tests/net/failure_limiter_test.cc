// FailureLimiter: a peer (an IPv4 address, or an IPv6 /64) that fails `limit` times is refused
// until its window (60 s from its first failure) ends; other peers are not affected; the table
// never holds more than max_peers and never drops a blocked peer to make room.
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

TEST_F(FailureLimiterTest, AFullTableDropsEndedWindowsFirstThenTheOldestUnblocked) {
  FailureLimiter limiter(2, clock_, /*max_peers=*/3);
  limiter.CountFailure("10.0.0.1");
  clock_->Advance(1'000);
  limiter.CountFailure("10.0.0.2");
  clock_->Advance(1'000);
  limiter.CountFailure("10.0.0.3");
  EXPECT_EQ(3u, limiter.peers());
  limiter.CountFailure("10.0.0.4");  // full, nothing ended: .1, the oldest, goes
  EXPECT_EQ(3u, limiter.peers());
  limiter.CountFailure("10.0.0.1");  // a new window of one failure, where two would block
  EXPECT_FALSE(limiter.Blocked("10.0.0.1"));
  limiter.CountFailure("10.0.0.3");
  EXPECT_TRUE(limiter.Blocked("10.0.0.3"));  // was kept

  clock_->Advance(FailureLimiter::kWindowMs);  // every window has ended
  limiter.CountFailure("10.0.0.5");
  EXPECT_EQ(1u, limiter.peers());
}

TEST_F(FailureLimiterTest, NewPeersNeverEvictABlockedPeer) {
  FailureLimiter limiter(2, clock_, /*max_peers=*/3);
  limiter.CountFailure("198.51.100.7");  // the oldest entry, and blocked
  limiter.CountFailure("198.51.100.7");
  clock_->Advance(1);
  for (int i = 1; i <= 10; ++i) limiter.CountFailure("203.0.113." + std::to_string(i));
  EXPECT_TRUE(limiter.Blocked("198.51.100.7"));
  EXPECT_EQ(3u, limiter.peers());
}

TEST_F(FailureLimiterTest, WhenEveryEntryIsBlockedANewPeerIsNotTrackedUntilOneEnds) {
  FailureLimiter limiter(1, clock_, /*max_peers=*/2);
  limiter.CountFailure("10.0.0.1");
  clock_->Advance(1'000);
  limiter.CountFailure("10.0.0.2");
  limiter.CountFailure("10.0.0.3");  // no room: not tracked, so not blocked
  EXPECT_EQ(2u, limiter.peers());
  EXPECT_FALSE(limiter.Blocked("10.0.0.3"));
  EXPECT_TRUE(limiter.Blocked("10.0.0.1"));
  EXPECT_TRUE(limiter.Blocked("10.0.0.2"));

  clock_->Advance(FailureLimiter::kWindowMs - 1'000);  // .1's window ends; .2's does not
  limiter.CountFailure("10.0.0.3");
  EXPECT_TRUE(limiter.Blocked("10.0.0.3"));
  EXPECT_TRUE(limiter.Blocked("10.0.0.2"));
  EXPECT_EQ(2u, limiter.peers());
}

TEST_F(FailureLimiterTest, AnIpv4MappedAddressIsTheSamePeerAsItsIpv4Form) {
  FailureLimiter limiter(1, clock_);
  limiter.CountFailure("127.0.0.1");                 // e.g. the HTTP listener bound to 0.0.0.0
  EXPECT_TRUE(limiter.Blocked("::ffff:127.0.0.1"));  // the binary listener bound to ::
  limiter.CountFailure("::ffff:10.0.0.1");
  EXPECT_TRUE(limiter.Blocked("10.0.0.1"));
}

TEST_F(FailureLimiterTest, AddressesOfOneIpv6Slash64AreOnePeer) {
  FailureLimiter limiter(1, clock_);
  limiter.CountFailure("2001:db8::1");
  EXPECT_TRUE(limiter.Blocked("2001:db8::ffff:ffff:ffff:ffff"));  // same /64: one host's allocation
  EXPECT_FALSE(limiter.Blocked("2001:db8:0:1::1"));               // the next /64
}

TEST_F(FailureLimiterTest, OneSlash64CannotFlushOtherPeersBlocks) {
  FailureLimiter limiter(1, clock_, /*max_peers=*/100);
  limiter.CountFailure("198.51.100.7");
  clock_->Advance(1);
  for (int i = 0; i < 100; ++i) limiter.CountFailure("2001:db8::" + std::to_string(i + 1));
  EXPECT_TRUE(limiter.Blocked("198.51.100.7"));
  EXPECT_EQ(2u, limiter.peers());
}

TEST_F(FailureLimiterTest, APeerThatIsNotAnIpAddressIsKeyedAsGiven) {
  FailureLimiter limiter(1, clock_);
  limiter.CountFailure("");  // the HTTP server's "unknown"
  EXPECT_TRUE(limiter.Blocked(""));
  EXPECT_FALSE(limiter.Blocked("10.0.0.1"));
}

}  // namespace
}  // namespace idem
