// Store: the one API of idemstore. The embedded engine (idem/engine.h) and the network client
// (idem/client.h) both implement it, so a program switches between in-process and remote use by
// construction alone.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "idem/admin.h"
#include "idem/operation.h"
#include "idem/options.h"
#include "idem/result.h"
#include "idem/status.h"

namespace idem {

struct StoreStats {
  // RocksDB's estimate (the journal layout: its index's entries); includes expired records not
  // reclaimed yet.
  uint64_t estimated_live_records = 0;
  uint64_t sst_bytes = 0;  // bytes of table files on disk
  uint64_t memtable_bytes = 0;
  uint64_t wal_bytes = 0;
  uint64_t next_fence = 0;  // every fence handed out so far is below this
  uint64_t ops = 0;         // operations applied since open
  uint64_t writes = 0;      // RocksDB write batches committed since open
  // Administrative overrides since open: Deletes that removed another scheme's record (an
  // attempt, token, lock or state machine) past that scheme's rules (docs/recipes.md).
  uint64_t admin_overrides = 0;
  // Space and write amplification, since open. Write amplification =
  // (flush_bytes_written + compaction_bytes_written) / user_bytes_written.
  uint64_t user_bytes_written = 0;   // bytes of the write batches committed (keys + values)
  uint64_t flush_bytes_written = 0;  // table (and BlobDB's blob) files written by flushes
  uint64_t compaction_bytes_read = 0;
  uint64_t compaction_bytes_written = 0;
  uint64_t compactions = 0;
  uint64_t records_dropped_by_compaction = 0;  // expired (and overwritten/deleted) versions removed
  uint64_t live_sst_bytes = 0;                 // table files the current version references
  // Expiry-window column families on disk (EngineOptions::Layout::kExpiryWindows; 0 under the
  // leveled layout unless an earlier run wrote some).
  uint64_t expiry_windows = 0;
  // Memory of the windows' key filters, which let a lookup skip the windows that do not hold
  // its key: about 1.25 bytes per record written to a window since open (or held by one at
  // open), up to twice that while a window outgrows its first size.
  uint64_t expiry_window_filter_bytes = 0;
  // The journal layout (EngineOptions::Layout::kJournal): its segment files and the bytes of
  // their entries (counted in sst_bytes too: the disk records take), and the memory of its
  // index. compaction_bytes_written counts the bytes of records appended again (moved out of
  // mostly dead segments); flush_bytes_written only the engine's own keys in RocksDB.
  uint64_t journal_segments = 0;
  uint64_t journal_bytes = 0;
  uint64_t journal_index_bytes = 0;
  // WAL fsyncs since open (synced writes and syncs of deferred writes): with ops, how well
  // group commit groups. 0 under Durability::kAsync (but for the journal layout's syncs that
  // bound its open files).
  uint64_t wal_syncs = 0;
  // Background reclaim passes (EngineOptions::reclaim_interval_ms) that failed since open; each
  // is retried at the next interval, and expired records (or ended windows) stay on disk until
  // one succeeds.
  uint64_t reclaim_failures = 0;
  // Memory RocksDB holds besides memtable_bytes; a server's resident memory is about these plus
  // the allocator's slack (docs/performance.md#memory).
  uint64_t block_cache_bytes = 0;           // in use; about...
  uint64_t block_cache_capacity_bytes = 0;  // ...this at most (EngineOptions::block_cache_bytes;
                                            // the cache is not strict: pinned blocks may exceed it)
  uint64_t table_readers_bytes = 0;         // table-file metadata outside the block cache: the
                                            // filters and indexes of the expiry windows' files
                                            // (~1.6 bytes per record in them), and a little per
                                            // file
  // Background health, read when the stats are taken.
  uint64_t pending_compaction_bytes = 0;  // RocksDB's estimate of bytes compaction must rewrite
  uint64_t write_stalls = 0;              // times writes were slowed or stopped, since open
  bool write_stalled = false;             // writes are being slowed or stopped now
  uint64_t background_errors = 0;         // RocksDB background (flush/compaction) errors since open
  // Records in table files that have expired past the expiry grace and wait for compaction to
  // remove them (estimated from each file's expiry sample, expiry_stats.h): how far reclaiming
  // lags behind expiry.
  uint64_t expired_unreclaimed_records = 0;
  // Wall-clock steps the engine's own clock detected and did not follow (0 with a clock the
  // embedder supplies: EngineOptions::clock).
  uint64_t clock_steps = 0;
  Durability durability = Durability::kSync;  // the mode the store was opened with
};

class Store {
 public:
  virtual ~Store() = default;

  // Evaluates `ops` in order and appends one entry per op to `results` (cleared first).
  //
  // Each op is atomic and linearizable per key, whatever other threads or clients do. An op sees
  // the effects of the ops before it in the same call. All writes of the call are committed as
  // one unit (one RocksDB write batch: one WAL append, one fsync under Durability::kSync) and are
  // acknowledged only once durable as configured. An op whose input is invalid gets its own
  // error entry and does not stop the others.
  //
  // A non-ok return means the call as a whole failed (disk error, shutdown, too many ops, the
  // connection dropped): in the engine none of its writes took effect; over the network their
  // effect is unknown and `results` is empty.
  virtual Status Apply(std::span<const Op> ops, std::vector<Result<OpResult>>* results) = 0;

  virtual Result<StoreStats> Stats() = 0;

  // Admin queries, in bounded pages (idem/admin.h). The engine and the network client answer
  // them alike; another Store answers NotSupported.
  //
  // Scan: the next page of `request.ns`'s live records in key order (under the journal layout,
  // the order written: idem/admin.h) that match its filter.
  // InvalidArgument, with a message, for a namespace, prefix or status the limits refuse, a
  // status a state-graph namespace does not have, a limit outside 1..kMaxScanPageRecords, or a
  // cursor that does not decode or belongs to another namespace or prefix. Corruption when a
  // stored value does not decode (the message names its key).
  virtual Result<ScanPage> Scan(const ScanRequest& request);
  // Purge: deletes the next batch of `request.ns`'s keys (with the prefix). Each key's delete is
  // atomic with the other operations on that key (it holds the key's lock, as Apply does; a key
  // written after the purge passed it stays), the batch commits as one write, durable as Apply's,
  // and waiting Begins and Locks on the keys are woken. Fences are never reused: a key purged and
  // begun again gets a fence above every fence handed out before. InvalidArgument as for Scan;
  // IOError while writes are suspended (a full disk) or when the write fails: then nothing of
  // this batch was deleted.
  virtual Result<PurgeStep> Purge(const PurgeRequest& request);
  // Compact: a manual compaction through the bottom level of `ns`'s keys ("": the whole
  // database), which removes expired records, ended markers and purged keys' tombstones from
  // disk. Blocks for as long as that takes (minutes on a large store). InvalidArgument for a
  // namespace the limits refuse; IOError while writes are suspended.
  virtual Status Compact(std::string_view ns);

  // Single-operation conveniences over Apply.
  Result<OpResult> Insert(const InsertArgs& args);
  Result<OpResult> CompareAndSet(const CompareAndSetArgs& args);
  Result<OpResult> Get(const GetArgs& args);
  Result<OpResult> Delete(const DeleteArgs& args);
  Result<OpResult> Execute(const Op& op);  // Apply of one op
};

}  // namespace idem
