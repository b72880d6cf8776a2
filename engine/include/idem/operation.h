// Operations and their results: the vocabulary shared by the embedded engine, the wire protocol
// and the network client.
//
// Build an Op with the factory for its kind, which takes one struct of named fields (the fields
// that kind reads, nothing else), using designated initializers:
//
//   Op op = Op::Begin({.ns = "pay", .key = key, .fingerprint = fp, .lease = 30s, .wait = 2s});
//
// (with `using namespace std::chrono_literals`). A field left out is "not given" (std::nullopt,
// an empty string, no fence): the namespace's default applies where there is one. Durations are
// std::chrono durations, never bare integers. A lease or TTL that is given must be in its
// namespace's range (a zero one is InvalidArgument, naming the range): to get the namespace's
// default, leave the field out. A zero wait is given and means "answer at once", as no wait does.
//
// Waiting ops (Begin's and Lock's `wait`): the op is answered when the key's holder (an attempt
// in progress, a lock) lets go — completes, aborts, unlocks, or its lease ends — or when the wait
// runs out, with the answer it would have had at once then (IN_PROGRESS, HELD). A wait is
// 0 .. Limits::max_wait_ms (InvalidArgument otherwise). Engine::Apply waits by blocking the
// calling thread, and waiting Locks of several threads of one process are not ordered: the first
// retry to commit after the release wins. Over the network the server waits without a thread and
// grants a key's waiting Locks in the order it received them (docs/protocol.md, docs/recipes.md).
//
// An Op BORROWS its strings (std::string_view): whatever they point to must stay alive until the
// call that takes the Op returns. Build an Op in the statement that passes it on, or from strings
// that outlive that call; to keep ops longer (a batch built now and applied later, ops passed
// between threads), copy them into an OpBatch (idem/op_batch.h), which owns its bytes.
// Results own their data.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
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

// A record's time to live: a duration, or Forever() (never expire; the namespace's retention
// policy must allow it). Converts implicitly from any std::chrono duration that converts to
// milliseconds without loss (`.ttl = 24h`), never from a bare integer.
//
// A TTL that is given must be 1 ms .. the namespace's max_ttl_ms, or Forever(): zero and other
// negative durations are InvalidArgument (leave the TTL out for the namespace's default). -1 ms
// is Forever() (the wire protocol's encoding).
class Ttl {
 public:
  template <class Rep, class Period>
  requires std::is_convertible_v<std::chrono::duration<Rep, Period>, std::chrono::milliseconds>
  constexpr Ttl(std::chrono::duration<Rep, Period> duration) : duration_(duration) {}

  static constexpr Ttl Forever() { return Ttl(std::chrono::milliseconds(-1)); }

  constexpr bool forever() const { return duration_ == std::chrono::milliseconds(-1); }
  constexpr std::chrono::milliseconds duration() const { return duration_; }  // -1 ms: forever

  friend constexpr bool operator==(const Ttl&, const Ttl&) = default;

 private:
  std::chrono::milliseconds duration_;
};

// The millisecond encoding of Forever() that retention policies (idem/options.h) and the wire
// protocol use.
inline constexpr int64_t kForever = -1;

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
  // Request lifecycle: a recovery point inside an attempt.
  kCheckpoint = 15,
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
  kFenceMismatch = 12,    // Complete/Abort/Heartbeat/Checkpoint/Renew/Unlock: not the holder
  kReleased = 13,         // Abort/Unlock released the key
  kIssued = 14,           // IssueToken: OpResult::token holds the new token
  kConsumed = 15,         // ConsumeToken: first consume
  kAlreadyConsumed = 16,  // ConsumeToken: consumed before
  kAcquired = 17,         // Lock: the caller holds the lock (record.fence)
  kHeld = 18,             // Lock: someone else holds it (record.owner, record.lease_until_ms)
  kAlready = 19,          // Transition/Complete: already in the requested state (success)
  kIllegal = 20,          // Transition/CompareAndSet: the namespace's state graph forbids it
  kWrongKind = 21,        // the record belongs to another scheme (record.kind); nothing changed
  // Begin/Insert/Get: the key's record finished and expired, and the namespace still remembers
  // the key (RetentionPolicy::remember_ms): the response is gone, the work must not run again.
  // record: kind, fingerprint, updated_ms (when it finished), expires_at_ms (when the key is
  // forgotten); nothing else. Nothing changed.
  kExpired = 22,
};

// Stable upper-case name ("INSERTED", "CONDITION_FAILED", ...): idemctl's JSON uses it.
std::string_view OutcomeName(Outcome outcome);
std::string_view OpTypeName(OpType type);

// A condition on the current record; every part that is set must hold.
struct Condition {
  std::vector<std::string_view> status_in = {};  // status is one of these (empty: any status)
  std::optional<uint64_t> version = {};          // version equals (optimistic locking)
  std::optional<uint64_t> fence = {};            // fence equals (the current holder)

  bool Empty() const { return status_in.empty() && !version && !fence; }
};

// What CompareAndSet changes; unset parts keep their value. Any applied update bumps the version.
struct Update {
  std::optional<std::string_view> status = {};
  std::optional<std::string_view> payload = {};
  std::optional<Ttl> ttl = {};  // new expiry = now + ttl (not given: the expiry is kept)
};

// The arguments of each kind of operation, one struct per kind, in the order designated
// initializers must follow. Strings are borrowed (see the top of this file). Every field has an
// initializer, so leaving fields out draws no -Wmissing-field-initializers warning.

struct InsertArgs {  // insert-if-absent
  std::string_view ns = {};
  std::string_view key = {};
  std::string_view status = {};
  std::string_view payload = {};
  std::string_view fingerprint = {};  // a retry with a different one answers EXISTS, mismatched
  std::optional<Ttl> ttl = {};        // not given: the namespace's default
};

struct CompareAndSetArgs {  // conditional update
  std::string_view ns = {};
  std::string_view key = {};
  Condition condition = {};
  Update update = {};
};

struct GetArgs {
  std::string_view ns = {};
  std::string_view key = {};
};

struct DeleteArgs {  // conditional delete
  std::string_view ns = {};
  std::string_view key = {};
  Condition condition = {};
};

// Request lifecycle: see docs/recipes.md for how Begin, Complete, Abort and Heartbeat combine.
struct BeginArgs {
  std::string_view ns = {};
  std::string_view key = {};
  std::string_view fingerprint = {};  // same key with a different fingerprint answers MISMATCH
  std::string_view owner = {};
  std::optional<std::chrono::milliseconds> lease = {};  // not given: the namespace's default lease
  std::optional<std::chrono::milliseconds> wait = {};   // wait this long for an attempt in progress
                                                        // (not given: answer at once)
  std::optional<Ttl> ttl = {};  // the record's TTL while in progress (not given: the namespace's)
};

struct CompleteArgs {
  std::string_view ns = {};
  std::string_view key = {};
  uint64_t fence = 0;              // the fence Begin returned
  std::string_view response = {};  // stored, and replayed to later Begins
  std::string_view status = {};    // empty: COMPLETED
  std::optional<Ttl> ttl = {};     // not given: the namespace's completed TTL, else its default
};

struct AbortArgs {
  std::string_view ns = {};
  std::string_view key = {};
  uint64_t fence = 0;
  std::string_view response = {};  // the failure response, kept if the policy remembers failures
};

struct HeartbeatArgs {
  std::string_view ns = {};
  std::string_view key = {};
  uint64_t fence = 0;
  std::optional<std::chrono::milliseconds> lease = {};  // not given: the namespace's default lease
};

// A recovery point (docs/recipes.md, "Recovery points"): the holder replaces the attempt's payload
// with how far it got, and the attempt stays IN_PROGRESS. A Begin that takes the attempt over
// after the lease ends gets this payload in its record and resumes from it. The lease is left as
// it is: to extend it too, send a Heartbeat in the same Apply (one round trip, one commit).
// APPLIED (the new record), FENCE_MISMATCH (not the holder: another took the attempt over),
// ALREADY (the attempt is finished: its final record, unchanged), NOT_FOUND, WRONG_KIND.
struct CheckpointArgs {
  std::string_view ns = {};
  std::string_view key = {};
  uint64_t fence = 0;             // the fence Begin returned
  std::string_view payload = {};  // the phase reached and its data; replaces the payload
};

// One-shot tokens.
struct IssueTokenArgs {
  std::string_view ns = {};       // the key is generated: OpResult::token
  std::optional<Ttl> ttl = {};    // not given: the namespace's default
  std::string_view payload = {};  // what the token authorizes; returned when it is consumed
};

struct ConsumeTokenArgs {
  std::string_view ns = {};
  std::string_view token = {};
};

// Locks with leases and fencing.
struct LockArgs {
  std::string_view ns = {};
  std::string_view key = {};
  std::string_view owner = {};
  std::optional<std::chrono::milliseconds> lease = {};  // not given: the namespace's default lease
  std::optional<std::chrono::milliseconds> wait = {};   // wait this long for the holder to let go
                                                        // (not given: answer at once)
};

// Renew reads what Heartbeat reads: the holder's fence and the new lease.
using RenewArgs = HeartbeatArgs;

struct UnlockArgs {
  std::string_view ns = {};
  std::string_view key = {};
  uint64_t fence = 0;
};

// State machines.
struct TransitionArgs {
  std::string_view ns = {};
  std::string_view key = {};
  std::string_view to_status = {};
  std::optional<uint64_t> expect_version = {};
  std::optional<std::string_view> payload = {};  // not given: the payload is kept
};

// One operation: what Store::Apply takes and the wire protocol carries. Build it with the
// factory for its kind, which maps the *Args struct onto these fields (a fence becomes
// condition.fence, a response payload, a token key, a transition's target status) and leaves the
// rest empty; an operation ignores the fields its kind does not read.
struct Op {
  OpType type = OpType::kGet;
  std::string_view ns;
  std::string_view key;
  std::string_view status;
  std::string_view payload;
  std::string_view fingerprint;
  std::string_view owner;
  std::optional<Ttl> ttl;
  std::optional<std::chrono::milliseconds> lease;
  std::optional<std::chrono::milliseconds> wait;
  Condition condition;  // Complete, Abort, Heartbeat, Checkpoint, Renew, Unlock: condition.fence
  Update update;

  static Op Insert(const InsertArgs& args);
  static Op CompareAndSet(const CompareAndSetArgs& args);
  static Op Get(const GetArgs& args);
  static Op Delete(const DeleteArgs& args);
  static Op Begin(const BeginArgs& args);
  static Op Complete(const CompleteArgs& args);
  static Op Abort(const AbortArgs& args);
  static Op Heartbeat(const HeartbeatArgs& args);
  static Op IssueToken(const IssueTokenArgs& args);
  static Op ConsumeToken(const ConsumeTokenArgs& args);
  static Op Lock(const LockArgs& args);
  static Op Renew(const RenewArgs& args);
  static Op Unlock(const UnlockArgs& args);
  static Op Transition(const TransitionArgs& args);
  static Op Checkpoint(const CheckpointArgs& args);
};

// The one rule of which ops wait (see the top of this file): a Begin or Lock with a wait above 0.
bool WaitsForHolder(const Op& op);
// Whether `outcome`, the answer to a waiting op of type `type`, says another holder still has
// the key (Begin: IN_PROGRESS, Lock: HELD): the op keeps waiting.
bool StillHeld(OpType type, Outcome outcome);

struct OpResult {
  Outcome outcome = Outcome::kNotFound;
  // The record the outcome refers to: the new one (INSERTED, APPLIED), the current one (EXISTS,
  // CONDITION_FAILED, FOUND) or the removed one (DELETED). Absent for NOT_FOUND.
  std::optional<Record> record;
  // EXISTS and EXPIRED (Insert), MISMATCH: false when the op carried a fingerprint and the
  // stored record's (or the remembered key's) differs (same key reused with a different
  // request).
  bool fingerprint_matches = true;
  // IssueToken only: the generated token (the key to pass to ConsumeToken).
  std::string token;
};

}  // namespace idem
