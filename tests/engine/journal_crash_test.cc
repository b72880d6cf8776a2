// A process killed while it writes, syncs, rolls, drops and moves (journal_crash.h has the plan)
// leaves a journal store that opens, and holds every acknowledged batch whole, the record that
// never expires, and the latest acknowledged version of every key still kept; killed again and
// again on the same directory, it goes on doing so. A kill leaves the page cache, so this is
// the crash of a process, not a power cut (journal_test covers torn writes).
#include "engine/journal_crash.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <rocksdb/file_system.h>

#include "support/child_process.h"
#include "support/temp_dir.h"

namespace idem::journal {
namespace {

using testing::CrashReport;

pid_t StartChild(const std::string& dir, int report_fd, int64_t bound) {
  return testing::StartChildProcess(
      {JOURNAL_CRASH_CHILD, dir, std::to_string(report_fd), std::to_string(bound)});
}

// The key's value as a round, or -1 if absent, or -2 on an error (reported).
int64_t RoundIn(const JournalStore& store, const std::string& key) {
  Result<std::optional<JournalStore::Version>> version = store.Get(key);
  EXPECT_TRUE(version.ok()) << key << ": " << version.status().ToString();
  if (!version.ok()) return -2;
  return *version ? std::stoll((*version)->value) : -1;
}

TEST(JournalCrashTest, KilledAgainAndAgainItKeepsEveryAcknowledgedBatch) {
  testing::TempDir dir;
  const std::string path = dir.Sub("journal");
  std::mt19937 rng(20261206);
  int64_t bound = 0;         // the highest removal bound any drop or move may have used
  int64_t acknowledged = 0;  // the last round a child reported synced
  for (int run = 0; run < 6; ++run) {
    const int kill_after = std::uniform_int_distribution<int>(30, 250)(rng);
    const double into_round = std::uniform_real_distribution<double>(0, 1)(rng);
    SCOPED_TRACE("run " + std::to_string(run) + ": killed " + std::to_string(into_round) +
                 " of a round after " + std::to_string(kill_after) + " rounds");
    int fds[2];
    ASSERT_EQ(0, pipe(fds));
    ASSERT_EQ(0, fcntl(fds[0], F_SETFD, FD_CLOEXEC));
    const pid_t pid = StartChild(path, fds[1], bound);
    ASSERT_GT(pid, 0);
    close(fds[1]);
    CrashReport report;
    int rounds = 0;
    auto last = std::chrono::steady_clock::now();
    auto interval = std::chrono::steady_clock::duration::zero();
    auto take = [&](const CrashReport& r) {
      if (r.round > 0) {
        acknowledged = std::max(acknowledged, r.round);
      } else {
        bound = std::max(bound, r.bound);
      }
    };
    while (rounds < kill_after && read(fds[0], &report, sizeof report) == sizeof report) {
      take(report);
      if (report.round > 0) {
        ++rounds;
        const auto now = std::chrono::steady_clock::now();
        interval = now - last;
        last = now;
      }
    }
    std::this_thread::sleep_for(interval * into_round);
    ASSERT_EQ(0, kill(pid, SIGKILL));
    while (read(fds[0], &report, sizeof report) == sizeof report) take(report);
    close(fds[0]);
    int wstatus = 0;
    ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "the child exited with " << WEXITSTATUS(wstatus);
    ASSERT_EQ(kill_after, rounds);

    ManualClock clock;
    Result<std::unique_ptr<JournalStore>> store = JournalStore::Open(
        rocksdb::FileSystem::Default().get(), path, testing::CrashJournalOptions(), &clock, bound);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    const int64_t a = RoundIn(**store, "a");
    EXPECT_EQ(a, RoundIn(**store, "b"));  // one batch: both or neither
    EXPECT_GE(a, acknowledged);
    EXPECT_LE(a, acknowledged + 1);  // the round in flight may have reached the journal
    Result<std::optional<JournalStore::Version>> stable = (*store)->Get("stable");
    ASSERT_TRUE(stable.ok()) << stable.status().ToString();
    EXPECT_EQ("kept", *stable ? (**stable).value : "(none)");
    for (int64_t i = 0; i < testing::kChurnKeys; ++i) {
      // The last acknowledged round that wrote this key; kept past the bound (kBoundLag).
      const int64_t written = acknowledged - (acknowledged - i) % testing::kChurnKeys;
      if (written >= 1) {
        EXPECT_GE(RoundIn(**store, testing::ChurnKey(written)), written) << i;
      }
    }
    if (::testing::Test::HasFailure()) return;
  }
  // Each run went on from where the last one was killed.
  EXPECT_GT(acknowledged, 6 * 30);
  EXPECT_GT(bound, 0);
}

}  // namespace
}  // namespace idem::journal
