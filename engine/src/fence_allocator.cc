#include "fence_allocator.h"

#include <string>

#include "coding.h"
#include "key_codec.h"
#include "rocks_status.h"

namespace idem {
namespace {
const std::string& ReservationKey() {
  static const std::string key = MetaKey("fence_reserved");
  return key;
}
}  // namespace

Result<uint64_t> FenceAllocator::LoadReservation(rocksdb::DB* db) {
  std::string value;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), ReservationKey(), &value);
  if (s.IsNotFound()) return uint64_t{1};  // fresh store: fences start at 1
  if (!s.ok()) return FromRocks(s);
  if (value.size() != 8) return Status::Corruption("fence reservation is not 8 bytes");
  return coding::DecodeFixed64(value.data());
}

Status FenceAllocator::StoreReservation(rocksdb::DB* db, uint64_t reserved) {
  std::string value;
  coding::PutFixed64(&value, reserved);
  rocksdb::WriteOptions sync;
  sync.sync = true;
  return FromRocks(db->Put(sync, ReservationKey(), value));
}

Result<uint64_t> FenceAllocator::Next() {
  std::lock_guard<std::mutex> lock(mu_);
  if (next_ == reserved_) {
    std::string value;
    coding::PutFixed64(&value, reserved_ + kFenceChunk);
    rocksdb::WriteOptions sync;
    sync.sync = true;
    std::shared_lock<std::shared_mutex> synced_write;
    if (synced_writes_) synced_write = std::shared_lock<std::shared_mutex>(*synced_writes_);
    if (health_ && health_->suspended()) return health_->Refusal();
    rocksdb::Status s = db_->Put(sync, ReservationKey(), value);
    if (!s.ok()) return FromRocks(s);
    reserved_ += kFenceChunk;
  }
  return next_++;
}

uint64_t FenceAllocator::next() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_;
}

}  // namespace idem
