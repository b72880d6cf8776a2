// A process killed while it writes, syncs, rolls, drops and moves (journal_crash.h has the plan)
// leaves a journal store that opens and holds every acknowledged batch whole, the record that
// never expires, the latest acknowledged version of every key still kept, and none of the
// records that ended by the removal bound; killed again and again on the same directory, it goes
// on doing so. A kill leaves the page cache, so this is the crash of a process, not a power cut
// (journal_test covers torn writes).
#include "engine/journal_crash.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <rocksdb/file_system.h>

#include "support/child_process.h"
#include "support/temp_dir.h"

namespace idem::journal {
namespace {

using testing::CrashReport;

// The next report, or nullopt at the end of the pipe or after 30 s without one (a child that
// hangs fails the test instead of hanging it).
std::optional<CrashReport> NextReport(int fd) {
  pollfd ready{.fd = fd, .events = POLLIN, .revents = 0};
  if (poll(&ready, 1, 30'000) != 1) {
    ADD_FAILURE() << "no report from the child for 30 s";
    return std::nullopt;
  }
  CrashReport report;
  if (read(fd, &report, sizeof report) != sizeof report) return std::nullopt;
  return report;
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
  int64_t dropped = 0;       // segments deleted by drops, by moves
  int64_t moved = 0;
  int loads = 0;  // reopens that loaded a save
  for (int run = 0; run < 8; ++run) {
    // Even runs: killed within a round, after some rounds. Odd runs: killed right after a
    // removal bound was reported, in the drop (or move) it begins.
    const bool in_reclaim = run % 2 == 1;
    const int kill_after = in_reclaim ? std::uniform_int_distribution<int>(1, 6)(rng)
                                      : std::uniform_int_distribution<int>(30, 250)(rng);
    const double into = std::uniform_real_distribution<double>(0, 1)(rng);
    SCOPED_TRACE("run " + std::to_string(run) + ": killed " + std::to_string(into) + " after " +
                 std::to_string(kill_after) + (in_reclaim ? " bounds" : " rounds"));
    int fds[2];
    ASSERT_EQ(0, pipe(fds));
    ASSERT_EQ(0, fcntl(fds[0], F_SETFD, FD_CLOEXEC));
    const pid_t pid = testing::StartChildProcess(
        {JOURNAL_CRASH_CHILD, path, std::to_string(fds[1]), std::to_string(bound)});
    ASSERT_GT(pid, 0);
    close(fds[1]);
    int counted = 0;
    auto last = std::chrono::steady_clock::now();
    auto interval = std::chrono::steady_clock::duration::zero();
    auto take = [&](const CrashReport& r) {
      switch (r.kind) {
        case CrashReport::kAcknowledged:
          acknowledged = std::max(acknowledged, r.value);
          break;
        case CrashReport::kBound:
          bound = std::max(bound, r.value);
          break;
        case CrashReport::kDropped:
          dropped += r.value;
          break;
        case CrashReport::kMoved:
          moved += r.value;
          break;
      }
    };
    while (counted < kill_after) {
      std::optional<CrashReport> report = NextReport(fds[0]);
      if (!report) break;
      take(*report);
      if (report->kind == (in_reclaim ? CrashReport::kBound : CrashReport::kAcknowledged)) {
        ++counted;
        const auto now = std::chrono::steady_clock::now();
        interval = now - last;
        last = now;
      }
    }
    // Within a round (the last one's duration), or within the first millisecond of a drop.
    std::this_thread::sleep_for(
        in_reclaim ? std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::microseconds(1000)) *
                         into
                   : interval * into);
    ASSERT_EQ(0, kill(pid, SIGKILL));
    while (std::optional<CrashReport> report = NextReport(fds[0])) take(*report);
    close(fds[0]);
    int wstatus = 0;
    ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
    ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL)
        << "the child ended otherwise: status " << wstatus;
    ASSERT_EQ(kill_after, counted);

    ManualClock clock;
    Result<std::unique_ptr<JournalStore>> store = JournalStore::Open(
        rocksdb::FileSystem::Default().get(), path, testing::CrashJournalOptions(), &clock, bound);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    // A save made before the kill always serves: the journal only grew or lost segments since.
    EXPECT_EQ("", (*store)->opened().saved_index_unused);
    const bool loaded = (*store)->opened().loaded_saved_index;
    loads += loaded;
    const int64_t a = RoundIn(**store, "a");
    EXPECT_EQ(a, RoundIn(**store, "b"));  // one batch: both or neither
    EXPECT_GE(a, acknowledged);
    EXPECT_LE(a, acknowledged + 1);  // the round in flight may have reached the journal
    Result<std::optional<JournalStore::Version>> stable = (*store)->Get("stable");
    ASSERT_TRUE(stable.ok()) << stable.status().ToString();
    EXPECT_EQ("kept", *stable ? (**stable).value : "(none)");
    for (int64_t i = 0; i < testing::kChurnKeys && i <= acknowledged; ++i) {
      // The last acknowledged round that wrote this key; kept past the bound (kBoundLag).
      const int64_t written = acknowledged - (acknowledged - i) % testing::kChurnKeys;
      if (written >= 1) {
        EXPECT_GE(RoundIn(**store, testing::ChurnKey(written)), written) << i;
      }
    }
    // Each round's ephemeral record: there while kept past the bound, gone once it ended by it
    // (whether its segment was dropped or is still there). A loaded index holds what the store
    // held at the save, so an ended record whose segment is still there may be in it, as in a
    // running store: with its own round, never another.
    for (int64_t r = 1; r <= a; ++r) {
      const bool kept = testing::KeepUntil(r + testing::kEphemeralRounds) > bound;
      const int64_t found = RoundIn(**store, testing::EphemeralKey(r));
      if (kept || !loaded || found != r) EXPECT_EQ(kept ? r : -1, found) << r;
    }
    if (::testing::Test::HasFailure()) return;
  }
  // Drops and moves ran between the kills, and deleted segments; reopens loaded saves.
  EXPECT_GT(dropped, 0);
  EXPECT_GT(moved, 0);
  EXPECT_GT(loads, 0);
}

}  // namespace
}  // namespace idem::journal
