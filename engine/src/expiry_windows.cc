#include "expiry_windows.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include <rocksdb/advanced_options.h>
#include <rocksdb/table.h>

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

void ExpiryWindows::Insert(Window window) {
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<Set>(*windows_);
  next->push_back(std::move(window));
  std::sort(next->begin(), next->end(),
            [](const Window& a, const Window& b) { return a.end_ms < b.end_ms; });
  windows_ = std::move(next);
}

void ExpiryWindows::Adopt(int64_t end_ms, rocksdb::ColumnFamilyHandle* handle) {
  uint64_t keys = 0;  // memtable entries and table files' keys: a size for the filter
  (void)db_->GetIntProperty(handle, "rocksdb.estimate-num-keys", &keys);
  Insert(Window{end_ms, Own(handle),
                std::make_shared<WindowKeyFilter>(keys, std::weak_ptr<const WindowKeyFilter>(),
                                                  /*ready=*/false)});
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

Result<ExpiryWindows::Window> ExpiryWindows::Open(int64_t end_ms) {
  auto find = [&]() -> std::optional<Window> {
    std::shared_ptr<const Set> set = Current();
    auto it = std::lower_bound(set->begin(), set->end(), end_ms,
                               [](const Window& w, int64_t end) { return w.end_ms < end; });
    if (it != set->end() && it->end_ms == end_ms) return *it;
    return std::nullopt;
  };
  if (std::optional<Window> window = find()) return std::move(*window);
  std::lock_guard<std::mutex> one_change(change_mu_);
  if (std::optional<Window> window = find()) return std::move(*window);  // created meanwhile
  // Sized like the window before it: windows created ahead start taking keys about when the one
  // before stops, and under steady traffic take about as many.
  std::weak_ptr<const WindowKeyFilter> before;
  {
    std::shared_ptr<const Set> set = Current();
    auto it = std::lower_bound(set->begin(), set->end(), end_ms,
                               [](const Window& w, int64_t end) { return w.end_ms < end; });
    if (it != set->begin()) before = std::prev(it)->filter;
  }
  rocksdb::ColumnFamilyHandle* raw = nullptr;
  rocksdb::Status s = db_->CreateColumnFamily(options_, WindowFamilyName(end_ms), &raw);
  if (!s.ok()) return FromRocks(s);
  Insert(Window{end_ms, Own(raw),
                std::make_shared<WindowKeyFilter>(WindowKeyFilter::kMinKeys, std::move(before),
                                                  /*ready=*/true)});
  return *find();
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

namespace {
std::mutex before_fill_mu;
std::shared_ptr<const std::function<void()>> before_fill;  // guarded by before_fill_mu
}  // namespace

void ExpiryWindows::SetBeforeFillForTesting(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(before_fill_mu);
  before_fill = hook ? std::make_shared<const std::function<void()>>(std::move(hook)) : nullptr;
}

Status ExpiryWindows::FillFilters(const std::atomic<bool>& stop) {
  std::shared_ptr<const Set> set = Current();
  // Newest first: the windows that lookups probe the longest.
  for (auto w = set->rbegin(); w != set->rend(); ++w) {
    if (w->filter->ready()) continue;
    std::shared_ptr<const std::function<void()>> hook;
    {
      std::lock_guard<std::mutex> lock(before_fill_mu);
      hook = before_fill;
    }
    if (hook) (*hook)();
    // Every key committed before the iterator was created is in its view; every one committed
    // later was added by its writer before its write. Together: every key of the family.
    rocksdb::ReadOptions read;
    read.fill_cache = false;  // a one-off walk must not evict the serving working set
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read, w->handle.get()));
    size_t since_check = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      w->filter->Add(WindowKeyFilter::Hash(std::string_view(it->key().data(), it->key().size())));
      if (++since_check == 4096) {
        if (stop.load(std::memory_order_relaxed)) return Status::Ok();
        since_check = 0;
      }
    }
    if (!it->status().ok()) return FromRocks(it->status());
    w->filter->MarkReady();
  }
  return Status::Ok();
}

bool ExpiryWindows::FiltersReady() const {
  std::shared_ptr<const Set> set = Current();
  return std::all_of(set->begin(), set->end(), [](const Window& w) { return w.filter->ready(); });
}

uint64_t ExpiryWindows::FilterBytes() const {
  std::shared_ptr<const Set> set = Current();
  uint64_t bytes = 0;
  for (const Window& w : *set) bytes += w.filter->bytes();
  return bytes;
}

rocksdb::ColumnFamilyOptions WindowFamilyOptions(const rocksdb::ColumnFamilyOptions& base,
                                                 int merge_files) {
  rocksdb::ColumnFamilyOptions o = base;
  o.compaction_filter = nullptr;
  o.compaction_filter_factory = nullptr;
  o.table_properties_collector_factories.clear();
  o.compaction_style = rocksdb::kCompactionStyleFIFO;
  o.compaction_options_fifo.max_table_files_size = std::numeric_limits<uint64_t>::max();
  o.ttl = 0;
  o.periodic_compaction_seconds = 0;
  // No memtable bloom filter: RocksDB allocates it (a tenth of the write buffer) with every
  // memtable, empty or not, against the memtable budget all families share, and most windows'
  // memtables sit empty or nearly so. With the hash memtable a miss costs one bucket probe
  // without it; with the skiplist, a walk of the window's (usually small) memtable.
  o.memtable_prefix_bloom_size_ratio = 0;
  // FIFO merges the newest run of files, each smaller than the write buffer, and stops at one
  // that would raise the bytes rewritten per file removed, so a merged file is left alone by
  // later merges (the bytes are rewritten about once). The budget lets `merge_files` full
  // flushes be one merge.
  o.compaction_options_fifo.allow_compaction = merge_files > 0;
  if (merge_files > 0) {
    o.level0_file_num_compaction_trigger = merge_files;
    o.max_compaction_bytes = std::max<uint64_t>(
        o.max_compaction_bytes, uint64_t(merge_files) * o.write_buffer_size * 11 / 10);
  }
  // Filters and indexes held by the table readers, outside the block cache. A hit checks the
  // filter of every newer file in its window, and a window keeps up to `merge_files` flushed
  // files next to merged ones of millions of records, all spanning the key range. RocksDB pins
  // only flushed files' filters: a merged file's whole filter (megabytes, more than a cache
  // shard keeps) was read and checksummed again by every lookup that reached it (3/4 of the
  // server's CPU with 11M records in one window), and in partitions it cost a cache lookup per
  // file per hit (a quarter of the CPU). Held, a check is a probe of memory: 53-81 ns per newer
  // file against 112-116 ns partitioned (BM_Get_Hit_WindowFiles). The price is memory
  // outside the cache, like each window's key filter: 1.25 bytes per record of filter and an
  // index entry per data block (1.6 bytes per short record in the tests; reported as
  // StoreStats::table_readers_bytes). The default family keeps its metadata in the cache.
  if (const auto* table = o.table_factory->GetOptions<rocksdb::BlockBasedTableOptions>()) {
    rocksdb::BlockBasedTableOptions held = *table;
    held.cache_index_and_filter_blocks = false;
    o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(held));
  }
  // A window's files only ever sit in L0 (FIFO): many of them are not a backlog to stall on.
  o.level0_slowdown_writes_trigger = 1 << 30;
  o.level0_stop_writes_trigger = 1 << 30;
  return o;
}

}  // namespace idem
