// Operations and their results: the vocabulary shared by the embedded engine, the wire protocol
// and the network client.
//
// An Op BORROWS its strings (std::string_view): whatever they point to must stay alive until the
// call that takes the Op returns. Results own their data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "idem/record.h"

namespace idem {

// Statuses the lifecycle, token and lock operations give the records they manage.
inline constexpr std::string_view kStatusInProgress = "IN_PROGRESS";
inline constexpr std::string_view kStatusCompleted = "COMPLETED";
inline constexpr std::string_view kStatusFailed = "FAILED";
inline constexpr std::string_view kStatusIssued = "ISSUED";
inline constexpr std::string_view kStatusConsumed = "CONSUMED";
inline constexpr std::string_view kStatusLocked = "LOCKED";

// TTL arguments, in milliseconds: > 0 is an explicit time to live; these two are special.
inline constexpr int64_t kDefaultTtl = 0;  // use the namespace's retention policy default
inline constexpr int64_t kForever = -1;    // never expire (the policy must allow it)

// Numbers are part of the wire protocol: append only.
enum class OpType : uint8_t {
  kInsert = 1,         // insert-if-absent
  kCompareAndSet = 2,  // conditional update
  kGet = 3,
  kDelete = 4,  // conditional delete
  // Request lifecycle (unique key with leases and fencing).
  kBegin = 5,
  kComplete = 6,
  kAbort = 7,
  kHeartbeat = 8,
  // One-shot tokens.
  kIssueToken = 9,
  kConsumeToken = 10,
  // Locks with leases and fencing.
  kLock = 11,
  kRenew = 12,
  kUnlock = 13,
  // State machines.
  kTransition = 14,
};

// Every outcome an operation can have. Numbers are part of the wire protocol: append only.
enum class Outcome : uint8_t {
  kInserted = 1,          // Insert created the record (returned)
  kExists = 2,            // Insert found a live record (returned; see fingerprint_matches)
  kApplied = 3,           // CompareAndSet changed the record (new record returned)
  kConditionFailed = 4,   // CompareAndSet/Delete condition false (current record returned)
  kNotFound = 5,          // no live record at that key
  kDeleted = 6,           // Delete removed the record (the removed record is returned)
  kFound = 7,             // Get found the record (returned)
  kStarted = 8,           // Begin: the caller owns the attempt (record.fence is its fence)
  kInProgress = 9,        // Begin: another attempt holds a live lease (until record.lease_until_ms)
  kCompleted = 10,        // Begin: already done; record.payload is the stored response (a replay)
  kMismatch = 11,         // Begin: same key, different fingerprint
  kFenceMismatch = 12,    // Complete/Abort/Heartbeat/Renew/Unlock by a holder that lost the key
  kReleased = 13,         // Abort/Unlock released the key
  kIssued = 14,           // IssueToken: OpResult::token holds the new token
  kConsumed = 15,         // ConsumeToken: first consume
  kAlreadyConsumed = 16,  // ConsumeToken: consumed before
  kAcquired = 17,         // Lock: the caller holds the lock (record.fence)
  kHeld = 18,             // Lock: someone else holds it (record.owner, record.lease_until_ms)
  kAlready = 19,          // Transition/Complete: already in the requested state (success)
  kIllegal = 20,          // Transition/CompareAndSet: the namespace's state graph forbids it
  kWrongKind = 21,        // the record belongs to another scheme (record.kind); nothing changed
};

// Stable upper-case name ("INSERTED", "CONDITION_FAILED", ...): idemctl's JSON uses it.
std::string_view OutcomeName(Outcome outcome);
std::string_view OpTypeName(OpType type);

// A condition on the current record; every part that is set must hold.
struct Condition {
  std::vector<std::string_view> status_in;  // status is one of these (empty: any status)
  std::optional<uint64_t> version;          // version equals (optimistic locking)
  std::optional<uint64_t> fence;            // fence equals (the current holder)

  bool Empty() const { return status_in.empty() && !version && !fence; }
};

// What CompareAndSet changes; unset parts keep their value. Any applied update bumps the version.
struct Update {
  std::optional<std::string_view> status;
  std::optional<std::string_view> payload;
  std::optional<int64_t> ttl_ms;  // new expiry = now + ttl (kDefaultTtl, kForever as above)
};

// What each operation reads from an Op (fields not listed are ignored):
//   Insert        ns key status payload fingerprint ttl_ms
//   CompareAndSet ns key condition update
//   Get           ns key
//   Delete        ns key condition
//   Begin         ns key fingerprint owner lease_ms wait_ms ttl_ms(record TTL while in progress)
//   Complete      ns key condition.fence payload(response) status(default COMPLETED) ttl_ms
//   Abort         ns key condition.fence payload(failure response, kept if the policy
//                 remembers failures)
//   Heartbeat     ns key condition.fence lease_ms
//   IssueToken    ns ttl_ms payload(what the token authorizes; returned when consumed)
//                 (the key is generated: OpResult::token)
//   ConsumeToken  ns key(the token)
//   Lock          ns key owner lease_ms
//   Renew         ns key condition.fence lease_ms
//   Unlock        ns key condition.fence
//   Transition    ns key status(target) condition.version update.payload
// lease_ms: 0 = the namespace's default lease. See docs/recipes.md for how they combine.
struct Op {
  OpType type = OpType::kGet;
  std::string_view ns;
  std::string_view key;
  std::string_view status;
  std::string_view payload;
  std::string_view fingerprint;
  std::string_view owner;
  int64_t ttl_ms = kDefaultTtl;
  int64_t lease_ms = 0;
  int64_t wait_ms = 0;  // Begin: how long to wait for an attempt in progress (0 = answer now)
  Condition condition;
  Update update;

  static Op Insert(std::string_view ns, std::string_view key, std::string_view status,
                   std::string_view payload = {}, std::string_view fingerprint = {},
                   int64_t ttl_ms = kDefaultTtl);
  static Op CompareAndSet(std::string_view ns, std::string_view key, Condition condition,
                          Update update);
  static Op Get(std::string_view ns, std::string_view key);
  static Op Delete(std::string_view ns, std::string_view key, Condition condition = {});
  static Op Begin(std::string_view ns, std::string_view key, std::string_view fingerprint = {},
                  int64_t lease_ms = 0, int64_t wait_ms = 0, std::string_view owner = {});
  static Op Complete(std::string_view ns, std::string_view key, uint64_t fence,
                     std::string_view response, int64_t ttl_ms = kDefaultTtl);
  static Op Abort(std::string_view ns, std::string_view key, uint64_t fence);
  static Op Heartbeat(std::string_view ns, std::string_view key, uint64_t fence,
                      int64_t lease_ms = 0);
  static Op IssueToken(std::string_view ns, int64_t ttl_ms = kDefaultTtl);
  static Op ConsumeToken(std::string_view ns, std::string_view token);
  static Op Lock(std::string_view ns, std::string_view key, std::string_view owner,
                 int64_t lease_ms = 0);
  static Op Renew(std::string_view ns, std::string_view key, uint64_t fence, int64_t lease_ms = 0);
  static Op Unlock(std::string_view ns, std::string_view key, uint64_t fence);
  static Op Transition(std::string_view ns, std::string_view key, std::string_view to_status,
                       std::optional<uint64_t> expect_version = {});
};

struct OpResult {
  Outcome outcome = Outcome::kNotFound;
  // The record the outcome refers to: the new one (INSERTED, APPLIED), the current one (EXISTS,
  // CONDITION_FAILED, FOUND) or the removed one (DELETED). Absent for NOT_FOUND.
  std::optional<Record> record;
  // EXISTS only: false when the Insert carried a fingerprint and the stored record's differs
  // (same key reused with a different request).
  bool fingerprint_matches = true;
  // IssueToken only: the generated token (the key to pass to ConsumeToken).
  std::string token;
};

}  // namespace idem
