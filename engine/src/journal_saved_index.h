// The journal store's index saved at a clean close, so that the next open loads it instead of
// replaying every segment: a replay reads and checksums the whole journal (21 s for 4M records
// measured here), a load reads 8 bytes per record.
//
// The file is `index` in the journal's directory. The owner writes it at a clean close, once
// every entry is durable and no writer is left (`index.tmp`, synced, renamed, the directory
// synced), and the open that finds it deletes it, durably, before the store takes a write: it
// stands for the journal as it was at that close, and is used at most once. A crash therefore
// leaves none, and the open after it replays. The open checks the journal against it
// (Journal::Resume) and replays instead if they differ, so a file that outlived its close by
// accident (copied back by hand, a failed delete) cannot stand for a journal written since.
//
// Format, integers fixed-width little-endian:
//   magic "IDEMJIDX" (8) | version (4) | head length (4) | head | masked crc32c of the head (4)
//   head: last sequence (8) | segments (4) | per segment, oldest first:
//           number (8) | id (4) | end offset (8) | max keep-until (8) | entries offset (8) |
//           salt (8)
//         segments with needs (4) | per one: id (4) | buckets (4) | per bucket:
//           keep-until (8) | bytes (8)
//   then for each of the index's JournalIndex::kShards shards, in order:
//     table slots (4) | entries (4) | entries x 8 | masked crc32c of the shard's bytes before it
//     (4)
// Every count is checked against the bytes the file has left before anything is allocated.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "idem/result.h"
#include "journal.h"
#include "journal_index.h"

namespace rocksdb {
class FileSystem;
}

namespace idem::journal {

inline constexpr char kSavedIndexName[] = "index";

// The store's estimate of each segment's needed bytes by keep-until (journal_store.h).
using NeedsBySegment = std::unordered_map<uint32_t, std::map<int64_t, uint64_t>>;

// What is saved besides the index's entries.
struct SavedJournal {
  std::vector<Journal::SegmentInfo> segments;  // oldest first; `active` is not saved
  uint64_t last_sequence = 0;
  NeedsBySegment needs;
};

// Writes `journal` and `index` as `dir`'s saved index, replacing any. IOError naming the file.
Status WriteSavedIndex(rocksdb::FileSystem* fs, const std::string& dir, const SavedJournal& journal,
                       const JournalIndex& index);
// Reads `dir`'s saved index into `index` (empty) and returns the rest; nullopt if there is
// none. Corruption saying why if it does not read back whole (`index` is then empty again);
// IOError if it cannot be read.
Result<std::optional<SavedJournal>> ReadSavedIndex(rocksdb::FileSystem* fs, const std::string& dir,
                                                   JournalIndex* index);
// Deletes `dir`'s saved index and what a save that did not finish left, if any, and syncs the
// directory.
Status DeleteSavedIndex(rocksdb::FileSystem* fs, const std::string& dir);

}  // namespace idem::journal
