// The engine's side of EngineOptions::Layout::kJournal: where the journal lives in a database
// directory, what it is opened with, and which databases may be opened with which layout.
//
// A database holds records either in its journal (the journal layout) or in RocksDB (the
// leveled and window layouts), never in both: a write cannot be atomic across the two. So a
// database with journal segments opens only with the journal layout, and one whose RocksDB
// holds records only with the other two. RocksDB keeps the engine's own keys whatever the
// layout (fences, the clock mark).
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <rocksdb/db.h>

#include "idem/options.h"
#include "idem/result.h"
#include "journal.h"

namespace idem {

// `db_dir`/journal.
std::string JournalDir(const std::string& db_dir);
// What a record's journal operation takes besides its variable fields, generously: the
// segment, entry and operation headers and the record's fixed fields.
inline constexpr uint64_t kJournalRecordOverheadBytes = 4096;
// InvalidArgument naming the option for a journal option out of its range, or for segments
// too small to hold the largest record the limits allow.
Status ValidateJournalOptions(const EngineOptions& options);
// `os_files`: the journal's file system is the operating system's own, whose files reads may
// map (JournalOptions::mapped_reads); not one a caller gave (a test's, which sees every read).
journal::JournalOptions JournalOptionsFor(const EngineOptions& options, bool os_files);
// The journal keeps a record until its death (remembered_key.h's DeathOf; the grace is in the
// removal bound); one that never dies, for ever.
inline int64_t JournalKeepUntil(int64_t death_ms) {
  return death_ms == 0 ? std::numeric_limits<int64_t>::max() : death_ms;
}
// Whether `db`'s default column family holds a record (not only the engine's own keys).
Result<bool> HoldsRecords(rocksdb::DB* db);

}  // namespace idem
