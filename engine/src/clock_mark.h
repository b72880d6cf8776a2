// The high-water mark of engine time, kept in the database, so that time continues after a
// restart even when the wall clock is then behind (AnchoredClock::ContinueFrom).
//
//   meta key "clock_high_water" = fixed64: milliseconds since the Unix epoch
//
// The mark is a time the engine has used, written with what the engine decided at that time.
// Cheaply, not on every write:
// - in a write batch the engine commits anyway, at most once per kIntervalMs of engine time: one
//   ~30-byte Put in that batch, no extra write or fsync, and exactly as durable as the batch;
// - on its own before the engine compacts expired records (CompactAll, ReclaimExpired, so once
//   per reclaim interval), always synced, and at close.
// The stored mark never goes back: a batch's now_ms is read before it waits for its key locks,
// so an older mark could otherwise commit after a newer one. Mark writes are serialised (once a
// second: the lock is free) and never write below the last value written.
// So after a crash, engine time continues at most kIntervalMs behind the latest write the
// database kept. That is enough: a lease granted in that last second may look up to a second
// longer (the safe direction: no early takeover), and a record may be seen again up to a second
// after a reader saw it expire (as after a one-second NTP correction). Physical removal is held
// to a stricter rule: the compaction filter removes only records expired for the expiry grace
// before BOTH the engine's now and persisted() (expiry_compaction_filter.h), so whatever it
// removed stays expired at any time the engine can restart from. Compaction output is synced,
// so persisted() counts only marks written with sync=true: a mark riding in an unsynced batch
// (async mode, ApplyDeferSync) can be lost in a power cut that keeps the compaction's output.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "idem/result.h"

namespace idem {

class ClockMark {
 public:
  static constexpr int64_t kIntervalMs = 1000;

  // Until Load, persisted() is the lowest time there is: nothing counts as persisted.
  ClockMark() = default;

  // Reads the mark `db` holds (nullopt: none yet) and starts from it; Corruption if it does not
  // decode. A database without a mark (new, or written before marks existed) sets no bound on
  // persisted() until the first mark is written.
  Result<std::optional<int64_t>> Load(rocksdb::DB* db);

  // If the last mark is kIntervalMs old: locks `*held` (the mark lock; hold it until the batch
  // is written, so no other mark commits in between), adds the mark (now_ms, or the last mark
  // written if that is later) to `batch` and returns it. Of the batches that find it due at
  // once, one adds it. One atomic load when not due. A caller holding the engine's synced-write
  // lock takes it first. Call Synced(mark) if the batch was written with sync=true.
  std::optional<int64_t> MaybeAddTo(rocksdb::WriteBatch* batch, int64_t now_ms,
                                    std::unique_lock<std::mutex>* held);
  // The mark `mark` is durable: a write with sync=true that held it succeeded.
  void Synced(int64_t mark);
  // Writes the mark now (now_ms, or the last mark written if that is later).
  Status Write(rocksdb::DB* db, const rocksdb::WriteOptions& options, int64_t now_ms);

  // The highest mark known to be durable.
  int64_t persisted() const { return persisted_.load(std::memory_order_acquire); }

 private:
  std::atomic<int64_t> due_ms_{std::numeric_limits<int64_t>::max()};  // Load sets it
  std::atomic<int64_t> persisted_{std::numeric_limits<int64_t>::min()};
  std::mutex mu_;  // held from choosing a mark's value until its write returns
  int64_t written_ = std::numeric_limits<int64_t>::min();  // guarded by mu_: the last mark written
};

}  // namespace idem
