// A FileSystem wrapper that keeps zeros written ahead of the end of each RocksDB WAL file, so
// that the WAL's fsyncs overwrite blocks the file already has.
//
// Why: on ext4 (and XFS) an fdatasync after an append must also commit the metadata the append
// changed — the file size, and newly allocated or fallocated (unwritten) blocks — which is a
// journal commit: more device writes and cache flushes per sync. After an overwrite of blocks
// that are allocated, written and inside the file's size, fdatasync writes the data and flushes
// the device, nothing else. Measured here (3 KB write + fdatasync, loop of 5,000): append with
// fallocate 148–152 µs and 65 µs of CPU per sync; overwrite 96–98 µs and 40 µs. PostgreSQL
// zero-fills its WAL segments for the same reason (wal_init_zero).
//
// How: for each WAL file ("<digits>.log") RocksDB creates, the wrapper opens a second
// descriptor. After a successful Sync/Fsync, when fewer than `chunk_bytes / 2` zeros remain
// ahead of the data, it writes `chunk_bytes` more zeros past the data and the zeros already
// there and fdatasyncs them (on the syncing thread, about once per `chunk_bytes / 2` of WAL).
// Close truncates the file back to its data.
//
// Why recovery is unaffected: RocksDB's log reader skips a zero header (type kZeroType, length
// 0) to the end of its 32 KiB block without reporting a drop, under every recovery mode — the
// format's provision for the preallocated regions of mmap writes — so a WAL whose tail is zeros
// reads as the same records. A record torn by a crash is followed by zeros instead of the end of
// the file, so the reader may report it as corrupt rather than truncated; point-in-time recovery
// (the engine's mode) stops at the last WAL's torn tail either way, with what came before it.
// docs/design.md §5 has the whole argument.
//
// Concurrency: RocksDB syncs a WAL (SyncWAL, on the sync thread) while the write thread appends
// to it, and zeros must never land on data. Appends are counted under a mutex before they are
// written; zeros are written under the same mutex, a 64 KiB piece at a time, only past the data
// counted so far. So a byte written as zero and later as data is written as data last.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <rocksdb/file_system.h>

namespace idem {

std::shared_ptr<rocksdb::FileSystem> NewPrezeroedWalFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base, uint64_t chunk_bytes);

// Whether RocksDB names a file a WAL: "<digits>.log", the last component of `path`.
bool IsWalFileName(const std::string& path);

}  // namespace idem
