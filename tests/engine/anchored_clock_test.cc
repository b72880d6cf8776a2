// AnchoredClock on fake wall and monotonic clocks: it starts at the wall clock, follows the
// monotonic clock, never jumps or goes back when the wall clock is stepped, converges on the wall
// clock at most 5 % fast or slow, and says so in the log.
#include "anchored_clock.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace idem {
namespace {

constexpr int64_t kSecond = 1000;
constexpr int64_t kHour = 3600 * kSecond;
constexpr int64_t kDay = 24 * kHour;
constexpr int64_t kWallStart = 1'700'000'000'000;

class AnchoredClockTest : public ::testing::Test {
 protected:
  AnchoredClockTest()
      : wall_(std::make_shared<ManualClock>(kWallStart)),
        mono_(std::make_shared<ManualClock>(123'456)),
        clock_(wall_, mono_,
               [this](const LogRecord& record) { log_.emplace_back(record.message); }) {}

  void Pass(int64_t ms) {
    wall_->Advance(ms);
    mono_->Advance(ms);
  }
  // Lets `total_ms` of real time pass in `tick_ms` ticks, reading the clock at each; checks that
  // each tick moved engine time by tick_ms, give or take 5 %, never backwards.
  void PassReading(int64_t total_ms, int64_t tick_ms) {
    int64_t last = clock_.NowMillis();
    for (int64_t t = 0; t < total_ms; t += tick_ms) {
      Pass(tick_ms);
      const int64_t now = clock_.NowMillis();
      ASSERT_GE(now - last, tick_ms - (tick_ms * 5 + 99) / 100) << "at t=" << t;
      ASSERT_LE(now - last, tick_ms + (tick_ms * 5 + 99) / 100) << "at t=" << t;
      last = now;
    }
  }
  std::string Logged() const {
    std::string all;
    for (const std::string& line : log_) all += line + "\n";
    return all;
  }

  std::shared_ptr<ManualClock> wall_;
  std::shared_ptr<ManualClock> mono_;
  std::vector<std::string> log_;
  AnchoredClock clock_;
};

TEST_F(AnchoredClockTest, StartsAtTheWallClockAndFollowsTheMonotonicClock) {
  EXPECT_EQ(kWallStart, clock_.NowMillis());
  Pass(1234);
  EXPECT_EQ(kWallStart + 1234, clock_.NowMillis());
  wall_->Advance(kHour);  // stepped, not yet checked
  EXPECT_EQ(kWallStart + 1234, clock_.NowMillis());
  EXPECT_EQ("", Logged());
}

TEST_F(AnchoredClockTest, ForwardStepIsAbsorbedRunningAtMostFivePercentFast) {
  Pass(2 * kSecond);
  wall_->Advance(10 * kSecond);
  PassReading(1 * kSecond, 100);
  EXPECT_NE(std::string::npos, Logged().find("wall clock stepped by +10.000 s")) << Logged();
  EXPECT_NE(std::string::npos, Logged().find("does not jump")) << Logged();
  // 10 s at 5 %: 200 s of real time, and then the two agree exactly.
  PassReading(198 * kSecond, 100);
  EXPECT_GT(wall_->NowMillis(), clock_.NowMillis());
  EXPECT_EQ(Logged().find("stepped"), Logged().rfind("stepped"));  // one step, one line
  EXPECT_EQ(1u, clock_.steps_detected());
  PassReading(3 * kSecond, 100);
  EXPECT_EQ(wall_->NowMillis(), clock_.NowMillis());
  EXPECT_NE(std::string::npos, Logged().find("agree again")) << Logged();
  PassReading(10 * kSecond, 100);
  EXPECT_EQ(wall_->NowMillis(), clock_.NowMillis());  // no overshoot
}

TEST_F(AnchoredClockTest, BackwardStepNeverTurnsEngineTimeBack) {
  Pass(2 * kSecond);
  wall_->Advance(-kHour);
  PassReading(5 * kSecond, 1);  // 1 ms ticks: integer rounding must not turn it back either
  EXPECT_NE(std::string::npos, Logged().find("wall clock stepped by -3600.000 s")) << Logged();
  EXPECT_NE(std::string::npos, Logged().find("does not go back")) << Logged();
  EXPECT_NE(std::string::npos, Logged().find("(about 20.0 h)")) << Logged();
  EXPECT_GT(clock_.NowMillis(), wall_->NowMillis());
}

TEST_F(AnchoredClockTest, SmallDifferencesAreAbsorbedWithoutALogLine) {
  // NTP slewing the wall clock by 500 ppm, and a 300 ms step: not worth the operator's time.
  for (int i = 0; i < 100; ++i) {
    wall_->Advance(1);
    PassReading(kSecond, 250);
  }
  wall_->Advance(300);
  PassReading(20 * kSecond, 250);
  EXPECT_EQ(wall_->NowMillis(), clock_.NowMillis());
  EXPECT_EQ("", Logged());
  EXPECT_EQ(0u, clock_.steps_detected());
}

TEST_F(AnchoredClockTest, ContinuesFromAHighWaterMarkAheadOfTheWallClock) {
  clock_.ContinueFrom(kWallStart - kSecond);  // behind: nothing to do
  EXPECT_EQ(kWallStart, clock_.NowMillis());
  EXPECT_EQ("", Logged());

  clock_.ContinueFrom(kWallStart + kDay);
  EXPECT_EQ(kWallStart + kDay, clock_.NowMillis());
  EXPECT_NE(std::string::npos, Logged().find("is 86400.000 s behind")) << Logged();
  // It runs slow, never backwards, and never below the mark; no second line for the same gap.
  const size_t lines = log_.size();
  PassReading(10 * kSecond, 100);
  EXPECT_GE(clock_.NowMillis(), kWallStart + kDay + 9500);
  EXPECT_LT(clock_.NowMillis(), kWallStart + kDay + 10 * kSecond);
  EXPECT_EQ(lines, log_.size()) << Logged();
}

TEST_F(AnchoredClockTest, IdleTimeDoesNotTurnOneCorrectionIntoAJump) {
  wall_->Advance(kHour);
  Pass(kSecond);
  const int64_t before = clock_.NowMillis();  // the check: a correction of at most 50 ms planned
  Pass(kHour);                                // nobody reads the clock for an hour
  const int64_t after = clock_.NowMillis();
  EXPECT_GE(after - before, kHour);
  EXPECT_LE(after - before, kHour + 50);
}

// A wall clock that runs `hook` (once) when read: a test's way into the middle of a check.
class HookedClock final : public Clock {
 public:
  explicit HookedClock(int64_t now_ms) : clock_(now_ms) {}
  int64_t NowMillis() const override {
    if (armed_.exchange(false)) hook_();
    return clock_.NowMillis();
  }
  void Advance(int64_t ms) { clock_.Advance(ms); }
  void OnNextRead(std::function<void()> hook) {
    hook_ = std::move(hook);
    armed_ = true;
  }

 private:
  ManualClock clock_;
  std::function<void()> hook_;
  mutable std::atomic<bool> armed_{false};
};

// A reader that loaded the segment before a check publishes a new one, and read the monotonic
// clock after the check did, answers from the old segment: the new segment must not start
// before that reading, or the same instant reads lower through it (here, when the check slows
// engine time down).
TEST(AnchoredClockRaceTest, AReaderDuringACheckNeverSeesTimeGoBackAfterIt) {
  auto wall = std::make_shared<HookedClock>(kWallStart);
  auto mono = std::make_shared<ManualClock>(0);
  AnchoredClock clock(wall, mono, [](const LogRecord&) {});
  mono->Advance(kSecond);        // a check is due
  wall->Advance(kSecond - 500);  // the wall clock is 500 ms behind: the check slows down
  int64_t other = 0;
  wall->OnNextRead([&] {  // the checking thread reads the wall clock; meanwhile...
    mono->Advance(100);
    std::thread([&] { other = clock.NowMillis(); }).join();  // ...another thread reads the clock
  });
  const int64_t checker = clock.NowMillis();
  EXPECT_EQ(kWallStart + kSecond, checker);
  EXPECT_EQ(kWallStart + kSecond + 100, other);
  EXPECT_GE(clock.NowMillis(), other) << "engine time went back";
}

TEST(AnchoredClockSystemTest, NeverGoesBackOnAnyThreadOnTheSystemClocks) {
  AnchoredClock clock(
      SystemClock::Default(), MonotonicClock::Default(), [](const LogRecord&) {},
      AnchoredClock::Tuning{/*check_interval_ms=*/1});
  std::vector<std::thread> threads;
  std::atomic<int> backwards{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      int64_t last = clock.NowMillis();
      for (int i = 0; i < 200'000; ++i) {
        const int64_t now = clock.NowMillis();
        if (now < last) backwards.fetch_add(1);
        last = now;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(0, backwards.load());
  EXPECT_NEAR(static_cast<double>(SystemClock::Default()->NowMillis()),
              static_cast<double>(clock.NowMillis()), 1000.0);
}

}  // namespace
}  // namespace idem
