// Options for the embedded engine: limits, durability, retention policies, RocksDB sizing.
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "idem/clock.h"
#include "idem/log.h"
#include "idem/result.h"

namespace idem {

// Every input limit the engine enforces. Violations return InvalidArgument naming the limit.
struct Limits {
  size_t max_namespace_bytes = 64;  // namespaces are 1..N characters of [A-Za-z0-9_.:-]
  size_t max_key_bytes = 512;       // keys are 1..N arbitrary bytes
  size_t max_status_bytes = 32;     // statuses are 1..N bytes
  size_t max_fingerprint_bytes = 64;
  size_t max_payload_bytes = 1 << 20;
  size_t max_owner_bytes = 128;
  size_t max_status_set = 16;        // statuses in one Condition::status_in
  size_t max_batch_ops = 10'000;     // operations in one Apply
  int64_t max_wait_ms = 5 * 60'000;  // the longest wait a Begin may ask for
};

enum class Durability : uint8_t {
  // Acknowledged only after the write-ahead log is fsynced. Concurrent writers and batched
  // operations share one fsync. Survives a power cut. The default: an idempotency record that
  // vanishes after an acknowledged "first time" is exactly the double execution this store
  // exists to prevent.
  kSync = 0,
  // Acknowledged once the WAL write reached the operating system: survives a process crash,
  // not a power cut or kernel crash.
  kAsync = 1,
};

// "sync" or "async": the name idemstored's --durability flag, the wire protocol and idemctl use.
constexpr std::string_view DurabilityName(Durability durability) {
  return durability == Durability::kSync ? "sync" : "async";
}

// How long a namespace keeps its records.
struct RetentionPolicy {
  int64_t default_ttl_ms = 24LL * 3600 * 1000;   // used when an operation leaves its TTL out
  int64_t max_ttl_ms = 30LL * 24 * 3600 * 1000;  // a longer explicit TTL is InvalidArgument
  bool allow_forever = false;                    // whether Ttl::Forever() is accepted
  // Remembered keys: for this long after a finished record expires (a completed or failed
  // attempt, a plain or state-machine record), a marker of it stays — its kind, fingerprint and
  // completion time; no payload, no owner — and Begin and Insert on the key answer
  // Outcome::kExpired instead of starting again (engine/src/remembered_key.h has the rules).
  // 0: not remembered, the key is free once the record expires. 0..kMaxRememberMs.
  static constexpr int64_t kMaxRememberMs = 3650LL * 24 * 3600 * 1000;
  int64_t remember_ms = 0;
};

// Request lifecycle, locks: leases and what happens to finished attempts.
struct LifecyclePolicy {
  int64_t default_lease_ms = 30'000;  // Begin/Heartbeat/Lock/Renew that leave the lease out
  int64_t max_lease_ms = 24LL * 3600 * 1000;
  int64_t completed_ttl_ms = 0;         // retention after Complete; 0 = retention default
  bool remember_failures = false;       // Abort: keep a FAILED record (replayed) or release
  size_t max_response_bytes = 1 << 20;  // Complete's response (also bounded by the payload limit)
};

// A namespace's allowed status transitions: from -> {to...}. Namespaces without a graph allow
// any transition.
//
// State names are 1..Limits::max_status_bytes characters of [A-Za-z0-9_.:-] (the namespace
// character set). The source "*" (kAnyState) means "from any state", including states the graph
// does not name; it is never a target, and no record's status matches it literally.
struct StateGraph {
  static constexpr std::string_view kAnyState = "*";
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> next;
  bool Allows(std::string_view from, std::string_view to) const;
  // Whether `state` is a state of the graph: a source other than '*', or a target. A record of
  // a namespace with a graph starts in such a state (Insert answers ILLEGAL otherwise).
  bool Names(std::string_view state) const;
  // Parses "A>B>C,A>D,*>X": chains separated by commas ("A>B>C" allows A->B and B->C; "*>X"
  // allows X from any state). InvalidArgument, naming the rule, for an empty chain or state, a
  // state outside the character set, or "*" anywhere but first in a chain.
  static Result<StateGraph> Parse(std::string_view spec);
  // Checks every state name (as Parse does) and that none is longer than `max_state_bytes`
  // (Engine::Open: Limits::max_status_bytes, since a longer status could never be stored).
  Status Validate(size_t max_state_bytes) const;
};

// A namespace's rule for the keys its operations name: a length range and a character set, or a
// UUID. A key too short or too uniform to be unique makes two different requests one (the IETF
// idempotency-key draft asks servers to validate keys). Every operation that names a key in the
// namespace (all but IssueToken, whose key the store generates: it is refused instead where its
// tokens, 22 bytes of [A-Za-z0-9_-], would not meet the rule) is checked before anything else is
// done with the key; a key that breaks the rule is InvalidArgument naming the key and the rule.
// This applies to Get and Delete too: a record stored before the rule existed, under a key it
// forbids, is reachable only until it expires.
class KeyFormat {
 public:
  // "min=N,max=N,chars=[SET]" (each part optional, in any order, at least one) or "uuid".
  //   min, max  key length in bytes; min >= 1 (default 1), max >= min (default: no maximum
  //             beyond Limits::max_key_bytes, which Engine::Open requires max not to exceed)
  //   SET       printable ASCII characters and ranges ("A-Za-z0-9_-"); '-' first or last is
  //             itself; ']', '\' and '^' are not accepted (default: any byte)
  //   uuid      36 bytes: 8-4-4-4-12 lowercase hex digits (RFC 9562's form). Lowercase only, so
  //             that one UUID is one key: "A1..." and "a1..." would be two keys, two executions.
  // InvalidArgument, naming the rule broken, for anything else.
  static Result<KeyFormat> Parse(std::string_view spec);

  // OK, or InvalidArgument: "key 'ab' in namespace 'payments' is 2 bytes; the namespace requires
  // 16..64 bytes of [A-Za-z0-9_-]".
  Status Check(std::string_view ns, std::string_view key) const;
  bool Admits(std::string_view key) const;
  // The rule in words: "16..64 bytes of [A-Za-z0-9_-]", "a UUID (...)".
  std::string Describe() const;

  size_t min_bytes() const { return min_bytes_; }
  std::optional<size_t> max_bytes() const { return max_bytes_; }
  bool uuid() const { return uuid_; }

 private:
  size_t min_bytes_ = 1;
  std::optional<size_t> max_bytes_;
  bool uuid_ = false;
  std::string chars_;         // the SET as given, with its brackets; empty: any byte
  std::bitset<256> allowed_;  // by unsigned byte value, when chars_ is set
};

struct EngineOptions {
  // What "now" is for expiry, leases and the compaction filter. Null (production): the engine's
  // own time, which does not jump while the process lives: anchored to the wall clock at open,
  // advanced by the monotonic clock, never below the high-water mark the database keeps, and
  // converging on the wall clock by running at most 5 % fast or slow; a step of the wall clock
  // is logged (docs/design.md). Set (tests, simulations): that clock, read as it is.
  std::shared_ptr<Clock> clock;
  // The sources of the engine's own time when `clock` is null; null: the system's wall clock
  // (SystemClock) and monotonic clock (MonotonicClock). Tests step a fake wall clock here.
  std::shared_ptr<Clock> wall_clock;
  std::shared_ptr<Clock> monotonic_clock;
  // Where the engine tells the operator what they must know: refused or suspended writes,
  // recoveries, clock steps (idem/log.h: one record per event, never one per operation). Called
  // from any engine thread; must not call into the engine. Null: text lines on stderr
  // (StderrLogSink()). A sink that wants lines: LogLinesTo(write).
  LogSink log;
  Durability durability = Durability::kSync;
  Limits limits;
  RetentionPolicy default_retention;                 // namespaces without their own policy
  std::map<std::string, RetentionPolicy> retention;  // per-namespace policies
  LifecyclePolicy default_lifecycle;
  std::map<std::string, LifecyclePolicy> lifecycle;  // per-namespace lifecycle policies
  std::map<std::string, StateGraph> state_graphs;    // per-namespace state machines
  std::map<std::string, KeyFormat> key_formats;      // per-namespace key rules (any key: none)
  bool create_if_missing = true;

  // Reclaiming expired records: every interval a background thread looks at each SST's expiry
  // statistics (gathered when the file was written) and compacts the files in which at least
  // `reclaim_min_expired_fraction` of the records with an expiry have expired. 0 disables the
  // thread (tests and simulations call Engine::ReclaimExpired themselves).
  int64_t reclaim_interval_ms = 60'000;
  double reclaim_min_expired_fraction = 0.5;
  // Physical removal (compaction, the reclaimer) lags logical expiry by this much: reads treat a
  // record as gone at its expiry exactly, compaction removes it only once it has been expired
  // for the grace. The margin by which engine time may run ahead of a later run's (a wall-clock
  // step before the engine's own time took over, a crash between two high-water marks) without
  // removing a record that is live again. 0..kMaxExpiryGraceMs; costs only disk space.
  static constexpr int64_t kMaxExpiryGraceMs = 7LL * 24 * 3600 * 1000;
  int64_t expiry_grace_ms = 5 * 60'000;

  // Where records are written (docs/design.md §2, "Expiry windows").
  //   kLeveled        one column family under leveled compaction; expired records are removed
  //                   by the expiry compaction filter when compaction rewrites their files.
  //   kExpiryWindows  a record that can die lives in the column family of its death time's
  //                   window ([k·W, (k+1)·W) for W = expiry_window_ms; its death is its expiry
  //                   plus its namespace's remember period), which is dropped whole once the
  //                   window has ended `expiry_grace_ms` ago: expired data leaves the disk
  //                   without rewriting live records. Records that never expire stay in the
  //                   default column family.
  //   kJournal        every record is appended to a log of segment files (under `journal/` in
  //                   the database directory) and found through an in-memory hash index; a
  //                   segment file is deleted once every record in it has been dead for the
  //                   grace, and the few long-lived records of a mostly dead segment are
  //                   appended again first. Nothing is flushed or compacted; RocksDB keeps only
  //                   the engine's own keys (fences, the clock mark). Costs memory: about 20 bytes
  //                   of index per record. Scan and Purge walk the journal in the order it was
  //                   written, and Compact of one namespace compacts the whole journal
  //                   (docs/design.md).
  // The leveled and window layouts read what the other wrote: the engine opens every window
  // column family it finds, looks a key up in each window that may still hold it and in the
  // default one, and a write moves its record to where the current layout keeps it (no bulk
  // conversion). A database holds records of the journal layout or of the other two, never
  // both. A leveled or window database opened with kJournal is converted first, in place and
  // for good: its live records move into a journal and its window families are dropped
  // (engine/src/journal_conversion.h; a crash during it is finished or started over by the next
  // open). A journal database opened with the other two is refused with InvalidArgument.
  enum class Layout : uint8_t { kLeveled, kExpiryWindows, kJournal };
  Layout layout = Layout::kLeveled;
  // kExpiryWindows: the width of a window. Wider: fewer windows for a lookup to probe; narrower:
  // dead records leave the disk sooner (at most one width plus the grace after their death).
  static constexpr int64_t kMinExpiryWindowMs = 1'000;
  static constexpr int64_t kMaxExpiryWindowMs = 30LL * 24 * 3600 * 1000;
  int64_t expiry_window_ms = 3600'000;
  // kExpiryWindows: a window's table files are merged, once, when this many small ones (each
  // under the write buffer) have accumulated; 0 never merges them. A window takes writes for
  // about its width and is flushed many times meanwhile. Merging rewrites those bytes a second
  // time (write amplification toward 2); not merging leaves a lookup of an older record in the
  // window probing each newer file's Bloom filter (~0.25 µs a file here, keys in random order).
  static constexpr int kMaxExpiryWindowMergeFiles = 1024;
  int expiry_window_merge_files = 32;
  // kJournal: a segment file's size, in [kMinJournalSegmentBytes, kMaxJournalSegmentBytes], and
  // enough for the largest record `limits` allow (max_payload_bytes plus the other fields and
  // 4 KiB). A batch's writes go into one segment: a batch whose writes take more than a segment
  // is refused with InvalidArgument, nothing written. Smaller segments: dead records leave the
  // disk sooner (a segment goes once its last record is dead), more files. And how many closed
  // segment files stay open between reads (at least 1): the server counts them, plus 16, in its
  // file-descriptor budget.
  static constexpr uint64_t kMinJournalSegmentBytes = uint64_t{64} << 10;
  static constexpr uint64_t kMaxJournalSegmentBytes = uint64_t{64} << 20;
  uint64_t journal_segment_bytes = uint64_t{64} << 20;
  size_t journal_max_open_files = 256;
  // kJournal: the journal's in-memory index is saved to a file at a clean close, and by a
  // reclaim pass once this long has passed since the last save (0: only at a clean close). A
  // start loads the last save and replays only what was written after it; without one it
  // replays the whole journal (1 s per million records here). A save copies the index's table
  // while writes wait (35 ms at 20M records here), then writes it, 8 bytes per record
  // (docs/operations.md).
  int64_t journal_index_save_interval_ms = 10 * 60'000;
  // kJournal: records (key and value together) are stored compressed with a dictionary of at
  // most this many bytes, trained on recent records when each segment is created and kept in it
  // (zstd; a record is stored as given where that is shorter); 0, the default, stores every
  // record as given. Records share most of their bytes with one another (field names, statuses,
  // response skeletons) and little within themselves: with kDefaultJournalDictionaryBytes,
  // idem-bench's records take 83 MiB per million instead of 191, for ~1.2 µs of CPU per write
  // and ~0.2 µs per read (a quarter to a third of the server's peak write rate on one CPU:
  // docs/performance.md, "Journal values compressed"). A batch must then fit in a segment less
  // these bytes.
  static constexpr size_t kDefaultJournalDictionaryBytes = size_t{8} << 10;
  static constexpr size_t kMaxJournalDictionaryBytes = size_t{64} << 10;
  size_t journal_dictionary_bytes = 0;

  // How the memtable indexes its entries. kHash (a hash table, sorted only when flushed) makes
  // a random key's insert and lookup O(1); kSkipList is RocksDB's default, ordered at all times.
  // The engine only ever reads single keys, so kHash loses nothing it uses (docs/design.md).
  enum class Memtable { kHash, kSkipList };
  Memtable memtable = Memtable::kHash;

  // The CPU priority of RocksDB's flush and compaction threads. kLow (nice 19) lets requests
  // preempt them at once, which lowers latency when they share a CPU; but background work then
  // gets CPU only when nothing at normal priority wants it, so at sustained saturation writes
  // stall now and then, and next to any busy process flushes starve and RocksDB stops writes.
  // kLow is for a process with CPUs to itself; the default is kNormal (figures:
  // docs/performance.md#background-priority). Process-wide and one-way: RocksDB's default
  // thread pools serve every database in the process, and an unprivileged thread cannot raise
  // its priority again.
  enum class BackgroundPriority { kNormal, kLow };
  BackgroundPriority background_priority = BackgroundPriority::kNormal;

  // Under Durability::kSync: zeros kept written ahead of the end of RocksDB's WAL, `chunk` at a
  // time, so each fsync overwrites blocks the file already has instead of appending — no file
  // system journal commit per sync, so a cheaper fsync (docs/performance.md#wal-over-zeros). 0
  // turns it off. engine/src/prezeroed_wal.h has the mechanism, docs/design.md §5 the argument.
  static constexpr uint64_t kDefaultWalPrezeroChunkBytes = 1u << 20;
  uint64_t wal_prezero_chunk_bytes = kDefaultWalPrezeroChunkBytes;

  // After a failed write or sync the engine suspends writes and recovers through RocksDB's
  // DB::Resume, which RocksDB 7.8 can leave waiting for ever (docs/design.md, failure model).
  // A Resume that has not returned after this long is reported: the log says so and what to do,
  // refused writes say to restart; reads go on, and writes come back if Resume returns after
  // all. Only when the operator is told depends on it: a Resume that must first wait for a
  // long compaction can take minutes and is not stuck. Must be > 0.
  int64_t recovery_stuck_after_ms = 30'000;

  // RocksDB sizing.
  size_t block_cache_bytes = 256u << 20;
  size_t write_buffer_bytes = 64u << 20;  // one memtable (idemstored --write-buffer-mb)
  int background_jobs = 2;
  // Files RocksDB may keep open at once (its max_open_files: table files, less 10 it keeps for
  // its logs and MANIFEST); past it its table cache closes the least recently used table files.
  // -1: no limit, every table file stays open. idemstored sets it from its file-descriptor
  // budget (tools/server_config/) so that RocksDB never finds the descriptors taken by connections.
  int max_open_files = -1;
  // RocksDB options set over the engine's own, in RocksDB's "name=value;name=value" form (DB
  // and column-family options, e.g. "level0_file_num_compaction_trigger=8"), for tuning and
  // experiments. An unknown name or a bad value fails Open with InvalidArgument. The expiry
  // compaction filter and the expiry statistics cannot be replaced this way; the memtable is
  // chosen with `memtable`, and a memtable_factory or comparator here is refused (so are the
  // options the hash memtable cannot serve: see engine/src/hash_memtable.h).
  std::string rocksdb_options;
};

}  // namespace idem
