#include "expiry_compaction_filter.h"

#include <string_view>

#include "key_codec.h"
#include "record_codec.h"

namespace idem {
namespace {

class ExpiryCompactionFilter final : public rocksdb::CompactionFilter {
 public:
  // "now" is read once per compaction: a record that expires during a long compaction is simply
  // left for the next one, and the filter's cost per key stays a header peek.
  explicit ExpiryCompactionFilter(int64_t now_ms) : now_ms_(now_ms) {}

  bool Filter(int /*level*/, const rocksdb::Slice& key, const rocksdb::Slice& value,
              std::string* /*new_value*/, bool* /*value_changed*/) const override {
    if (IsMetaKey(std::string_view(key.data(), key.size()))) return false;
    std::optional<int64_t> expiry = PeekExpiry(std::string_view(value.data(), value.size()));
    return expiry && *expiry != kNeverExpires && *expiry <= now_ms_;
  }
  const char* Name() const override { return "idem.ExpiryCompactionFilter"; }

 private:
  const int64_t now_ms_;
};

}  // namespace

std::unique_ptr<rocksdb::CompactionFilter> ExpiryCompactionFilterFactory::CreateCompactionFilter(
    const rocksdb::CompactionFilter::Context& /*context*/) {
  return std::make_unique<ExpiryCompactionFilter>(clock_->NowMillis());
}

}  // namespace idem
