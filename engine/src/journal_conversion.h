// Converting a database of the leveled or the expiry-window layout to the journal layout, in
// place, when it is first opened with the journal layout.
//
// The records move from RocksDB (the default family and every window family) into a journal
// built beside the database's (`journal.converting`), which one rename makes the database's
// journal; RocksDB's records are deleted after that (the window families dropped). A crash
// leaves one of two states, each finished by the next open: before the rename, the old database
// whole and a staging directory, which is deleted (by an open with any layout:
// RemoveAbandonedConversion) and the conversion starts over; after it, the new journal whole with
// a conversion mark in it (kConversionMark) and the records perhaps still in RocksDB, which are
// deleted then, and the mark last. So no record is ever in neither place, and a database is read
// from one only.
//
// What moves: every record and remembered-key marker not past its keep-until at the removal
// bound, with the value as RocksDB stores it (the journal stores the same values). The ones
// already dead are left behind, as the next reclaim would drop them. A value that does not
// decode stops the conversion with Corruption naming its key, the database as it was.
//
// A key of a window database may have versions in several families: the one a read finds (the
// first in the order windows not ended yet, newest first, then the default family) and older,
// dead ones in windows that have ended and are not dropped yet. The families are appended in the
// reverse of that order, so that the journal's last operation on each key, the one its index
// keeps, is the version a read found.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <rocksdb/db.h>
#include <rocksdb/file_system.h>

#include "idem/clock.h"
#include "idem/options.h"
#include "idem/result.h"
#include "journal.h"

namespace idem {

class ExpiryWindows;

// The file in a journal directory that says RocksDB may still hold the records a conversion
// moved into it.
inline constexpr char kConversionMark[] = "CONVERTED_FROM_ROCKSDB";

struct JournalConversion {
  uint64_t records = 0;       // moved into the journal
  uint64_t dead_records = 0;  // past their keep-until: left behind
  uint64_t bytes = 0;         // the moved records' keys and values
  int64_t ms = 0;
  // Only the deletes of a conversion a crash interrupted after its rename were left to do.
  bool finished_earlier = false;
  // The expiry-window layout's column families emptied and dropped.
  uint64_t window_families = 0;
};

// Converts the database in `db_dir` (RocksDB open as `db`, its window families adopted by
// `windows`) if its default family holds records or it has window families, and it has no
// journal; or finishes a conversion a crash interrupted (above); nullopt when there was nothing
// to do. `now_ms` is the engine's time, which tells the windows a read still probes;
// `removal_bound_ms` as JournalStore::Open's. InvalidArgument if the database holds records both
// in RocksDB and in a journal that no conversion made; Corruption for a value that does not
// decode; the error of a failed read, write, sync or drop otherwise (the staging directory
// deleted if the failure came before the rename; a reopen starts over or finishes, as above).
// `fs` is the journal's file system, `clock` the engine's.
Result<std::optional<JournalConversion>> ConvertToJournal(
    rocksdb::DB* db, ExpiryWindows* windows, rocksdb::FileSystem* fs, const std::string& db_dir,
    const EngineOptions& options, const journal::JournalOptions& journal, const Clock* clock,
    int64_t now_ms, int64_t removal_bound_ms);

// Deletes what a conversion a crash interrupted before its rename left (a staging directory),
// for a database opened with another layout than the journal's: its records are all still in
// RocksDB. Ok if there is none.
Status RemoveAbandonedConversion(rocksdb::FileSystem* fs, const std::string& db_dir);

}  // namespace idem
