// Verifying a database directory (a backup, or a store's directory while no server runs on it):
// what `idemctl --data DIR verify` runs. Changes nothing: the database is opened read-only.
//
// Opens every column family (`default` and the expiry windows, `expires-<start>`: a family of
// any other name is Corruption), checks every table file's block checksums (RocksDB's
// VerifyChecksum), then reads every key of every family — in the table files and in the WAL not
// yet flushed — and decodes every stored value (a record, or a remembered key's marker:
// engine/src/record_codec.h). In a window, a meta key or a record that never expires is
// Corruption too: the layout keeps those in `default`. A backup's manifest, if present, must
// decode too. Under the journal layout, every segment of `journal/` is checked as an open would
// check it (every entry's and operation's checksum, sequence order, damage told from a torn
// tail: engine/src/journal_format.h) and every value in it decoded, and the journal's saved
// index, if it would be loaded, checked against a replay of the whole journal: every record the
// replay finds, a load must find at the same place, and every entry it gives must be its key's
// last operation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "idem/backup.h"
#include "idem/options.h"
#include "idem/result.h"

namespace idem {

struct VerifyReport {
  uint64_t table_files = 0;
  uint64_t table_bytes = 0;
  // Stored records, decoded (in a journal, every version still on disk, not only the latest).
  uint64_t records = 0;
  uint64_t markers = 0;           // remembered keys' markers, decoded
  uint64_t meta_keys = 0;         // the engine's own keys (fence reservation, clock mark)
  uint64_t expiry_windows = 0;    // expiry-window column families (all of them read)
  uint64_t journal_segments = 0;  // the journal layout's segment files, all read
  uint64_t journal_bytes = 0;     // up to where their entries end
  // A write a crash interrupted at the journal's end (never acknowledged), which the next open
  // zeros: where, and how many bytes; empty if none.
  std::string journal_torn_tail;
  // The journal's saved index (`journal/index`), which the next open loads instead of replaying
  // the journal: whether there is one, the records a load gives, and why the next open would
  // replay the journal instead (and delete it), if it would.
  bool journal_index_saved = false;
  uint64_t journal_index_records = 0;
  std::string journal_index_unusable;
  std::optional<BackupManifest> manifest;  // when `dir` carries one
};

// NotFound if `dir` holds no database; Corruption, naming the table file or the key (namespace
// and key bytes, escaped, and its column family unless `default`) and what is wrong, if a
// checksum fails or a value does not decode or is in the wrong family (the first such value of
// each fault; the message also counts the rest), or naming the journal's saved index if it does
// not agree with the journal; IOError if a file cannot be read.
// `options` are the ones the database runs with (its table format, the rocksdb_options string).
Result<VerifyReport> VerifyDatabase(const std::string& dir, const EngineOptions& options);

}  // namespace idem
