// Reads a RocksDB write-ahead log the way recovery will, without RocksDB, to tell damage that
// recovery would silently skip (everything after it dropped: RocksDB's point-in-time mode) from
// the torn tail a crash leaves (never acknowledged in sync mode, so nothing to lose).
//
// The format (RocksDB db/log_format.h, as LevelDB's doc/log_format.md): the file is a sequence
// of 32 KiB blocks of physical records, each
//
//   masked crc32c (4 bytes, of the type byte and the payload) | length (2, little-endian) |
//   type (1) | payload (length bytes)
//
// and never crossing a block's end; fewer than 7 bytes left in a block are a zero trailer. A
// logical record (one WriteBatch: sequence number (8), operation count (4), operations) is one
// kFull physical record, or kFirst, kMiddle..., kLast. A zero header (type 0, length 0) stands
// for zeros to the end of the block; recovery skips them (the prezeroed WAL's tail is zeros).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "idem/result.h"

namespace idem {

struct WalScan {
  uint64_t file_bytes = 0;
  // The intact prefix: logical records read before any damage, where the last ends, and the
  // sequence numbers they carry, [first_sequence, next_sequence).
  uint64_t records = 0;
  uint64_t intact_bytes = 0;
  uint64_t first_sequence = 0;
  uint64_t next_sequence = 0;

  // The first unreadable spot, if any: where the logical record it belongs to starts.
  struct Damage {
    uint64_t offset = 0;
    std::string what;  // "checksum mismatch", "the file ends inside a record", ...
  };
  std::optional<Damage> damage;
  // Physical records with a valid checksum after the damage: data recovery would drop. None
  // means the damage is the log's tail.
  uint64_t readable_after_damage = 0;
  // Of those, whole logical records (write batches): what a salvage can replay.
  uint64_t records_after_damage = 0;
  // The sequence number of the first logical record read after the damage (0: none). The
  // operations between next_sequence and it are the ones the damage destroyed.
  uint64_t resume_sequence = 0;
  // Of the operations in the whole records read (before and after the damage), those that write
  // a column family other than default (the expiry windows: column_families.h). The WAL names a
  // family by its id only. A batch is counted up to an operation type the scan does not know.
  uint64_t other_family_operations = 0;
  // The file ends inside a record (a header or payload cut off by the end of the file), rather
  // than after a whole record or in zeros.
  bool ends_inside_record = false;

  bool TailOnly() const { return damage && readable_after_damage == 0; }
};

// Scans the WAL at `path`. IOError if it cannot be read.
Result<WalScan> ScanWal(const std::string& path);

// The paths of the WALs ("<number>.log") in `dir`, oldest first: by number, not by name (past
// 999999 the names grow a digit and sort before it as strings). A name with too many digits for
// RocksDB to have written comes last. IOError if `dir` cannot be listed.
Result<std::vector<std::string>> ListWals(const std::string& dir);

}  // namespace idem
