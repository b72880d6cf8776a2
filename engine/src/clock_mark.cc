#include "clock_mark.h"

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
  due_ms_.store(mark ? *mark + kIntervalMs : std::numeric_limits<int64_t>::min(),
                std::memory_order_relaxed);
  return mark;
}

bool ClockMark::MaybeAddTo(rocksdb::WriteBatch* batch, int64_t now_ms) {
  int64_t due = due_ms_.load(std::memory_order_relaxed);
  if (now_ms < due) return false;
  if (!due_ms_.compare_exchange_strong(due, now_ms + kIntervalMs, std::memory_order_relaxed)) {
    return false;  // another batch took it
  }
  return batch->Put(MarkKey(), EncodeMark(now_ms)).ok();
}

void ClockMark::Persisted(int64_t now_ms) {
  // The first mark written replaces "no bound" (max) of a database that had none.
  int64_t seen = persisted_.load(std::memory_order_relaxed);
  if (seen == std::numeric_limits<int64_t>::max() &&
      persisted_.compare_exchange_strong(seen, now_ms, std::memory_order_acq_rel)) {
    return;
  }
  RaiseTo(&persisted_, now_ms);
}

Status ClockMark::Write(rocksdb::DB* db, const rocksdb::WriteOptions& options, int64_t now_ms) {
  rocksdb::Status s = db->Put(options, MarkKey(), EncodeMark(now_ms));
  if (!s.ok()) return FromRocks(s);
  Persisted(now_ms);
  RaiseTo(&due_ms_, now_ms + kIntervalMs);
  return Status::Ok();
}

}  // namespace idem
