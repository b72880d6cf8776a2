// What journal_crash_test and its child process (journal_crash_child.cc) agree on: the store's
// options, the writes of each round and what the child reports.
//
// Round r writes, as one batch: "a" and "b" = r, "churn-<r % kChurnKeys>" = r, each kept
// until round r + kKeepRounds, and "e-<r>" = r kept until round r + kEphemeralRounds only
// (records that end while the segments around them stay); "stable" is written once and kept for
// ever. After each round's Sync the child reports r (acknowledged). Every kDropEvery rounds it
// reports the removal bound KeepUntil(r - kBoundLag) BEFORE dropping under it, and every
// kMoveEvery rounds moving too, so that the test knows the highest bound a drop or move may have
// used when the kill came; then it reports what the drop and the move removed. Moves are rarer
// than the ~100 rounds a segment takes to end, so that most segments are dropped whole.
//
// Every kSaveEvery rounds it saves the store's index (JournalStore::SaveIndex), so that most
// reopens load a save and replay only what came after it; the others replay everything.
//
// A round is kRoundMs of keep-until: the store estimates what a segment still needs per minute.
#pragma once

#include <cstdint>
#include <string>

#include "journal.h"
#include "journal_store.h"

namespace idem::testing {

inline constexpr int64_t kRoundMs = 60'000;
inline constexpr int kChurnKeys = 20;
inline constexpr int64_t kKeepRounds = 60;
inline constexpr int64_t kEphemeralRounds = 10;
inline constexpr int64_t kBoundLag = 40;
inline constexpr int kDropEvery = 10;
inline constexpr int kMoveEvery = 150;
inline constexpr int kSaveEvery = 25;
inline constexpr int64_t kKeepForever = INT64_MAX;

inline int64_t KeepUntil(int64_t round) { return round * kRoundMs; }

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
inline std::string EphemeralKey(int64_t round) { return "e-" + std::to_string(round); }

struct CrashReport {
  enum Kind : int64_t {
    kAcknowledged,  // value: the round, synced
    kBound,         // value: the removal bound about to be used, in ms
    kDropped,       // value: segments the drop deleted
    kMoved,         // value: segments the move deleted
  };
  Kind kind = kAcknowledged;
  int64_t value = 0;
};

}  // namespace idem::testing
