// Record: what idemstore keeps at (namespace, key). The stored byte layout is in
// engine/src/record_codec.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace idem {

// Expiry value meaning "never expires" (only where the namespace's policy allows it).
inline constexpr int64_t kNeverExpires = 0;

// Which scheme a record belongs to, so that another scheme's operation cannot change it (it is
// answered Outcome::kWrongKind). Set by the operation that starts the record's life and kept
// until the record ends; docs/recipes.md ("Record kinds") has which operation works on which.
// Numbers are stored (engine/src/record_codec.h) and sent on the wire: append only.
enum class RecordKind : uint8_t {
  // Written before records had kinds (stored kind byte 0). Every operation accepts it, as it
  // did then; the first operation that writes it gives it that operation's kind.
  kUntyped = 0,
  kPlain = 1,         // Insert, in a namespace without a state graph
  kAttempt = 2,       // Begin (the request lifecycle)
  kToken = 3,         // IssueToken
  kLock = 4,          // Lock
  kStateMachine = 5,  // Insert, in a namespace with a state graph
};
inline constexpr RecordKind kLastRecordKind = RecordKind::kStateMachine;

// "untyped", "plain", "attempt", "token", "lock", "state-machine"; "unknown" for a number this
// build does not know (a newer server's).
std::string_view RecordKindName(RecordKind kind);

struct Record {
  std::string status;    // short label such as "PENDING" or "PAID" (1..limits.max_status_bytes)
  uint64_t version = 0;  // 1 at insert, +1 on every change
  uint64_t fence = 0;    // strictly increasing across the store, never reused (see docs/design.md)
  std::string fingerprint;  // opaque caller bytes (e.g. a request hash); empty = none
  std::string payload;      // the stored response, or any bytes
  int64_t created_ms = 0;   // Clock time of the insert that created this record's life
  int64_t updated_ms = 0;   // Clock time of the last change
  int64_t expires_at_ms = kNeverExpires;  // absolute; the record is absent from this instant on
  // Lease, for work in progress and locks: who holds the record and until when (0 = no lease).
  std::string owner;
  int64_t lease_until_ms = 0;
  RecordKind kind = RecordKind::kUntyped;

  bool ExpiredAt(int64_t now_ms) const {
    return expires_at_ms != kNeverExpires && expires_at_ms <= now_ms;
  }
  bool operator==(const Record&) const = default;
};

}  // namespace idem
