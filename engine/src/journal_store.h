// Records that die, stored as the log they were written to: the journal's files (journal.h)
// found through its in-memory index (journal_index.h). A write appends once; nothing is flushed,
// merged or rewritten afterwards; a segment file is deleted once every operation in it has
// reached its keep-until. (docs/design.md, "Alternatives considered": the window stored as its
// own log.) The engine's journal layout keeps its records here (journal_layout.h).
//
// Keep-until: each operation carries the time after which no reader and no restart may need it
// (the owner's bound: a record's death plus whatever grace it keeps). An operation that
// replaces or deletes a version keeps at least that version's keep-until, raised here: were the
// newer segment deleted first, the next open would replay the older version as current.
//
// A segment lives as long as its longest-lived operation: records of different lifetimes
// written into the same segment keep each other's bytes on disk (not in the index, once a
// reopen's bound has passed them). MoveSurvivors bounds that: a segment whose operations are
// mostly no longer needed, but that would stay on disk long for the few that are (a record that
// never expires, a lease completed into a long retention), has those few appended again and is
// deleted. It weighs each segment by an estimate of its needed bytes kept as writes replace
// versions; what it moves, it decides from the index and the segment's own bytes.
//
// Lookups: a key's hash finds candidate locations in the index; each is read (one read of the
// record when it is under kReadAhead bytes: a copy out of the mapped segment with
// JournalOptions::mapped_reads, a pread otherwise) and its key compared.
//
// Open loads the index saved last (SaveIndex; journal_saved_index.h), if there is one and the
// journal could have followed it, and replays only what was written after it (nothing after
// a clean close). Otherwise it replays every segment, oldest first, into a fresh index: an
// operation whose keep-until is at or before the owner's removal bound is treated as absent, as is
// a key whose last operation is a delete. Each operation on a key already indexed reads that key's
// candidates back to tell which is its own: from memory when they are in the segment being scanned
// or the one before it (Journal::Open), as an update's earlier version nearly always is; one pread
// each otherwise.
//
// The removal bound must never go back: the bound given to Open is at least every bound given
// to DropEndedBy before (the engine persists it, as its clock mark). Otherwise a restart could
// replay a version whose replacement was in a segment already dropped.
//
// Thread safety: Get, Sync, DropEndedBy, MoveSurvivors and the stats from any thread; Apply
// from one at a time (the owner serializes writers, and orders a writer's lookups and its Apply
// under its own locks, as the engine's stripe locks do).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "idem/clock.h"
#include "idem/result.h"
#include "journal.h"
#include "journal_index.h"
#include "journal_saved_index.h"

namespace rocksdb {
class FileSystem;
}

namespace idem::journal {

class JournalStore {
 public:
  // A read that fetches this much first gets most records whole in one call.
  static constexpr size_t kReadAhead = 512;
  static constexpr int kMaxLookupAttempts = 16;

  struct Version {
    std::string value;
    int64_t keep_until_ms = 0;
    Journal::Location at;
    uint64_t op_bytes = 0;  // what the operation takes in its segment
  };
  struct Write {
    OpType type = OpType::kPut;
    std::string_view key;
    std::string_view value;  // empty for a delete
    int64_t keep_until_ms = 0;
    // The key's version as the caller found it (Get), with the key's writers held off since by
    // the caller's own locks; null: Apply looks the key up. While the index still points at
    // it, Apply takes it as the current version instead of reading the record again; if a move
    // or drop took it since, Apply looks the key up. (The index knows a location by its segment
    // id and offset: were the id to come round again in between, after some 65,000 new
    // segments, another key with the same 33-bit hash prefix at the same offset would pass.)
    const Version* found = nullptr;
  };

  // Opens (or creates) the store in `dir`, loading its saved index or replaying it (above);
  // `removal_bound_ms`: replayed operations whose keep-until is at or before it are absent (a
  // loaded index may still hold such records, as a running store does until its next drop).
  // A saved index that cannot be used is deleted: its error if that fails. Errors as
  // Journal::Open. `fs` and `clock` outlive the store.
  static Result<std::unique_ptr<JournalStore>> Open(rocksdb::FileSystem* fs, const std::string& dir,
                                                    const JournalOptions& options,
                                                    const Clock* clock, int64_t removal_bound_ms);

  // The key's current version, or nullopt when it has none (never written, deleted, or in a
  // segment dropped meanwhile). IOError or Corruption when a candidate cannot be read or does
  // not decode: never taken for absence. A lookup that finds a candidate's segment gone asks
  // the index again; Busy if that happened kMaxLookupAttempts + 1 times in a row.
  Result<std::optional<Version>> Get(std::string_view key) const;
  // Appends `writes` as one entry, all or nothing, and points the index at them; a later write
  // of a key in the same batch wins. InvalidArgument for a write the format cannot hold (nothing
  // written); the journal's failure otherwise (journal.h). Busy when the index is full (about
  // 6.8G records): the batch is in the journal then, and the store takes no more writes. One
  // caller at a time.
  Status Apply(std::span<const Write> writes);
  // Makes every batch applied before the call durable.
  Status Sync();
  // Saves the index as it stands, for a later Open to load instead of replaying the journal
  // (it then replays what was written after the save): at the owner's clean close, and every
  // so often while writes go on. Writers wait while the index's table is copied (a memcpy per
  // shard into memory allocated before, held until written: 10-20 bytes per record), not while
  // the copy is written; drops and moves wait until it is. The journal is synced before the
  // copy is written. The journal's failure if it failed (nothing saved); IOError naming the
  // file if it cannot be written.
  Status SaveIndex();
  // How Open built the index.
  struct OpenReport {
    bool loaded_saved_index = false;
    // Why a saved index that was there was not used (it did not read back, or the journal
    // could not have followed it); empty if there was none or it was used.
    std::string saved_index_unused;
  };
  const OpenReport& opened() const { return opened_; }

  // What an open of `dir` would make of its saved index, changing nothing (idemctl verify). The
  // index a load gives (the save, less the segments gone since, plus a replay of what came
  // after it) must agree with a replay of the whole journal: it holds every record the replay
  // holds past `removal_bound_ms`, at the same place, and no entry but one at its key's last
  // operation (a record dead since may still be there, as in the store that saved it).
  // Corruption naming the index file, how many entries differ and the first; Journal::Check's
  // errors for the journal itself.
  struct SavedIndexCheck {
    bool saved = false;    // the directory holds a saved index
    std::string unusable;  // why an open would replay the journal instead; empty if it loads it
    uint64_t records = 0;  // the entries a load gives
  };
  static Result<SavedIndexCheck> CheckSavedIndex(rocksdb::FileSystem* fs, const std::string& dir,
                                                 int64_t removal_bound_ms);
  // Deletes every sealed segment whose operations all reached their keep-until by `until_ms`
  // (the owner's removal bound), after removing their index entries; the active segment too,
  // sealed first, so that a store no longer written to keeps no dead segment. Returns how many;
  // stops at the first file that cannot be deleted, with its error (Busy while a copy of the
  // journal runs: Journal::DeleteSegment); a later call deletes it.
  Result<size_t> DropEndedBy(int64_t until_ms);

  // When MoveSurvivors moves a segment's survivors: when both hold.
  struct MovePolicy {
    // The bytes of its operations still needed are at most this fraction of its entries' bytes
    // (as estimated above): about that fraction of it is written again, f / (1 - f) bytes per
    // byte of disk won back (1/3 at 0.25).
    double max_needed_fraction = 0.25;
    // It would otherwise stay longer than this past the removal bound (its last keep-until).
    int64_t min_stay_ms = 60 * 60 * 1000;
  };
  struct MoveReport {
    size_t segments = 0;       // moved out of and deleted
    uint64_t ops_moved = 0;    // appended again
    uint64_t bytes_moved = 0;  // the entries that took them
    uint64_t bytes_freed = 0;  // the deleted segments' files, up to their entries' end
    // Picked segments kept because they cannot be moved: one that no longer scans whole
    // (Corruption), or holds a delete and a version after it too large for one entry together
    // (InvalidArgument). The first one's error.
    size_t skipped = 0;
    Status first_skipped;
    // Deletes of the oldest segment left out: every earlier version of their keys was in it.
    uint64_t deletes_dropped = 0;
  };
  // For each sealed segment the policy picks, oldest first: appends again, with their
  // keep-until, the operations in it still needed, syncs them, then deletes the segment. Needed
  // is a put the index still points at, and a delete whose key has no version since, or one
  // that ends before the delete's keep-until: then that version is appended again right after
  // the delete, in the same entry, so that an older version in an earlier segment cannot come
  // back and the newer one is not hidden. Operations whose keep-until
  // is at or before `removal_bound_ms` are not needed (the bound's rule as for DropEndedBy).
  // Writers wait for it only while it appends (in entries of up to kMoveEntryBytes).
  // A picked segment that cannot be moved is kept, counted in the report and not tried again
  // for kMoveRetryCalls calls (calls, not time: the owner's pace); the journal's
  // failure if an append or the sync fails, the delete's if the file cannot be deleted (Busy
  // while a copy of the journal runs; its survivors are then in the journal twice, which a
  // reopen resolves: the later copy wins; the next call tries the delete again, first).
  static constexpr size_t kMoveEntryBytes = size_t{1} << 20;
  static constexpr uint64_t kMoveRetryCalls = 64;
  Result<MoveReport> MoveSurvivors(int64_t removal_bound_ms, const MovePolicy& policy);

  // Walks the journal in the order it was written, for admin queries over every record (there
  // is no key order to walk: the index is a hash table). Calls `visit` for each operation from
  // `from` on, with its key and value as written and whether it is still its key's current
  // version (a put the index points at), until `visit` returns false: that operation is then the
  // next walk's first, and its position is returned. Nullopt once the walk reached where the
  // journal ended at the call. A current version is visited once, where it is, if it stays
  // there during the walk; a version written, or moved (MoveSurvivors), after the walk passed
  // the key's earlier place is visited again where it went. A segment deleted meanwhile is
  // skipped (what it held is dead, or moved ahead). Corruption naming the segment and offset
  // for an operation that does not decode; IOError for a read that fails. Any thread.
  using WalkVisitor = std::function<bool(const OpView& plain, bool current)>;
  Result<std::optional<WalkPosition>> Walk(const WalkPosition& from,
                                           const WalkVisitor& visit) const;

  // Why the store takes no more writes (its journal failed, or the index is full); OK while it
  // does. Cheap: waits for no write.
  Status failure() const;
  size_t records() const { return index_.size(); }
  size_t index_bytes() const { return index_.MemoryBytes(); }
  const Journal& journal() const { return *journal_; }

 private:
  JournalStore(const JournalOptions& options, int64_t removal_bound_ms)
      : options_(options), removal_bound_ms_(removal_bound_ms) {}
  // The location and version of `key` (hash `hash`) among the index's candidates, read through
  // `journal`; nullopt if none is the key's.
  Result<std::optional<Version>> Find(const Journal& journal, uint64_t hash,
                                      std::string_view key) const;
  // Reads `dir`'s saved index into the index and the estimates, and sets `resume` to take the
  // journal on from it (opened_ says whether there was one to load, or why not).
  void LoadSaved(rocksdb::FileSystem* fs, const std::string& dir, Journal::Resume* resume);
  // Replays one operation read by Journal::Open (as stored).
  Status Replay(const Journal& journal, const OpView& stored, Journal::Location at);
  // Replay as Journal::Open calls it; the first error is kept in `*replayed`, and nothing is
  // replayed after it.
  Journal::Replay ReplayInto(Status* replayed);
  // MoveSurvivors for one segment (drop_mu_ held); `oldest`: no segment numbered below it is
  // left.
  Status MoveSegment(const Journal::SegmentInfo& segment, int64_t removal_bound_ms, bool oldest,
                     MoveReport* report);

  // The needed-bytes estimate: per segment id, bytes by keep-until, rounded down to
  // kNeedBucketMs (what ends within that is as good as ended). A delete counts until its
  // keep-until even once a later put made it moot. The deletes' share is also kept apart (and
  // saved with the index), for the oldest segment, whose deletes are not needed (MoveSurvivors);
  // a save of the first format has none, so its segments' deletes count in full.
  static constexpr int64_t kNeedBucketMs = 60'000;
  void AddNeed(uint32_t segment, int64_t keep_until_ms, uint64_t bytes, OpType type);
  void RemoveNeed(uint32_t segment, int64_t keep_until_ms, uint64_t bytes);
  void ForgetNeeds(uint32_t segment);
  uint64_t NeededAfter(uint32_t segment, int64_t removal_bound_ms) const;
  uint64_t DeletesNeededAfter(uint32_t segment, int64_t removal_bound_ms) const;

  const JournalOptions options_;
  const int64_t removal_bound_ms_;  // for the replay at open
  rocksdb::FileSystem* fs_ = nullptr;
  std::string dir_;
  std::string replay_scratch_;  // a replayed operation's key and value, decompressed
  JournalIndex index_;
  std::unique_ptr<Journal> journal_;
  std::mutex apply_mu_;                  // one Apply at a time, whatever the owner does
  Status failed_;                        // guarded by apply_mu_: set once the index is full
  std::atomic<bool> index_full_{false};  // failed_ is set (read without the lock)
  std::mutex drop_mu_;                   // one DropEndedBy or MoveSurvivors at a time
  struct SegmentName {
    uint32_t id = 0;
    uint64_t number = 0;
  };
  std::vector<SegmentName> undeleted_;  // guarded by drop_mu_: moved out of, delete failed
  // Guarded by drop_mu_: segments MoveSurvivors skipped, not read again before its call number
  // `retry_at` (kMoveRetryCalls calls later: what stopped it may have changed).
  struct Unmovable {
    uint32_t id = 0;
    uint64_t number = 0;
    uint64_t retry_at = 0;
  };
  std::vector<Unmovable> unmovable_;
  uint64_t move_calls_ = 0;
  mutable std::mutex need_mu_;
  NeedsBySegment needs_;         // guarded by need_mu_
  NeedsBySegment delete_needs_;  // guarded by need_mu_: the deletes' part of needs_
  OpenReport opened_;
};

}  // namespace idem::journal
