// The journal store's index saved to a file, so that an open loads it instead of replaying
// every segment: a replay reads and checksums the whole journal (21 s for 4M records measured
// here), a load reads 8 bytes per record and replays only what was written after the save.
//
// The file is `index` in the journal's directory, written at a clean close and, while the store
// runs, every so often (the owner's choice): `index.tmp`, synced, renamed, the directory
// synced, once every entry it points at is durable. It stands for the journal at one point;
// the journal only grows after it (appends) or loses whole segments (drops, moves), so a save
// serves every later open of the same journal (Journal::Resume). An open checks the journal
// against it and replays instead if the journal could not have followed the save (another
// journal's file, or a journal that lost entries the save points at).
//
// Format, integers fixed-width little-endian:
//   magic "IDEMJIDX" (8) | version (4) | head length (4) | head | masked crc32c of the head (4)
//   head: last sequence (8) | segments (4) | per segment, oldest first:
//           number (8) | id (4) | end offset (8) | max keep-until (8) | entries offset (8) |
//           salt (8)
//         segments with needs (4) | per one: id (4) | buckets (4) | per bucket:
//           keep-until (8) | bytes (8)
//         from version 2: the deletes' part of those needs, in the same form (version 1 files
//           read with none)
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
  NeedsBySegment delete_needs;  // the deletes' part of `needs`
};

// Writes `journal` and the index's `tables` (JournalIndex::CopyTable of every shard) as `dir`'s
// saved index, replacing any. IOError naming the file.
Status WriteSavedIndex(rocksdb::FileSystem* fs, const std::string& dir, const SavedJournal& journal,
                       const std::vector<std::vector<uint64_t>>& tables);
// Reads `dir`'s saved index into `index` (empty) and returns the rest; nullopt if there is
// none. Corruption saying why if it does not read back whole (`index` is then empty again);
// IOError if it cannot be read.
Result<std::optional<SavedJournal>> ReadSavedIndex(rocksdb::FileSystem* fs, const std::string& dir,
                                                   JournalIndex* index);
// Deletes what a save that did not finish left in `dir`, if anything.
Status DeleteUnfinishedSave(rocksdb::FileSystem* fs, const std::string& dir);
// Deletes `dir`'s saved index, if any: one an open found of no use.
Status DeleteSavedIndex(rocksdb::FileSystem* fs, const std::string& dir);

}  // namespace idem::journal
