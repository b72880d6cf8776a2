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
  // The cutoff is read once per compaction: the filter's cost per key stays a header peek.
  explicit ExpiryCompactionFilter(int64_t removable_until_ms)
      : removable_until_ms_(removable_until_ms) {}

  bool Filter(int /*level*/, const rocksdb::Slice& key, const rocksdb::Slice& value,
              std::string* /*new_value*/, bool* /*value_changed*/) const override {
    if (IsMetaKey(std::string_view(key.data(), key.size()))) return false;
    std::optional<int64_t> expiry = PeekExpiry(std::string_view(value.data(), value.size()));
    return expiry && *expiry != kNeverExpires && *expiry <= removable_until_ms_;
  }
  const char* Name() const override { return "idem.ExpiryCompactionFilter"; }

 private:
  const int64_t removable_until_ms_;
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
      RemovableUntil(clock_->NowMillis(), grace_ms_, mark_.get()));
}

}  // namespace idem
