#include "remembered_key.h"

#include <limits>

#include "idem/operation.h"

namespace idem {

RememberPeriods::RememberPeriods(const EngineOptions& options)
    : default_ms_(options.default_retention.remember_ms) {
  none_ = default_ms_ == 0;
  for (const auto& [ns, policy] : options.retention) {
    by_ns_.emplace(ns, policy.remember_ms);
    none_ = none_ && policy.remember_ms == 0;
  }
}

int64_t RememberPeriods::For(std::string_view ns) const {
  auto it = by_ns_.find(ns);
  return it == by_ns_.end() ? default_ms_ : it->second;
}

int64_t DeathOf(const Record& record, int64_t remember_ms) {
  if (record.expires_at_ms == kNeverExpires) return 0;
  if (record.expires_at_ms > std::numeric_limits<int64_t>::max() - remember_ms) {
    return std::numeric_limits<int64_t>::max();
  }
  return record.expires_at_ms + remember_ms;
}

bool LeavesMarker(const Record& record) {
  if (record.expires_at_ms == kNeverExpires) return false;
  switch (record.kind) {
    case RecordKind::kPlain:
    case RecordKind::kStateMachine:
      return true;
    case RecordKind::kAttempt:
      return record.status != kStatusInProgress;
    case RecordKind::kUntyped:
    case RecordKind::kToken:
    case RecordKind::kLock:
      return false;
  }
  return false;
}

Marker MarkerOf(const Record& expired, int64_t remember_ms) {
  Marker m;
  m.kind = expired.kind;
  m.expires_at_ms = expired.expires_at_ms + remember_ms;
  m.record_expired_ms = expired.expires_at_ms;
  m.completed_ms = expired.updated_ms;
  m.fingerprint = expired.fingerprint;
  return m;
}

Record RememberedRecord(const Marker& marker, int64_t remember_ms) {
  Record r;
  r.kind = marker.kind;
  r.fingerprint = marker.fingerprint;
  r.updated_ms = marker.completed_ms;
  r.expires_at_ms = marker.record_expired_ms + remember_ms;
  return r;
}

Result<StoredKey> ReadStoredValue(std::string_view value, int64_t now_ms, int64_t remember_ms) {
  StoredKey key;
  if (IsMarker(value)) {
    Marker marker;
    if (Status st = DecodeMarker(value, &marker); !st.ok()) return st;
    if (remember_ms > 0 && now_ms < marker.record_expired_ms + remember_ms) {
      key.remembered = RememberedRecord(marker, remember_ms);
    }
    return key;
  }
  std::optional<int64_t> expiry = PeekExpiry(value);
  const bool expired = expiry && *expiry != kNeverExpires && *expiry <= now_ms;
  // Forgotten: expired, and past any remember period. Not decoded, as before keys were remembered.
  if (expired && (remember_ms == 0 || now_ms >= *expiry + remember_ms)) return key;
  Record record;
  if (Status st = DecodeRecord(value, &record); !st.ok()) return st;
  if (!expired) {
    key.live = std::move(record);
  } else if (LeavesMarker(record)) {
    key.remembered = RememberedRecord(MarkerOf(record, remember_ms), remember_ms);
  }
  return key;
}

Reclaim DecideReclaim(std::string_view value, int64_t removable_until_ms, int64_t remember_ms,
                      std::string* marker) {
  std::optional<int64_t> expiry = PeekExpiry(value);
  if (!expiry) return Reclaim::kKeep;
  if (IsMarker(value)) {
    Marker m;
    if (!DecodeMarker(value, &m).ok()) return Reclaim::kKeep;
    return m.record_expired_ms + remember_ms <= removable_until_ms ? Reclaim::kRemove
                                                                   : Reclaim::kKeep;
  }
  if (*expiry == kNeverExpires || *expiry > removable_until_ms) return Reclaim::kKeep;
  if (remember_ms == 0 || *expiry + remember_ms <= removable_until_ms) return Reclaim::kRemove;
  Record record;
  if (!DecodeRecord(value, &record).ok()) return Reclaim::kKeep;
  if (!LeavesMarker(record)) return Reclaim::kRemove;
  marker->clear();
  EncodeMarker(MarkerOf(record, remember_ms), marker);
  return Reclaim::kRewrite;
}

}  // namespace idem
