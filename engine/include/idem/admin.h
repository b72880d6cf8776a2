// Admin queries: listing a namespace's records (Scan), deleting them (Purge) and compacting
// (Store::Compact), for operators and for sweepers that look for stuck work.
//
// The problem: a namespace may hold millions of records, and one call that walked all of them
// would hold the server's thread (and, for a purge, the keys' locks) for as long as that takes.
// So Scan and Purge work in pages: each call does a bounded amount of work — it examines at most
// kMaxScanExamined keys and returns at most `limit` records (a purge deletes at most
// kPurgeBatchKeys keys) — and returns an opaque cursor to continue from, empty when the range is
// exhausted. A cursor names the last key examined; the next call starts strictly after it, so
// keys present throughout a walk are returned exactly once whatever is inserted or deleted
// between pages (a key written after the walk passed it is not seen; one written ahead of it
// is). A page can be empty with a non-empty cursor: keep going.
//
// Every page is read at one instant (one RocksDB iterator) without taking any key's lock, and
// judged at one "now": records expired at that instant are never listed (expiry is enforced on
// read, as Get does), and neither are remembered keys' markers (they are not records).
//
// Under the journal layout (EngineOptions::Layout::kJournal) a walk goes through the records in
// the order they were written instead, every namespace's (the examined bound counts them all),
// and a cursor names the place in the journal it stopped at: a key present throughout is
// returned at least once, and again where it went if it was written, or moved by a reclaim
// pass, after the walk passed it; a key written during the walk is returned. Each record a page
// lists was its key's current version when the page read it.
//
// Cost: besides the keys it examines, each page sorts the live memtable once (the default hash
// memtable keeps no order: engine/src/hash_memtable.h), tens of milliseconds for a full 64 MiB
// one. A server runs each page on a thread of its own, never on the event loop or an engine
// thread. Purged keys leave tombstones that later walks step over until a compaction
// (Store::Compact) removes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "idem/record.h"

namespace idem {

// Records one Scan page returns at most (ScanRequest::limit is 1..this).
inline constexpr size_t kMaxScanPageRecords = 1000;
// Keys one Scan or Purge call examines at most, matching or not.
inline constexpr size_t kMaxScanExamined = 10'000;
// Keys one Purge call deletes at most: one write batch, its keys' locks held while it commits.
inline constexpr size_t kPurgeBatchKeys = 1000;

// Every field has an initializer, so designated initializers may leave any out.
struct ScanRequest {
  std::string ns = {};
  std::string prefix = {};  // only keys starting with these bytes ("": every key of the namespace)
  // Only records whose status is one of these (empty: any status). Each is 1..max_status_bytes;
  // at most Limits::max_status_set; in a namespace with a state graph, each must be a state of
  // the graph (InvalidArgument otherwise: a typo would list nothing, silently).
  std::vector<std::string> status_in = {};
  // Only attempts (RecordKind::kAttempt) still IN_PROGRESS whose lease has ended: the holder
  // stopped heartbeating and nobody has taken the attempt over (a Begin that does gets a new
  // lease). What a completer or sweeper looks for.
  bool lease_ended = false;
  std::string cursor = {};  // "" to start; else the cursor the previous page returned
  size_t limit = 100;       // records to return at most, 1..kMaxScanPageRecords
  // Stop before a record that would bring the page's ScanEntryBytes past this many bytes; the
  // page's first record is always returned. 0: no bound. A server sets it from its largest
  // response.
  size_t max_bytes = 0;
};

struct ScanEntry {
  std::string key;
  Record record;
};

// What an entry counts towards ScanRequest::max_bytes: its key's and record's variable bytes
// plus a fixed allowance for the other fields and the entry's framing on the wire: at least
// the bytes the entry takes in a ScanResponse.
size_t ScanEntryBytes(std::string_view key, const Record& record);

struct ScanPage {
  std::vector<ScanEntry> records;  // in key order (the journal layout: the order written)
  std::string cursor;              // "": the scan is complete
  uint64_t examined = 0;           // keys looked at for this page
};

struct PurgeRequest {
  std::string ns = {};
  std::string prefix = {};  // only keys starting with these bytes ("": the whole namespace)
  std::string cursor = {};  // "" to start; else the cursor the previous call returned
};

// What one Purge call removed. Every key it examined is deleted, whatever it held: live
// records, remembered keys' markers (the namespace forgets those keys: a retry may run again),
// and expired records not yet reclaimed (counted in neither).
struct PurgeStep {
  uint64_t deleted = 0;    // live records
  uint64_t forgotten = 0;  // remembered keys' markers
  std::string cursor;      // "": the purge is complete
};

}  // namespace idem
