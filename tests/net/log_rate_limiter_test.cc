// LogRateLimiter: what a peer can cause once per connection is logged at most once per event and
// interval, and every occurrence not logged is counted on a later line.
#include "log_rate_limiter.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace idem {
namespace {

class LogRateLimiterTest : public ::testing::Test {
 protected:
  LogRateLimiterTest()
      : clock_(std::make_shared<ManualClock>(0)),
        limiter_([this](const LogRecord& r) { logged_.push_back(r); }, clock_, 10'000) {}

  static LogRecord BadFrame(const std::string& peer) {
    return LogRecord(LogLevel::kWarn, "bad_frame", "closing").With("peer", peer);
  }
  // The "suppressed" field of logged_[i], or -1 without one.
  int64_t Suppressed(size_t i) const {
    for (const LogField& f : logged_.at(i).fields) {
      if (f.key == "suppressed") return std::get<int64_t>(f.value);
    }
    return -1;
  }

  std::shared_ptr<ManualClock> clock_;
  std::vector<LogRecord> logged_;
  LogRateLimiter limiter_;
};

TEST_F(LogRateLimiterTest, TheFirstOfAnEventIsLoggedAsIs) {
  limiter_.Log(BadFrame("a"));
  ASSERT_EQ(1u, logged_.size());
  EXPECT_EQ("bad_frame", logged_[0].event);
  EXPECT_EQ(-1, Suppressed(0));
}

TEST_F(LogRateLimiterTest, RepeatsWithinTheIntervalAreCountedOnTheNextLine) {
  limiter_.Log(BadFrame("a"));
  for (int i = 0; i < 5; ++i) {
    clock_->Advance(1'000);
    limiter_.Log(BadFrame("b"));
  }
  EXPECT_EQ(1u, logged_.size());
  clock_->Advance(5'000);  // 10 s after the first line
  limiter_.Log(BadFrame("c"));
  ASSERT_EQ(2u, logged_.size());
  EXPECT_EQ(5, Suppressed(1));
  EXPECT_EQ("peer", logged_[1].fields[0].key);  // the record's own fields come first
}

TEST_F(LogRateLimiterTest, EventsAreLimitedSeparately) {
  limiter_.Log(BadFrame("a"));
  limiter_.Log(LogRecord(LogLevel::kInfo, "idle_timeout", "idle"));
  limiter_.Log(BadFrame("a"));
  ASSERT_EQ(2u, logged_.size());
  EXPECT_EQ("idle_timeout", logged_[1].event);
}

TEST_F(LogRateLimiterTest, FlushReportsTheCountsNotYetLogged) {
  limiter_.Log(BadFrame("a"));
  limiter_.Log(BadFrame("b"));
  limiter_.Log(BadFrame("c"));
  limiter_.Log(LogRecord(LogLevel::kInfo, "idle_timeout", "idle"));  // nothing suppressed
  limiter_.Flush();
  ASSERT_EQ(3u, logged_.size());
  EXPECT_EQ("bad_frame", logged_[2].event);
  EXPECT_EQ(LogLevel::kWarn, logged_[2].level);
  EXPECT_EQ(2, Suppressed(2));
  EXPECT_EQ("2 more bad_frame not logged one by one since the last such line", logged_[2].message);
  limiter_.Flush();  // reported once
  EXPECT_EQ(3u, logged_.size());
}

}  // namespace
}  // namespace idem
