#include "expiry_compaction_filter.h"

#include <algorithm>
#include <limits>
#include <string_view>

#include "key_codec.h"
#include "record_codec.h"

namespace idem {
namespace {

class ExpiryCompactionFilter final : public rocksdb::CompactionFilter {
 public:
  // The cutoff is read once per compaction: the filter's cost per key stays a header peek, but
  // for the expired records of namespaces that remember keys and their markers.
  ExpiryCompactionFilter(int64_t removable_until_ms, const RememberPeriods* remember)
      : removable_until_ms_(removable_until_ms), remember_(remember) {}

  bool Filter(int /*level*/, const rocksdb::Slice& key, const rocksdb::Slice& value,
              std::string* new_value, bool* value_changed) const override {
    const std::string_view rocks_key(key.data(), key.size());
    if (IsMetaKey(rocks_key)) return false;
    const std::string_view bytes(value.data(), value.size());
    if (remember_->None()) {
      std::optional<int64_t> expiry = PeekExpiry(bytes);
      return expiry && *expiry != kNeverExpires && *expiry <= removable_until_ms_;
    }
    std::string_view ns, user_key;
    if (!ParseRecordKey(rocks_key, &ns, &user_key)) return false;
    switch (DecideReclaim(bytes, removable_until_ms_, remember_->For(ns), new_value)) {
      case Reclaim::kKeep:
        return false;
      case Reclaim::kRemove:
        return true;
      case Reclaim::kRewrite:
        *value_changed = true;
        return false;
    }
    return false;
  }
  const char* Name() const override { return "idem.ExpiryCompactionFilter"; }

 private:
  const int64_t removable_until_ms_;
  const RememberPeriods* remember_;  // the factory's, which outlives its filters
};

}  // namespace

int64_t RemovableUntil(int64_t now_ms, int64_t grace_ms, const ClockMark* mark) {
  const int64_t until = mark ? std::min(now_ms, mark->persisted()) : now_ms;
  // Saturating: persisted() is the lowest int64 until the mark is loaded.
  return until < std::numeric_limits<int64_t>::min() + grace_ms
             ? std::numeric_limits<int64_t>::min()
             : until - grace_ms;
}

std::unique_ptr<rocksdb::CompactionFilter> ExpiryCompactionFilterFactory::CreateCompactionFilter(
    const rocksdb::CompactionFilter::Context& /*context*/) {
  return std::make_unique<ExpiryCompactionFilter>(
      RemovableUntil(clock_->NowMillis(), grace_ms_, mark_.get()), &remember_);
}

}  // namespace idem
