// Salvaging a damaged data directory: what `idemctl --data DIR repair` runs.
//
// Never automatic. Engine::Open refuses a directory whose WAL is damaged before its end or cut
// short, or whose CURRENT file is gone, and changes nothing in it; this is the deliberate way on,
// for an operator who accepts losing what cannot be read:
//
//   1. Copies the whole directory aside (RepairOptions::backup_dir), so the evidence survives.
//   2. Salvages in place. With CURRENT present: opens the database, every column family (the
//      expiry windows too), with RocksDB's kSkipAnyCorruptedRecords, which replays every
//      readable WAL record — also those after the damage — and flushes them into table files.
//      Without CURRENT (or if that open fails): rocksdb::RepairDB, which rebuilds a MANIFEST from
//      the table files and the readable WAL records, and moves what it cannot use to DIR/lost/.
//      It replays a WAL's operations on an expiry window only if that window has a table file
//      (the WAL names a family by its id, which only the table files and the MANIFEST tell): if
//      the WALs hold such operations, the loss is reported as uncounted.
//   3. Raises the fence reservation far (2^40) above the highest fence it finds: a lost record
//      may have carried a higher fence, which a client may hold, and no fence may repeat.
//   4. Reports what it found and lost: per WAL, where it is damaged and how many operations the
//      damage destroyed (WAL records carry sequence numbers, so the gap is exact), or that the
//      loss cannot be counted (a WAL cut short: its missing end left no trace).
//   5. For a database of the journal layout, salvages the journal's segments if any is damaged:
//      every intact entry, also those after the damage, goes into a new journal that replaces
//      the old one in one step (engine/src/journal_salvage.h); a segment whose header cannot be
//      read is lost whole. Entries carry sequence numbers too, so what the damage destroyed is
//      counted the same way.
//
// Must not run while a server has the database open (the copy would not be consistent):
// Busy if the directory's LOCK is held. A column family that is neither `default` nor an expiry
// window is Corruption, before anything is copied or changed: this build cannot tell what it
// holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "idem/options.h"
#include "idem/result.h"

namespace idem {

struct RepairOptions {
  // Where the directory is copied first; it must not exist. Empty: "<dir>.before-repair-<UTC
  // time>", e.g. /var/lib/idem.before-repair-20261201T184500Z.
  std::string backup_dir;
  // The options the database is run with (the table format). The repair runs no compaction and
  // no compaction filter: expired records stay until the engine's own compactions.
  EngineOptions engine;
};

struct RepairReport {
  std::string backup_dir;
  std::vector<std::string> lines;     // for the operator: what was found, salvaged and lost
  uint64_t records = 0;               // records the repaired database holds
  uint64_t lost_operations = 0;       // operations known destroyed (sequence-number gaps)
  uint64_t lost_journal_entries = 0;  // journal entries (batches) known destroyed, likewise
  bool loss_uncounted = false;        // some loss cannot be counted (a WAL's missing end)
};

Result<RepairReport> RepairDatabase(const std::string& dir, const RepairOptions& options);

}  // namespace idem
