// The journal's in-memory index: for each key, where its current operation is in the journal
// (journal_format.h), in 8 bytes per entry.
//
// Why this shape: a lookup should cost one probe in memory and one read of the record, and the
// index must fit in the memory leveled RocksDB spends on its caches (~320 MiB at 20M records).
// A map from keys to locations would hold every key (tens of bytes each); this holds a 25-bit tag
// of the key's hash next to the location instead, in an open-addressing table (linear probing,
// grown by doubling at 80 % load, deletion by shifting back so that probe runs stay contiguous):
// 8 bytes per slot, 10-20 per entry with the load between 40 and 80 %.
//
// A slot packs tag (25 bits), segment + 1 (16 bits: 0 marks an empty slot) and offset / 8
// (23 bits: a segment is at most 64 MiB). The tag's low bits are the entry's home slot, so a
// table can move entries without their hashes; the bits above the home tell keys with the same
// home apart. So a tag can match another key's entry: Find returns candidates, and the caller
// reads each and compares its key, which the journal stores with the record. Measured
// (BM_JournalIndex_Find): 0.12 % of lookups meet another key's matching tag at 10M entries,
// 0.26 % at 20M.
//
// Segment ids are the journal's small numbers for its live segment files, reused once a segment
// is deleted and EraseSegments has removed its entries: at most 65,535 live segments (4 TiB of
// 64 MiB segments). A shard holds at most 2^25 slots, so the index at most ~6.8G entries.
//
// Thread safety: every method may be called concurrently; each of the 256 shards has its own
// lock, held for one probe or one shard's growth (a shard holds 1/256 of the entries, so growing
// one at 20M records moves ~80k entries).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <vector>

namespace idem::journal {

class JournalIndex {
 public:
  struct Location {
    uint32_t segment = 0;  // < kMaxSegments
    uint32_t offset = 0;   // a multiple of 8, < 64 MiB

    bool operator==(const Location&) const = default;
  };
  static constexpr uint32_t kMaxSegments = (1u << 16) - 1;
  static constexpr uint32_t kMaxOffset = (1u << 26) - 8;
  static constexpr size_t kShards = 256;

  JournalIndex();
  ~JournalIndex();
  JournalIndex(const JournalIndex&) = delete;
  JournalIndex& operator=(const JournalIndex&) = delete;

  // Whether the index can hold `at`; the methods below do nothing with a location it cannot.
  static bool Holds(Location at) {
    return at.segment < kMaxSegments && at.offset <= kMaxOffset && at.offset % 8 == 0;
  }

  // Appends to `out` every location recorded under a hash with `hash`'s shard and tag in its
  // probe run: the key's own, if it has one, and, rarely, another key's.
  void Find(uint64_t hash, std::vector<Location>* out) const;
  // Whether `at` is recorded under `hash`'s shard and tag.
  bool Holds(uint64_t hash, Location at) const;
  // Records `at` for a key with hash `hash` that has no entry. False, and nothing recorded, if
  // the hash's shard is full or the index cannot hold `at`.
  [[nodiscard]] bool Insert(uint64_t hash, Location at);
  // Moves the key recorded at `from` under `hash` to `to`. False if there is no such entry.
  bool Replace(uint64_t hash, Location from, Location to);
  // Removes the entry `at` under `hash`. False if there is no such entry.
  bool Erase(uint64_t hash, Location at);
  // Removes every entry in any of `segments`, one pass over the slots, shard by shard; returns
  // how many. A shard is locked only while it is swept.
  size_t EraseSegments(const std::vector<uint32_t>& segments);

  // The index as data, shard by shard, for saving it whole (journal_saved_index.h). A shard's
  // table is its slots, 0 for an empty one, each other packed as the table holds it (opaque to
  // the caller, meaningful only to Import). CopyTable copies one with a memcpy under the shard's
  // lock, into `table` resized to the shard's slots: a caller that sized it beforehand
  // (TableSlots) allocates nothing while its writers wait. Not atomic across shards: the caller
  // holds off writers.
  size_t TableSlots(size_t shard) const;
  void CopyTable(size_t shard, std::vector<uint64_t>* table) const;
  // A table's size and its entries (its slots but the empty ones): what a save holds of it.
  struct ShardImage {
    uint32_t slots = 0;
    std::vector<uint64_t> entries;
  };
  ShardImage Export(size_t shard) const;  // a copy of the shard's table, as saved
  // Fills shard `shard`, which must be empty, from what Export gave. False, and the shard left
  // empty, if the image is not one Export could give: a table size that is not a power of two
  // in range, more entries than it grows at, or an entry that is no location's.
  [[nodiscard]] bool Import(size_t shard, const ShardImage& image);
  // Removes every entry.
  void Clear();
  // Every entry, shard by shard: what a key's hash keeps of it (its shard and tag) and the
  // location recorded for it. For comparing two indexes (verifying a saved one).
  struct Entry {
    uint64_t hash_bits = 0;  // shard and tag
    Location at;
  };
  std::vector<Entry> Entries() const;

  size_t size() const;
  size_t MemoryBytes() const;  // the slots' memory

 private:
  struct Shard;
  std::array<std::unique_ptr<Shard>, kShards> shards_;
};

}  // namespace idem::journal
