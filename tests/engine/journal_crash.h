// What journal_crash_test and its child process (journal_crash_child.cc) agree on: the store's
// options, the writes of each round and what the child reports.
//
// Round r writes "a" and "b" = r together (one batch), and "churn-<r % kChurnKeys>" = r, each
// kept until r + kKeepRounds; "stable" is written once and kept for ever. After each round's
// Sync the child reports r (acknowledged); every kDropEvery rounds it reports the removal bound
// r - kBoundLag BEFORE dropping under it (and every kMoveEvery rounds, moving), so the test knows
// the highest bound a drop or move may have used when the kill came. Moves are rarer than drops,
// so that most segments are dropped whole rather than moved out of. Rounds stand for
// milliseconds of keep-until.
#pragma once

#include <cstdint>
#include <string>

#include "journal.h"
#include "journal_store.h"

namespace idem::testing {

inline constexpr int kChurnKeys = 20;
inline constexpr int64_t kKeepRounds = 60;
inline constexpr int64_t kBoundLag = 40;
inline constexpr int kDropEvery = 10;
inline constexpr int kMoveEvery = 50;
inline constexpr int64_t kKeepForever = INT64_MAX;

inline journal::JournalOptions CrashJournalOptions() {
  // Small segments, so that a run rolls, drops and moves many times; few open files, so that
  // reads and syncs reopen them.
  return journal::JournalOptions{.segment_bytes = 4096,
                                 .zeros_ahead_bytes = 1024,
                                 .prepare_in_background = true,
                                 .max_open_sealed_files = 2};
}

inline constexpr journal::JournalStore::MovePolicy kCrashMovePolicy{.max_needed_fraction = 0.5,
                                                                    .min_stay_ms = 0};

inline std::string ChurnKey(int64_t round) { return "churn-" + std::to_string(round % kChurnKeys); }

// A report: an acknowledged round, or a removal bound about to be used.
struct CrashReport {
  int64_t round = 0;  // > 0: acknowledged
  int64_t bound = 0;  // round == 0: the bound
};

}  // namespace idem::testing
