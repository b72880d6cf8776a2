// Online backups (Engine::Backup) and the manifest a backup carries.
//
// A backup is a RocksDB checkpoint of the serving database — table files hard-linked where the
// backup directory is on the same file system as the database, copied otherwise; the live WAL
// copied — plus a manifest file, IDEMSTORE-BACKUP; under the journal layout, plus a copy of the
// journal's segments (journal/), taken before the checkpoint. It is consistent: it holds exactly
// the writes committed before one instant during the backup, among them every write acknowledged
// before the backup began (in either durability mode: the checkpoint flushes the memtable first,
// and copies the WAL written since; the journal's copy reads what was written, synced or not).
// Writes go on while it is taken; they wait only while the
// memtable is switched for that flush, as at any flush.
//
// Restoring is opening: Engine::Open (idemstored --data DIR) on the backup directory, or on a
// whole copy of it, serves it as it is.
//
// Fences never go backwards. After the backup, the source store goes on handing out fences, and
// a holder may still present one to the restored store; if the restored store handed out the
// same number again, two holders would hold one fence and the fencing check could no longer
// tell the stale one. So the manifest records the fence high-water mark (every fence handed out
// before the backup completed is below it) and a floor `kBackupFenceMargin` above it; opening a
// directory that carries a manifest raises the fence reservation to at least the floor (durably,
// before any fence is handed out). The guarantee holds while the source hands out fewer than
// kBackupFenceMargin fences after the backup: each fence counts, and each restart of the source
// counts kFenceChunk (2^16, the reservation it skips). Its limits: restoring the same backup
// twice and serving both copies repeats fences between the two (restore a backup once, or take
// a new backup from the restored store); a manifest deleted from the directory takes the
// guarantee with it; a repair of the source after the backup jumps its fences by as much as the
// margin.
//
// The manifest, a text file of "name value" lines (names and values have no spaces), written
// before the backup directory gets its final name (a directory with that name is complete):
//
//   idemstore-backup 1            format; a reader refuses other numbers (Corruption)
//   created_utc 20261202T024500Z  when the checkpoint was taken, for the operator
//   created_ms 1796179500000      the same, in ms since the Unix epoch
//   idemstore_version 0.1.0       the build that took it
//   fence_high_water 131072       every fence handed out before the backup completed is below
//   fence_floor 1099511758848     fence_high_water + kBackupFenceMargin: the restored store's
//                                 fences are >= this
//   estimated_records 5000        RocksDB's estimate of the keys (records and meta keys) of
//                                 every column family; under the journal layout, the keys
//                                 its index held
//
// Readers ignore names they do not know (later versions may add lines); fence_floor is required.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "idem/result.h"

namespace idem {

// The margin a restored store's fences start above the backup's high-water mark: 2^40, the
// jump a repair makes too (idem/repair.h); at a million fences a second the source would need
// 12 days without a new backup to use it up, and 2^24 chained restores to exhaust 64 bits.
inline constexpr uint64_t kBackupFenceMargin = uint64_t{1} << 40;

// The manifest's file name inside a backup directory.
inline constexpr char kBackupManifestFile[] = "IDEMSTORE-BACKUP";

struct BackupManifest {
  int64_t created_ms = 0;
  std::string created_utc;  // YYYYMMDDTHHMMSSZ
  std::string idemstore_version;
  uint64_t fence_high_water = 0;
  uint64_t fence_floor = 0;
  uint64_t estimated_records = 0;
};

// The manifest's text (the format above).
std::string EncodeBackupManifest(const BackupManifest& manifest);
// Corruption, naming the line, when `text` is not a manifest of a format this build knows.
Result<BackupManifest> DecodeBackupManifest(std::string_view text);

// Reads `dir`/IDEMSTORE-BACKUP: NotFound if there is none, Corruption if it does not decode,
// IOError if it cannot be read.
Result<BackupManifest> ReadBackupManifest(const std::string& dir);

}  // namespace idem
