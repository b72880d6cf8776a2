// Remembered keys ("seen but expired").
//
// The problem: a finished request's record (its stored response) lives for its retention and
// then expires; a retry that arrives later finds nothing and runs the work again. Keeping every
// response longer costs disk in proportion to the responses. A namespace with a remember period
// (RetentionPolicy::remember_ms) instead keeps, for that long after the record expired, a
// marker of it — its kind, fingerprint and completion time; no payload, owner or status — on
// which Begin and Insert answer EXPIRED instead of starting (op_decision.h has the rules).
//
// The mechanism: the compaction filter rewrites an expired finished record into its marker
// (its change-value decision: no write of its own) and drops the marker when the period ends.
// Reads do not wait for that: a record that has expired but is still stored in full is read as
// its marker, so what an operation sees never depends on when compaction ran. The period is
// counted from the record's expiry, with the namespace's remember period as it is *now*, on
// reads and in the filter alike: a changed period applies the same to markers already written
// and to records not rewritten yet.
//
// Which records leave a marker: finished attempts (any status but IN_PROGRESS: completed, or
// failed and kept by LifecyclePolicy::remember_failures), plain and state-machine records. Not
// tokens (their keys are random: no client retries one), locks (an expired lock is a released
// one), attempts still in progress (the work never finished: a retry must be able to run it),
// records without a kind (written before kinds: which scheme they belong to is unknown), nor
// records that never expire.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "idem/options.h"
#include "idem/record.h"
#include "idem/result.h"
#include "record_codec.h"

namespace idem {

// Every namespace's remember period (RetentionPolicy::remember_ms), for the engine and the
// compaction filter alike.
class RememberPeriods {
 public:
  explicit RememberPeriods(const EngineOptions& options);
  // The namespace's remember period in ms; 0: it does not remember keys.
  int64_t For(std::string_view ns) const;
  // Whether no namespace remembers keys (the filter then only removes).
  bool None() const { return none_; }

 private:
  int64_t default_ms_ = 0;
  std::map<std::string, int64_t, std::less<>> by_ns_;
  bool none_ = true;
};

// When the record can be removed at the earliest: its expiry, plus the remember period its
// marker may keep it for; 0: never.
int64_t DeathOf(const Record& record, int64_t remember_ms);

// Whether `record`, once expired, leaves a marker (see the top of this file).
bool LeavesMarker(const Record& record);

// The marker an expired record leaves in a namespace that remembers keys for `remember_ms`.
Marker MarkerOf(const Record& expired, int64_t remember_ms);

// What answers about a marker carry (Outcome::kExpired, and Get/Delete): kind, fingerprint,
// updated_ms (when the record finished) and expires_at_ms (when the key is forgotten: the
// record's expiry + `remember_ms`). Status, payload, owner, version and fence are empty.
Record RememberedRecord(const Marker& marker, int64_t remember_ms);

// What a key holds at `now_ms`, in a namespace that remembers keys for `remember_ms` (0: not).
struct StoredKey {
  std::optional<Record> live;        // the live record
  std::optional<Record> remembered;  // without a live record: the key's marker, as above
};

// Reads a stored value (a record or a marker). Expiry is enforced here, on every read: the
// compaction filter may not have removed or rewritten the value yet. Corruption when the value
// does not decode (a record expired past any remember period is not decoded at all).
Result<StoredKey> ReadStoredValue(std::string_view value, int64_t now_ms, int64_t remember_ms);

// What the compaction filter does with a stored value, given that values expired at or before
// `removable_until_ms` may go (expiry_compaction_filter.h). kRewrite: replace it with
// `*marker` (an encoded marker). A value that does not decode is kept.
enum class Reclaim : uint8_t { kKeep, kRemove, kRewrite };
Reclaim DecideReclaim(std::string_view value, int64_t removable_until_ms, int64_t remember_ms,
                      std::string* marker);

}  // namespace idem
