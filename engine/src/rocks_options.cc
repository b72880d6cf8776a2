#include "rocks_options.h"

#include <rocksdb/cache.h>
#include <rocksdb/comparator.h>
#include <rocksdb/convenience.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>

#include "expiry_compaction_filter.h"
#include "expiry_stats.h"
#include "hash_memtable.h"

namespace idem {
namespace {

// The hash memtable takes one writer at a time; RocksDB's write group already funnels the
// engine's writes through one leader, so nothing is lost by saying so.
void UseMemtable(EngineOptions::Memtable kind, rocksdb::Options* o) {
  if (kind == EngineOptions::Memtable::kSkipList) {
    o->memtable_factory = std::make_shared<rocksdb::SkipListFactory>();
    return;
  }
  o->memtable_factory =
      std::make_shared<HashMemTableRepFactory>(HashMemTableBucketsFor(o->write_buffer_size));
  o->allow_concurrent_memtable_write = false;
}

}  // namespace

rocksdb::Options MakeRocksOptions(const EngineOptions& opts,
                                  std::shared_ptr<const ClockMark> clock_mark) {
  rocksdb::Options o;
  o.create_if_missing = opts.create_if_missing;
  o.max_background_jobs = opts.background_jobs;
  o.max_open_files = opts.max_open_files;
  o.write_buffer_size = opts.write_buffer_bytes;
  o.max_write_buffer_number = 3;
  o.level_compaction_dynamic_level_bytes = true;
  // LZ4 at every level, the last one included: every new key is rewritten by compaction
  // several times on its way down, and with ZSTD at the bottom that compression was ~10 % of
  // the server's CPU under a stream of inserts (measured: +15 % inserts/s at pipeline 16 with
  // LZ4, same disk bytes per million records on the benchmark's records).
  o.compression = rocksdb::kLZ4Compression;
  o.bottommost_compression = rocksdb::kLZ4Compression;
  o.keep_log_file_num = 4;
  // A closed WAL's synced size goes into the MANIFEST, and an open refuses a WAL that is missing
  // or shorter: the one way to see a WAL cut at a record boundary. The live WAL is checked by
  // the engine (data_dir_check.h). Recovery stays point-in-time, which the engine's own WAL
  // check makes safe: it refuses damage before the tail, the only case where point-in-time
  // recovery drops records that were acknowledged.
  o.track_and_verify_wals_in_manifest = true;
  // Most inserts look up a key that does not exist yet. A whole-key bloom filter on the memtable
  // answers those misses without walking the skiplist (measured: Get miss 4.8 -> 1.0 us here).
  o.memtable_prefix_bloom_size_ratio = 0.1;
  o.memtable_whole_key_filtering = true;
  UseMemtable(opts.memtable, &o);

  rocksdb::BlockBasedTableOptions table;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.block_cache = rocksdb::NewLRUCache(opts.block_cache_bytes);
  // Index and filter blocks live in the block cache, so memory stays bounded by its size as the
  // record count grows; L0's stay pinned because every lookup touches them.
  table.cache_index_and_filter_blocks = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  table.format_version = 5;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

  o.compaction_filter_factory = std::make_shared<ExpiryCompactionFilterFactory>(
      opts.clock, opts.expiry_grace_ms, std::move(clock_mark), RememberPeriods(opts));
  o.table_properties_collector_factories.push_back(std::make_shared<ExpiryStatsCollectorFactory>());
  return o;
}

Result<rocksdb::Options> MakeTunedRocksOptions(const EngineOptions& opts,
                                               std::shared_ptr<const ClockMark> clock_mark) {
  rocksdb::Options base = MakeRocksOptions(opts, std::move(clock_mark));
  if (opts.rocksdb_options.empty()) return base;
  rocksdb::ConfigOptions config;
  config.ignore_unknown_options = false;
  rocksdb::Options tuned;
  rocksdb::Status s = rocksdb::GetOptionsFromString(config, base, opts.rocksdb_options, &tuned);
  if (!s.ok()) return Status::InvalidArgument("rocksdb_options: " + s.ToString());
  // The memtable is the engine's choice (EngineOptions::memtable), and records are ordered
  // bytewise (the hash memtable's flush sort relies on it): refuse what would change either,
  // and what would make the hash memtable sort itself on every write.
  if (tuned.memtable_factory != base.memtable_factory) {
    return Status::InvalidArgument(
        "rocksdb_options: memtable_factory is chosen by the engine's memtable option (--memtable)");
  }
  if (tuned.comparator != rocksdb::BytewiseComparator()) {
    return Status::InvalidArgument("rocksdb_options: the comparator cannot be changed");
  }
  if (opts.memtable == EngineOptions::Memtable::kHash &&
      (tuned.allow_concurrent_memtable_write || tuned.inplace_update_support ||
       tuned.max_successive_merges > 0)) {
    return Status::InvalidArgument(
        "rocksdb_options: allow_concurrent_memtable_write, inplace_update_support and "
        "max_successive_merges need --memtable skiplist");
  }
  // RocksDB would silently keep WAL recycling off under every recovery mode but
  // kSkipAnyCorruptedRecords (db_impl_open.cc, SanitizeOptions): refuse it rather than let the
  // option look applied.
  if (tuned.recycle_log_file_num > 0 &&
      tuned.wal_recovery_mode != rocksdb::WALRecoveryMode::kSkipAnyCorruptedRecords) {
    return Status::InvalidArgument(
        "rocksdb_options: recycle_log_file_num has no effect: RocksDB turns WAL recycling off "
        "under this wal_recovery_mode (the engine's is kPointInTimeRecovery)");
  }
  UseMemtable(opts.memtable, &tuned);  // sized for the write_buffer_size the string may have set
  // Expiry reclaim and its statistics are part of the engine's contract, not tuning: whatever
  // the string says, compaction runs our filter and table files get our statistics.
  tuned.compaction_filter = nullptr;
  tuned.compaction_filter_factory = base.compaction_filter_factory;
  tuned.table_properties_collector_factories = base.table_properties_collector_factories;
  return tuned;
}

}  // namespace idem
