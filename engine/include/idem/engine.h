// Engine: the embedded, RocksDB-backed Store.
//
//   idem::EngineOptions options;
//   auto engine = idem::Engine::Open("/var/lib/idem", options);
//   if (!engine.ok()) { ... engine.status() ... }
//   auto r = (*engine)->Insert("payments", "order-42", "PENDING");
//   if (r.ok() && r->outcome == idem::Outcome::kExists) { /* duplicate: replay r->record */ }
//
// Thread-safe: any number of threads may call any method concurrently. Closing is destroying.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "idem/options.h"
#include "idem/result.h"
#include "idem/store.h"

namespace idem {

struct ReclaimReport {
  uint64_t files_examined = 0;
  uint64_t files_compacted = 0;
};

class Engine : public Store {
 public:
  // Opens (creating if allowed) the database in `dir`.
  static Result<std::unique_ptr<Engine>> Open(const std::string& dir, EngineOptions options);

  // Apply (the Store contract) blocks the calling thread for Begin ops with wait_ms > 0 that find
  // an attempt in progress, until it completes, aborts, its lease ends or the wait runs out.
  // ApplyNoWait answers such ops at once (IN_PROGRESS): for servers, which wait without a thread
  // per waiter by combining it with Watch.
  virtual Status ApplyNoWait(std::span<const Op> ops, std::vector<Result<OpResult>>* results) = 0;

  // Group commit with the fsync off the applying thread, for servers under Durability::kSync:
  // ApplyDeferSync is ApplyNoWait whose writes reach the WAL (the OS) but are not fsynced; they
  // are visible to later operations at once. SyncWal() fsyncs every write that completed before
  // it was called. The caller must not acknowledge anything applied this way, or anything
  // applied after it (it may have read such a write), before a SyncWal() that began after it
  // returned. Apply and ApplyNoWait keep their contract regardless: when they may have read a
  // write not yet synced, they sync before returning. Under kAsync both are plain ApplyNoWait.
  // *needs_sync says whether this batch must wait for a SyncWal at all: false when it wrote
  // nothing and every deferred write it could have read was already synced (a duplicate or a
  // Get on an idle server), so its results may be acknowledged at once.
  virtual Status ApplyDeferSync(std::span<const Op> ops, std::vector<Result<OpResult>>* results,
                                bool* needs_sync) = 0;
  virtual Status SyncWal() = 0;

  // Calls `on_change` once, on the committing thread and after the commit, when a write to
  // (ns, key) is next committed; or never, if Unwatch comes first. It must not block or call
  // into the engine. Register BEFORE reading the state you wait on, so no change is missed.
  using WatchId = uint64_t;
  virtual WatchId Watch(std::string_view ns, std::string_view key,
                        std::function<void()> on_change) = 0;
  virtual void Unwatch(WatchId id) = 0;

  // Runs a full compaction: every expired record is physically removed (for tests and admins).
  virtual Status CompactAll() = 0;
  // Compacts the table files whose expired fraction reached options.reclaim_min_expired_fraction
  // (what the background reclaimer does every reclaim_interval_ms).
  virtual Result<ReclaimReport> ReclaimExpired() = 0;
  // Writes the memtable to a table file (makes on-disk statistics current).
  virtual Status Flush() = 0;
  // Blocks until RocksDB has no flush or compaction pending or running, or `timeout_ms` passes
  // (TimedOut). Background work runs in real time; simulations on a ManualClock call this so
  // that disk figures do not depend on how fast the machine happened to be.
  virtual Status WaitForBackgroundWork(int64_t timeout_ms) = 0;
  // The options in force (after defaults were filled in).
  virtual const EngineOptions& options() const = 0;
};

}  // namespace idem
