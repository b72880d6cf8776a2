// The process journal_crash_test kills while it writes, syncs, rolls, drops and moves
// (journal_crash.h has the plan). A fresh process rather than a fork of the test, so that no
// thread of the test's is half copied.
//
//   journal_crash_child DIR REPORT_FD REMOVAL_BOUND
//
// Opens the store in DIR under REMOVAL_BOUND (ms), continues the rounds after the one "a" holds,
// and reports to REPORT_FD (CrashReport, native order) until killed. Exits 1..5 on an error, so
// the test can tell a failure from a kill.
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <rocksdb/file_system.h>

#include "engine/journal_crash.h"
#include "idem/clock.h"

namespace {

using namespace idem;
using namespace idem::testing;
using journal::JournalStore;
using journal::OpType;

void Report(int fd, CrashReport report) {
  if (write(fd, &report, sizeof report) != sizeof report) _exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return 1;
  const int fd = std::atoi(argv[2]);
  const int64_t bound = std::atoll(argv[3]);
  ManualClock clock;
  auto opened = JournalStore::Open(rocksdb::FileSystem::Default().get(), argv[1],
                                   CrashJournalOptions(), &clock, bound);
  if (!opened.ok()) return 2;
  std::unique_ptr<JournalStore> store = std::move(*opened);
  auto stable = store->Get("stable");
  if (!stable.ok()) return 2;
  if (!*stable) {
    const JournalStore::Write put{OpType::kPut, "stable", "kept", kKeepForever};
    if (!store->Apply({&put, 1}).ok() || !store->Sync().ok()) return 4;
  }
  auto a = store->Get("a");
  if (!a.ok()) return 2;
  int64_t round = *a ? std::atoll((*a)->value.c_str()) : 0;
  for (;;) {
    ++round;
    const std::string value = std::to_string(round);
    const std::string churn = ChurnKey(round);
    const std::string ephemeral = EphemeralKey(round);
    const std::vector<JournalStore::Write> writes{
        {OpType::kPut, "a", value, KeepUntil(round + kKeepRounds)},
        {OpType::kPut, "b", value, KeepUntil(round + kKeepRounds)},
        {OpType::kPut, churn, value, KeepUntil(round + kKeepRounds)},
        {OpType::kPut, ephemeral, value, KeepUntil(round + kEphemeralRounds)}};
    if (!store->Apply(writes).ok()) _exit(4);
    if (!store->Sync().ok()) _exit(4);
    Report(fd, {CrashReport::kAcknowledged, round});
    if (round % kSaveEvery == 0 && !store->SaveIndex().ok()) _exit(6);
    if (round % kDropEvery == 0 && round > kBoundLag) {
      const int64_t until = KeepUntil(round - kBoundLag);
      Report(fd, {CrashReport::kBound, until});
      Result<size_t> dropped = store->DropEndedBy(until);
      if (!dropped.ok()) _exit(5);
      Report(fd, {CrashReport::kDropped, static_cast<int64_t>(*dropped)});
      if (round % kMoveEvery == 0) {
        Result<JournalStore::MoveReport> moved = store->MoveSurvivors(until, kCrashMovePolicy);
        if (!moved.ok()) _exit(5);
        Report(fd, {CrashReport::kMoved, static_cast<int64_t>(moved->segments)});
      }
    }
  }
}
