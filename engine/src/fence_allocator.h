// Hands out fences: numbers strictly increasing across the whole store and never reused, not
// even after a crash or power cut.
//
// Only a reservation is persisted: the meta key "fence_reserved" = R promises that no fence >= R
// has been handed out. Fences come from an in-memory counter; before the counter reaches R, the
// allocator durably (fsync, whatever the store's durability mode) raises R by kFenceChunk, and
// only then hands the number out. On open the counter starts at R, skipping whatever the
// previous run reserved but did not use. So a fence that any write (acknowledged or not) ever
// carried is below the persisted R, and every later fence is >= R: none repeats. The cost is one
// synced write per kFenceChunk fences.
#pragma once

#include <cstdint>
#include <mutex>
#include <shared_mutex>

#include <rocksdb/db.h>

#include "idem/result.h"
#include "write_health.h"

namespace idem {

inline constexpr uint64_t kFenceChunk = 1 << 16;

class FenceAllocator {
 public:
  // Reads the reservation from `db` (which must outlive this object).
  static Result<uint64_t> LoadReservation(rocksdb::DB* db);
  // Durably sets the reservation (for a repair, with no allocator running on `db`).
  static Status StoreReservation(rocksdb::DB* db, uint64_t reserved);
  // `synced_writes` (optional): held shared around the reservation's synced write (see the
  // engine's SyncWal for why). `health` (optional): a reservation is refused while writes are
  // suspended, checked after taking `synced_writes` (a failed SyncWal suspends before it
  // releases the lock; a reservation appended after it could be acknowledged by a later
  // fdatasync on a WAL whose pages were lost).
  FenceAllocator(rocksdb::DB* db, uint64_t reserved, std::shared_mutex* synced_writes = nullptr,
                 const WriteHealth* health = nullptr)
      : db_(db),
        synced_writes_(synced_writes),
        health_(health),
        next_(reserved),
        reserved_(reserved) {}

  // The next fence; IOError if the reservation could not be made durable or writes are
  // suspended when one is needed.
  Result<uint64_t> Next();
  // Every fence handed out so far is below this.
  uint64_t next() const;

 private:
  rocksdb::DB* const db_;
  std::shared_mutex* const synced_writes_;
  const WriteHealth* const health_;
  mutable std::mutex mu_;
  uint64_t next_;      // guarded by mu_
  uint64_t reserved_;  // guarded by mu_: persisted reservation, next_ <= reserved_
};

}  // namespace idem
