// Salvaging a damaged journal: what `idemctl repair` (idem/repair.h) does for the segments of a
// database of the journal layout.
//
// An open refuses a journal damaged anywhere but in the write a crash tore at its end, and
// changes nothing (journal.h). A salvage keeps every operation it can read: each segment is read
// whole, and every intact entry, also those after a damaged spot (found again at the next
// aligned offset where an entry checks), is appended whole and in the journal's order to a new
// journal built beside the old one, `DIR/journal.repairing`. The two directories are then
// exchanged in one step (renameat2 with RENAME_EXCHANGE) and the old journal is deleted; the
// repair has copied the whole database aside before. A crash before the exchange leaves the
// journal as it was; after it, the salvaged journal in place and the old one under
// `journal.repairing`. An open ignores that directory; the next salvage deletes it first.
//
// What was lost is counted from the entries' sequence numbers. Entries are numbered one apart,
// and each segment is written after the one numbered just below it, so the numbers missing
// between two intact entries are entries lost, provided no segment number between theirs is
// missing (a segment gone from the numbering was deleted whole, once all it held had died).
// Damage that no later intact entry bounds is a loss that cannot be counted, except at the end
// of the last segment: a write a crash tore there was never acknowledged under sync durability
// (an open cuts it too). An intact entry numbered at or below one before it is damage and left
// out, as an open refuses it: taken in, it would replace the later versions of its keys.
//
// A journal without damage other than that torn end is left as it was.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "idem/options.h"
#include "idem/result.h"

namespace rocksdb {
class FileSystem;
}  // namespace rocksdb

namespace idem {

struct JournalSalvage {
  std::vector<std::string> lines;  // for the operator: what was found, kept and lost
  uint64_t segments = 0;           // segment files found
  uint64_t entries = 0;            // intact entries found, and kept
  uint64_t records = 0;            // keys the (salvaged) journal holds a version of
  uint64_t max_fence = 0;          // the highest fence of a record found
  uint64_t lost_entries = 0;       // entries known destroyed (sequence-number gaps)
  bool loss_uncounted = false;     // some loss cannot be counted (above)
  bool rewritten = false;          // false: no damage, the journal left as it was
};

// Salvages the journal of the database in `db_dir`, whose engine runs with `options` (the
// journal's segment size and compression; the clock); nullopt if it has no journal segments.
// InvalidArgument if an intact entry does not fit the segments `options` give; otherwise the
// error of the first read, write, sync or rename that fails: before the exchange, the journal
// as it was and the new one deleted; if the exchange itself fails, the new one is left under
// `journal.repairing` and the message says how to put it in place by hand.
Result<std::optional<JournalSalvage>> SalvageJournal(const std::string& db_dir,
                                                     const EngineOptions& options);
// The same on `fs` (the operating system's in production; a test's, to make it fail) for the
// segments' reads and the new journal's writes; the directories are exchanged and deleted
// through the operating system either way.
Result<std::optional<JournalSalvage>> SalvageJournal(const std::string& db_dir,
                                                     const EngineOptions& options,
                                                     rocksdb::FileSystem* fs);

}  // namespace idem
