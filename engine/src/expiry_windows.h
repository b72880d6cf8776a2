// The column families of the expiry-window layout (docs/design.md §2, "Expiry windows").
//
// A record that can die lives in the column family of the window its death falls in, named
// `expires-<end>`: every record in it is dead at `end` (ms since the epoch). Once the window has
// ended the expiry grace ago, the whole family is dropped: its files leave the disk and nothing
// live is rewritten. A window is named by its end, not its start, because the end is all the
// probe and drop rules need, and it stays right when the window width changes between runs.
//
// Each window carries a filter of the keys written to it (window_key_filter.h), so that a lookup
// skips the windows that do not hold its key. Whoever puts a key into a window's family adds it
// to the window's filter first, before the RocksDB write; a window created by this run is empty,
// so its filter is ready at once; one opened with the database is not ready until FillFilters
// has added the family's keys.
//
// Lifetime: a snapshot (Current) keeps every handle and filter in it alive; in_use() keeps drops
// out while a batch goes from its lookups to its write.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include "idem/result.h"
#include "window_key_filter.h"

namespace idem {

class ExpiryWindows {
 public:
  struct Window {
    int64_t end_ms = 0;
    std::shared_ptr<rocksdb::ColumnFamilyHandle> handle;
    std::shared_ptr<WindowKeyFilter> filter;  // never null
  };
  using Set = std::vector<Window>;  // ascending by end

  // `db` outlives this object; `width_ms` is the width of the windows this run creates.
  ExpiryWindows(rocksdb::DB* db, int64_t width_ms, rocksdb::ColumnFamilyOptions options);
  ~ExpiryWindows();  // destroys the handles: before the DB closes

  // A family opened with the database. Its filter is not ready until FillFilters.
  void Adopt(int64_t end_ms, rocksdb::ColumnFamilyHandle* handle);

  // The end of the window that holds deaths at `death_ms` in this run: the next multiple of the
  // width above it.
  int64_t EndFor(int64_t death_ms) const;

  // Every window, as of now; the snapshot keeps its handles valid.
  std::shared_ptr<const Set> Current() const;

  // The window that ends at `end_ms`, its family created if this run has none.
  Result<Window> Open(int64_t end_ms);

  // Adds the keys of each window whose filter is not ready to its filter, then marks it ready;
  // a window dropped meanwhile is read all the same (its handle stays valid). Returns early,
  // leaving the rest not ready, once `stop` is set (checked between batches of keys), or with
  // RocksDB's error, converted, when a family cannot be read: a filter that is not ready only
  // costs its window's probes.
  Status FillFilters(const std::atomic<bool>& stop);
  // Whether every window's filter is ready.
  bool FiltersReady() const;
  // Bytes of every window's filter.
  uint64_t FilterBytes() const;
  // Tests only: runs before FillFilters reads each window, so that a test can hold the filling
  // back and look up keys while filters are not ready. Null: none.
  static void SetBeforeFillForTesting(std::function<void()> hook);

  // Held shared by whoever reads from or writes to window families between choosing them and
  // using them (a batch, from its lookups to its write); a drop holds it exclusively, so no
  // write ever reaches a family that is being dropped.
  std::shared_mutex& in_use() { return in_use_; }

  // Drops every window that ended at or before `until_ms` (the caller's removal bound). Returns
  // how many; a failed drop stops the pass and leaves that window in place.
  Result<size_t> DropEndedBy(int64_t until_ms);

 private:
  std::shared_ptr<rocksdb::ColumnFamilyHandle> Own(rocksdb::ColumnFamilyHandle* handle);
  void Insert(Window window);

  rocksdb::DB* const db_;
  const int64_t width_ms_;
  const rocksdb::ColumnFamilyOptions options_;
  std::shared_mutex in_use_;  // before change_mu_ when both are taken
  mutable std::mutex mu_;     // guards windows_; held briefly, never across RocksDB calls
  std::mutex change_mu_;      // one creation or drop at a time
  std::shared_ptr<const Set> windows_;
};

// The options of a window's family: the default family's, without the expiry compaction filter
// (a window is dropped whole) and under FIFO compaction that never deletes by size or age (only
// the drop removes data), merging a window's small files once `merge_files` of them have
// accumulated (0: never; EngineOptions::expiry_window_merge_files).
rocksdb::ColumnFamilyOptions WindowFamilyOptions(const rocksdb::ColumnFamilyOptions& base,
                                                 int merge_files);

}  // namespace idem
