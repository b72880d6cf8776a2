// Records that die, stored as the log they were written to: the journal's files (journal.h)
// found through its in-memory index (journal_index.h). A write appends once; nothing is flushed,
// merged or rewritten afterwards; a segment file is deleted once every operation in it has
// reached its keep-until. (docs/design.md, "Alternatives considered": the window stored as its
// own log.) The engine does not use it yet.
//
// Keep-until: each operation carries the time after which no reader and no restart may need it
// (the owner's bound: a record's death plus whatever grace it keeps). An operation that
// replaces or deletes a version keeps at least that version's keep-until, raised here: were the
// newer segment deleted first, the next open would replay the older version as current.
//
// A segment lives as long as its longest-lived operation: records of different lifetimes
// written into the same segment keep each other's bytes on disk (not in the index, once a
// reopen's bound has passed them).
//
// Lookups: a key's hash finds candidate locations in the index; each is read (one pread of the
// record when it is under kReadAhead bytes) and its key compared.
//
// Open replays every segment, oldest first, into a fresh index: an operation whose keep-until
// is at or before the owner's removal bound is treated as absent, as is a key whose last
// operation is a delete. Each operation on a key already indexed reads that key's candidates
// back (one pread each) to tell which is its own.
//
// The removal bound must never go back: the bound given to Open is at least every bound given
// to DropEndedBy before (the engine persists it, as its clock mark). Otherwise a restart could
// replay a version whose replacement was in a segment already dropped.
//
// Thread safety: Get, Sync, DropEndedBy and the stats from any thread; Apply from one at a time
// (the owner serializes writers, and orders a writer's lookups and its Apply under its own
// locks, as the engine's stripe locks do).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "idem/clock.h"
#include "idem/result.h"
#include "journal.h"
#include "journal_index.h"

namespace rocksdb {
class FileSystem;
}

namespace idem::journal {

class JournalStore {
 public:
  // A read that fetches this much first gets most records whole in one call.
  static constexpr size_t kReadAhead = 512;

  struct Version {
    std::string value;
    int64_t keep_until_ms = 0;
    Journal::Location at;
  };
  struct Write {
    OpType type = OpType::kPut;
    std::string_view key;
    std::string_view value;  // empty for a delete
    int64_t keep_until_ms = 0;
  };

  // Opens (or creates) the store in `dir`, replaying it (above); `removal_bound_ms`: operations
  // whose keep-until is at or before it are absent. Errors as Journal::Open. `fs` and `clock`
  // outlive the store.
  static Result<std::unique_ptr<JournalStore>> Open(rocksdb::FileSystem* fs, const std::string& dir,
                                                    const JournalOptions& options,
                                                    const Clock* clock, int64_t removal_bound_ms);

  // The key's current version, or nullopt when it has none (never written, deleted, or in a
  // segment deleted meanwhile). IOError or Corruption when a candidate cannot be read or does
  // not decode: never taken for absence.
  Result<std::optional<Version>> Get(std::string_view key) const;
  // Appends `writes` as one entry, all or nothing, and points the index at them; a later write
  // of a key in the same batch wins. InvalidArgument for a write the format cannot hold (nothing
  // written); the journal's failure otherwise (journal.h). Busy when the index is full (about
  // 6.8G records): the batch is in the journal then, and the store takes no more writes. One
  // caller at a time.
  Status Apply(std::span<const Write> writes);
  // Makes every batch applied before the call durable.
  Status Sync();
  // Deletes every sealed segment whose operations all reached their keep-until by `until_ms`
  // (the owner's removal bound), after removing their index entries. Returns how many; stops at
  // the first file that cannot be deleted, with its error.
  Result<size_t> DropEndedBy(int64_t until_ms);

  size_t records() const { return index_.size(); }
  size_t index_bytes() const { return index_.MemoryBytes(); }
  const Journal& journal() const { return *journal_; }

 private:
  explicit JournalStore(int64_t removal_bound_ms) : removal_bound_ms_(removal_bound_ms) {}
  // The location and version of `key` (hash `hash`) among the index's candidates, read through
  // `journal`; nullopt if none is the key's.
  Result<std::optional<Version>> Find(const Journal& journal, uint64_t hash,
                                      std::string_view key) const;
  // Replays one operation read by Journal::Open.
  Status Replay(const Journal& journal, const OpView& op, Journal::Location at);

  const int64_t removal_bound_ms_;  // for the replay at open
  JournalIndex index_;
  std::unique_ptr<Journal> journal_;
  std::mutex apply_mu_;  // one Apply at a time, whatever the owner does
  Status failed_;        // guarded by apply_mu_: set once the index is full
  std::mutex drop_mu_;   // one DropEndedBy at a time
};

}  // namespace idem::journal
