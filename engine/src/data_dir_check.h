// What the engine checks in a data directory before RocksDB opens it, because RocksDB would
// "recover" from these faults by discarding data, silently:
//
// * A WAL damaged before its end. Point-in-time recovery (the engine's wal_recovery_mode) stops
//   replay at the first bad record, drops every record after it — acknowledged ones too — and
//   then deletes the WAL. kTolerateCorruptedTailRecords would refuse, but also refuses the torn
//   last record a crash leaves in the prezeroed WAL (its checksum fails: zeros follow it), which
//   must open. So the engine reads each WAL itself (wal_scan.h) and refuses damage that readable
//   records follow; a torn last record opens, with a line in the log.
// * A WAL cut short. It ends inside a record, or at a record boundary: the latter cannot be told
//   from the WAL alone. Under Durability::kSync with the prezeroed WAL, a live WAL ends in its
//   zeros and a cleanly closed one with a whole record, so a WAL that ends inside a record was
//   cut: refused. Under kAsync a crash can leave exactly that, so it is not. (Closed WALs'
//   synced sizes are in the MANIFEST too: track_and_verify_wals_in_manifest, rocks_options.cc.)
// * A directory that is not empty but has no CURRENT. RocksDB would create a new database there
//   and delete the old MANIFEST and table files as obsolete (or, with a WAL present, refuse, but
//   only after writing a new CURRENT that makes the next start do it).
//
// docs/design.md ("Damaged data directories") has what each refusal means for the operator.
#pragma once

#include <string>

#include "idem/options.h"
#include "idem/status.h"

namespace idem {

// Reads `dir` (absent or empty is fine) and changes nothing. Corruption naming the file, the
// fault and the salvage command (`idemctl --data DIR repair`); InvalidArgument for a non-empty
// directory that holds no database; Busy if another process (or engine) has the database open;
// IOError if it cannot be read. Damage that opens (a torn last record) is reported to
// options.log.
Status CheckDataDirectory(const std::string& dir, const EngineOptions& options);

// "idemctl --data DIR repair": how an operator salvages `dir`.
std::string SalvageCommand(const std::string& dir);
// `s`, and for Corruption the same followed by how to salvage `dir`.
Status WithSalvageAdvice(const Status& s, const std::string& dir);

}  // namespace idem
