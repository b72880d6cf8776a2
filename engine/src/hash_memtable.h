// A RocksDB memtable representation built for point lookups on keys that arrive in random order.
//
// Why: RocksDB's default memtable is a skiplist. An idempotency key is usually random (a UUID, a
// request hash), and inserting a random key into a 64 MiB skiplist walks ~9 levels of cache
// misses; under a stream of new keys that walk was the largest single cost in the server
// (docs/performance.md). Operations never scan a range of keys: every read is a point Get (the
// admin walks of idem/admin.h do, and pay the sort below once per page). So this representation
// keeps entries in a hash table (one bucket array, chains of nodes) and sorts them only when
// something asks for order — in practice once, when the memtable is flushed to a table file.
//
// Contract (what RocksDB may rely on, and what this rep requires of the options):
//  - Insert: single writer at a time (allow_concurrent_memtable_write = false), readers
//    concurrent with it. A node is fully written before it is published into its bucket with a
//    release store, and never changes after that.
//  - Get: calls back the entries of the lookup's user key whose sequence number is visible, newest
//    first, as RocksDB's skiplist does.
//  - GetIterator: a snapshot of the entries present when it is called, in internal-key order,
//    sorted at that moment (O(n log n)); fine for flush, slow for an iterator over a live
//    memtable, and a tailing iterator does not see later writes to the live memtable. The
//    ordering shortcut assumes RocksDB's bytewise user comparator, which the engine never
//    changes (rocksdb_options may not set a comparator).
//  - Options whose memtable access would become a whole-memtable sort per write
//    (inplace_update_support, max_successive_merges) are refused by the engine with this
//    memtable; so is turning concurrent memtable writes back on.
#pragma once

#include <cstddef>

#include <rocksdb/memtablerep.h>

namespace idem {

class HashMemTableRepFactory final : public rocksdb::MemTableRepFactory {
 public:
  // bucket_count is rounded up to a power of two; one 8-byte slot per bucket is allocated from
  // the memtable's arena by its first insert (so it counts towards write_buffer_size, and an
  // empty memtable costs nothing).
  explicit HashMemTableRepFactory(size_t bucket_count);

  using rocksdb::MemTableRepFactory::CreateMemTableRep;
  rocksdb::MemTableRep* CreateMemTableRep(const rocksdb::MemTableRep::KeyComparator& compare,
                                          rocksdb::Allocator* allocator,
                                          const rocksdb::SliceTransform* prefix_extractor,
                                          rocksdb::Logger* logger) override;
  const char* Name() const override { return "IdemHashMemTableRepFactory"; }

  size_t bucket_count() const { return bucket_count_; }

 private:
  size_t bucket_count_;
};

// Buckets for a memtable of `write_buffer_bytes`: about one per 128 bytes of entries, so chains
// stay ~1 long for the engine's records (~150-200 bytes each in the memtable).
size_t HashMemTableBucketsFor(size_t write_buffer_bytes);

}  // namespace idem
