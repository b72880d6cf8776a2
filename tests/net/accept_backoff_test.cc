// AcceptBackoff: one log line per episode of failed accepts, exponential retry delays, and a
// summary when accepting works again.
#include "accept_backoff.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace idem {
namespace {

using namespace std::chrono_literals;
using Clock = AcceptBackoff::Clock;

TEST(AcceptBackoffTest, AnEpisodeIsLoggedOnceWithBackoffAndSummarizedWhenItEnds) {
  AcceptBackoff backoff;
  const Clock::time_point start{};
  std::string log;
  EXPECT_EQ(10ms, backoff.OnFailure(start, "Too many open files", &log));
  EXPECT_EQ(
      "accept failed: Too many open files; retrying with backoff up to 1000 ms (logged "
      "once until an accept succeeds)",
      log);
  std::vector<std::chrono::milliseconds> delays;
  for (int i = 0; i < 9; ++i) {
    delays.push_back(backoff.OnFailure(start + 10ms * (i + 1), "Too many open files", &log));
    EXPECT_EQ("", log) << "failure " << i + 2 << " was logged again";
  }
  EXPECT_EQ((std::vector<std::chrono::milliseconds>{20ms, 40ms, 80ms, 160ms, 320ms, 640ms, 1000ms,
                                                    1000ms, 1000ms}),
            delays);
  EXPECT_TRUE(backoff.in_episode());
  backoff.OnSuccess(start + 2500ms, &log);
  EXPECT_EQ("accepting again after 10 failed accepts over 2500 ms (last: Too many open files)",
            log);
  EXPECT_FALSE(backoff.in_episode());
}

TEST(AcceptBackoffTest, ANewEpisodeStartsOverAndSuccessesAloneLogNothing) {
  AcceptBackoff backoff;
  std::string log;
  backoff.OnSuccess(Clock::time_point{}, &log);
  EXPECT_EQ("", log);
  backoff.OnFailure(Clock::time_point{}, "a", &log);
  backoff.OnFailure(Clock::time_point{} + 1ms, "b", &log);
  backoff.OnSuccess(Clock::time_point{} + 2ms, &log);
  EXPECT_NE("", log);
  EXPECT_EQ(10ms, backoff.OnFailure(Clock::time_point{} + 3ms, "c", &log));
  EXPECT_NE("", log) << "the second episode's first failure is logged";
}

}  // namespace
}  // namespace idem
