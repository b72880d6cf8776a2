// The FileSystem layer that keeps a failing disk from aborting the process through the
// assertions in Debian's librocksdb (built without NDEBUG).
//
// RocksDB's WritableFileWriter remembers a failed write and asserts when the file is used again
// (AssertFalseAndGetStatusForPrevError), unless the failure came from a sync. Two files are used
// again after a failure:
// - a WAL: SyncWAL after an append failed (the sync thread, a read that must sync). This layer
//   tells WriteHealth about a failed WAL append before RocksDB sees it, and WriteHealth holds the
//   failure back until the SyncWALs in flight are done and refuses later ones (write_health.h);
// - the info LOG: every line RocksDB logs. A LOG on a full disk would abort at the second line
//   it cannot write, so the LOG's write errors are ignored here (lines are lost, nothing else).
#pragma once

#include <memory>

#include <rocksdb/file_system.h>

#include "write_health.h"

namespace idem {

std::shared_ptr<rocksdb::FileSystem> NewFailureSafeFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base, std::shared_ptr<WriteHealth> health);

}  // namespace idem
