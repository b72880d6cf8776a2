#include "clock_mark.h"

#include <algorithm>
#include <string>

#include "coding.h"
#include "key_codec.h"
#include "rocks_status.h"

namespace idem {
namespace {

const std::string& MarkKey() {
  static const std::string key = MetaKey("clock_high_water");
  return key;
}

std::string EncodeMark(int64_t ms) {
  std::string value;
  coding::PutFixed64(&value, static_cast<uint64_t>(ms));
  return value;
}

void RaiseTo(std::atomic<int64_t>* value, int64_t to) {
  int64_t seen = value->load(std::memory_order_relaxed);
  while (seen < to && !value->compare_exchange_weak(seen, to, std::memory_order_acq_rel)) {
  }
}

}  // namespace

Result<std::optional<int64_t>> ClockMark::Load(rocksdb::DB* db) {
  std::string value;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), MarkKey(), &value);
  if (!s.ok() && !s.IsNotFound()) return FromRocks(s);
  std::optional<int64_t> mark;
  if (s.ok()) {
    if (value.size() != 8) return Status::Corruption("clock high-water mark is not 8 bytes");
    mark = static_cast<int64_t>(coding::DecodeFixed64(value.data()));
  }
  persisted_.store(mark ? *mark : std::numeric_limits<int64_t>::max(), std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    written_ = mark ? *mark : std::numeric_limits<int64_t>::min();
  }
  due_ms_.store(mark ? *mark + kIntervalMs : std::numeric_limits<int64_t>::min(),
                std::memory_order_relaxed);
  return mark;
}

std::optional<int64_t> ClockMark::MaybeAddTo(rocksdb::WriteBatch* batch, int64_t now_ms,
                                             std::unique_lock<std::mutex>* held) {
  int64_t due = due_ms_.load(std::memory_order_relaxed);
  if (now_ms < due) return std::nullopt;
  if (!due_ms_.compare_exchange_strong(due, now_ms + kIntervalMs, std::memory_order_relaxed)) {
    return std::nullopt;  // another batch took it
  }
  std::unique_lock<std::mutex> lock(mu_);
  // Counted as written even if the batch fails: its write may still reach the disk.
  written_ = std::max(written_, now_ms);
  if (!batch->Put(MarkKey(), EncodeMark(written_)).ok()) return std::nullopt;
  *held = std::move(lock);
  return written_;
}

void ClockMark::Synced(int64_t mark) {
  // The first mark written replaces "no bound" (max) of a database that had none.
  int64_t seen = persisted_.load(std::memory_order_relaxed);
  if (seen == std::numeric_limits<int64_t>::max() &&
      persisted_.compare_exchange_strong(seen, mark, std::memory_order_acq_rel)) {
    return;
  }
  RaiseTo(&persisted_, mark);
}

Status ClockMark::Write(rocksdb::DB* db, const rocksdb::WriteOptions& options, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  written_ = std::max(written_, now_ms);
  rocksdb::Status s = db->Put(options, MarkKey(), EncodeMark(written_));
  if (!s.ok()) return FromRocks(s);
  if (options.sync) Synced(written_);
  RaiseTo(&due_ms_, written_ + kIntervalMs);
  return Status::Ok();
}

}  // namespace idem
