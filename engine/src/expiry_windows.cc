#include "expiry_windows.h"

#include <algorithm>
#include <limits>

#include <rocksdb/advanced_options.h>

#include "column_families.h"
#include "rocks_status.h"

namespace idem {
ExpiryWindows::ExpiryWindows(rocksdb::DB* db, int64_t width_ms,
                             rocksdb::ColumnFamilyOptions options)
    : db_(db),
      width_ms_(width_ms),
      options_(std::move(options)),
      windows_(std::make_shared<const Set>()) {}

ExpiryWindows::~ExpiryWindows() {
  std::lock_guard<std::mutex> lock(mu_);
  windows_.reset();
}

std::shared_ptr<rocksdb::ColumnFamilyHandle> ExpiryWindows::Own(
    rocksdb::ColumnFamilyHandle* handle) {
  rocksdb::DB* db = db_;
  return std::shared_ptr<rocksdb::ColumnFamilyHandle>(
      handle, [db](rocksdb::ColumnFamilyHandle* h) { (void)db->DestroyColumnFamilyHandle(h); });
}

void ExpiryWindows::Adopt(int64_t end_ms, rocksdb::ColumnFamilyHandle* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<Set>(*windows_);
  next->push_back(Window{end_ms, Own(handle)});
  std::sort(next->begin(), next->end(),
            [](const Window& a, const Window& b) { return a.end_ms < b.end_ms; });
  windows_ = std::move(next);
}

int64_t ExpiryWindows::EndFor(int64_t death_ms) const {
  const int64_t index = death_ms / width_ms_;
  if (index >= std::numeric_limits<int64_t>::max() / width_ms_ - 1) {
    return std::numeric_limits<int64_t>::max();  // beyond any clock: never ends
  }
  return (index + 1) * width_ms_;
}

std::shared_ptr<const ExpiryWindows::Set> ExpiryWindows::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return windows_;
}

Result<std::shared_ptr<rocksdb::ColumnFamilyHandle>> ExpiryWindows::Open(int64_t end_ms) {
  auto find = [&]() -> std::shared_ptr<rocksdb::ColumnFamilyHandle> {
    std::shared_ptr<const Set> set = Current();
    auto it = std::lower_bound(set->begin(), set->end(), end_ms,
                               [](const Window& w, int64_t end) { return w.end_ms < end; });
    return it != set->end() && it->end_ms == end_ms ? it->handle : nullptr;
  };
  if (auto handle = find()) return handle;
  std::lock_guard<std::mutex> one_change(change_mu_);
  if (auto handle = find()) return handle;  // created while this one waited
  rocksdb::ColumnFamilyHandle* raw = nullptr;
  rocksdb::Status s = db_->CreateColumnFamily(options_, WindowFamilyName(end_ms), &raw);
  if (!s.ok()) return FromRocks(s);
  Adopt(end_ms, raw);
  return find();
}

Result<size_t> ExpiryWindows::DropEndedBy(int64_t until_ms) {
  std::unique_lock<std::shared_mutex> no_users(in_use_);
  std::lock_guard<std::mutex> one_change(change_mu_);
  std::shared_ptr<const Set> set = Current();
  size_t dropped = 0;
  for (const Window& w : *set) {
    if (w.end_ms > until_ms) break;
    // One MANIFEST record: a crash leaves the family either whole or gone.
    if (rocksdb::Status s = db_->DropColumnFamily(w.handle.get()); !s.ok()) {
      if (dropped == 0) return FromRocks(s);
      break;
    }
    ++dropped;
  }
  if (dropped > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    auto next =
        std::make_shared<Set>(windows_->begin() + static_cast<ptrdiff_t>(dropped), windows_->end());
    windows_ = std::move(next);
  }
  return dropped;
}

rocksdb::ColumnFamilyOptions WindowFamilyOptions(const rocksdb::ColumnFamilyOptions& base) {
  rocksdb::ColumnFamilyOptions o = base;
  o.compaction_filter = nullptr;
  o.compaction_filter_factory = nullptr;
  o.table_properties_collector_factories.clear();
  o.compaction_style = rocksdb::kCompactionStyleFIFO;
  o.compaction_options_fifo.max_table_files_size = std::numeric_limits<uint64_t>::max();
  o.compaction_options_fifo.allow_compaction = true;
  o.ttl = 0;
  o.periodic_compaction_seconds = 0;
  // No memtable bloom filter: RocksDB allocates it (a tenth of the write buffer) with every
  // memtable, empty or not, against the memtable budget all families share, and most windows'
  // memtables sit empty or nearly so. With the hash memtable a miss costs one bucket probe
  // without it; with the skiplist, a walk of the window's (usually small) memtable.
  o.memtable_prefix_bloom_size_ratio = 0;
  o.level0_file_num_compaction_trigger = 8;
  // A window's files only ever sit in L0 (FIFO): many of them are not a backlog to stall on.
  o.level0_slowdown_writes_trigger = 1 << 30;
  o.level0_stop_writes_trigger = 1 << 30;
  return o;
}

}  // namespace idem
