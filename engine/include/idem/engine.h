// Engine: the embedded, RocksDB-backed Store.
//
//   idem::EngineOptions options;
//   auto engine = idem::Engine::Open("/var/lib/idem", options);
//   if (!engine.ok()) { ... engine.status() ... }
//   auto r = (*engine)->Insert("payments", "order-42", "PENDING");
//   if (r.ok() && r->outcome == idem::Outcome::kExists) { /* duplicate: replay r->record */ }
//
// Thread-safe: any number of threads may call any method concurrently. Closing is destroying.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "idem/backup.h"
#include "idem/options.h"
#include "idem/result.h"
#include "idem/store.h"

namespace idem {

struct ReclaimReport {
  uint64_t files_examined = 0;
  uint64_t files_compacted = 0;
  uint64_t windows_dropped = 0;   // expiry windows removed whole (EngineOptions::layout)
  uint64_t window_files_max = 0;  // table files of the expiry window that has the most
  // The journal layout: segment files deleted (every record dead), and deleted once their
  // surviving records were appended again.
  uint64_t journal_segments_dropped = 0;
  uint64_t journal_segments_moved = 0;
  // The journal layout: the pass saved the journal's index
  // (EngineOptions::journal_index_save_interval_ms).
  bool journal_index_saved = false;
};

class Engine : public Store {
 public:
  // Opens (creating if allowed) the database in `dir`.
  static Result<std::unique_ptr<Engine>> Open(const std::string& dir, EngineOptions options);

  // Runs a full compaction: every expired record is physically removed (for tests and admins).
  // Under the journal layout: the closed segments at least half dead are written again without
  // their dead records, and the ended ones deleted.
  virtual Status CompactAll() = 0;
  // Compacts the table files whose expired fraction reached options.reclaim_min_expired_fraction
  // (what the background reclaimer does every reclaim_interval_ms).
  virtual Result<ReclaimReport> ReclaimExpired() = 0;
  // Writes the memtables to table files (makes on-disk statistics current) and returns once
  // they are written; TimedOut if that takes more than 60 s (a flush still runs after it).
  virtual Status Flush() = 0;
  // Blocks until RocksDB has no flush or compaction pending or running and the key filters of
  // the expiry windows opened with the database are filled, or `timeout_ms` passes (TimedOut).
  // Background work runs in real time; simulations on a ManualClock call this so that disk figures
  // do not depend on how fast the machine happened to be.
  virtual Status WaitForBackgroundWork(int64_t timeout_ms) = 0;
  // Takes an online, consistent backup into `dir` while the engine keeps serving (idem/backup.h:
  // what it holds, and why a store opened on it never repeats a fence). `dir` must not exist;
  // its parent must be an existing directory. On success `dir` is complete, manifest included,
  // durably (a crash after success cannot lose it), and the manifest is returned. Errors:
  // InvalidArgument if the parent is missing or `dir` (or `dir`.incomplete or
  // `dir`.incomplete.journal, what a crash in the middle of a backup leaves: remove them)
  // exists; Busy while another backup of this engine is being taken (one at a time); IOError if
  // writes are suspended (under the journal layout: refused after a journal failure) or writing
  // the backup fails (a full disk), in which case none of those is left behind and the engine
  // goes on serving. Blocks the calling thread for the checkpoint's flush and the links or
  // copies (under the journal layout, a copy of the journal's bytes).
  virtual Result<BackupManifest> Backup(const std::string& dir) = 0;
  // The options in force (after defaults were filled in).
  virtual const EngineOptions& options() const = 0;
};

}  // namespace idem
