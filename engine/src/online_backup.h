// The two halves of idem/backup.h inside the engine: taking a backup of a serving database, and
// raising the fence reservation of a database opened on one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <rocksdb/db.h>

#include "idem/backup.h"
#include "idem/result.h"

namespace idem {

namespace journal {
class JournalStore;
}

// Checkpoints `db` into `dir`.incomplete, writes and syncs the manifest there, then renames it
// to `dir` (and syncs the parent): a directory named `dir` is always a complete backup.
// `journal`, under the journal layout (else null): its copy is taken first, into
// `dir`.incomplete.journal, and becomes `dir`/journal; the checkpoint comes after the copy's cut,
// so the clock mark it holds bounds every drop of a segment missing from the copy, and its fence
// reservation every fence in it. `fence_high_water` is called once the checkpoint is complete;
// it must return a number above every fence handed out so far. `now_ms` stamps the manifest.
Result<BackupManifest> WriteBackup(rocksdb::DB* db, const journal::JournalStore* journal,
                                   const std::string& dir,
                                   const std::function<uint64_t()>& fence_high_water,
                                   int64_t now_ms);

// If `dir` carries a backup manifest whose fence floor is above *reserved: durably stores the
// floor as the reservation and sets *reserved to it, and says so in *note. Ok and nothing
// changed without a manifest; Corruption if the manifest does not decode (opening such a
// directory could repeat fences).
Status RaiseFencesToBackupFloor(rocksdb::DB* db, const std::string& dir, uint64_t* reserved,
                                std::string* note);

}  // namespace idem
