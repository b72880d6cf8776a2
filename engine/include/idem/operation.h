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

// TTL arguments, in milliseconds: > 0 is an explicit time to live; these two are special.
inline constexpr int64_t kDefaultTtl = 0;  // use the namespace's retention policy default
inline constexpr int64_t kForever = -1;    // never expire (the policy must allow it)

// Numbers are part of the wire protocol: append only.
enum class OpType : uint8_t {
  kInsert = 1,         // insert-if-absent
  kCompareAndSet = 2,  // conditional update
  kGet = 3,
  kDelete = 4,  // conditional delete
};

// Every outcome an operation can have. Numbers are part of the wire protocol: append only.
enum class Outcome : uint8_t {
  kInserted = 1,         // Insert created the record (returned)
  kExists = 2,           // Insert found a live record (returned; see fingerprint_matches)
  kApplied = 3,          // CompareAndSet changed the record (new record returned)
  kConditionFailed = 4,  // CompareAndSet/Delete condition false (current record returned)
  kNotFound = 5,         // no live record at that key
  kDeleted = 6,          // Delete removed the record (the removed record is returned)
  kFound = 7,            // Get found the record (returned)
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

struct Op {
  OpType type = OpType::kGet;
  std::string_view ns;
  std::string_view key;
  // kInsert: the new record.
  std::string_view status;
  std::string_view payload;
  std::string_view fingerprint;
  int64_t ttl_ms = kDefaultTtl;
  // kCompareAndSet, kDelete.
  Condition condition;
  // kCompareAndSet.
  Update update;

  static Op Insert(std::string_view ns, std::string_view key, std::string_view status,
                   std::string_view payload = {}, std::string_view fingerprint = {},
                   int64_t ttl_ms = kDefaultTtl);
  static Op CompareAndSet(std::string_view ns, std::string_view key, Condition condition,
                          Update update);
  static Op Get(std::string_view ns, std::string_view key);
  static Op Delete(std::string_view ns, std::string_view key, Condition condition = {});
};

struct OpResult {
  Outcome outcome = Outcome::kNotFound;
  // The record the outcome refers to: the new one (INSERTED, APPLIED), the current one (EXISTS,
  // CONDITION_FAILED, FOUND) or the removed one (DELETED). Absent for NOT_FOUND.
  std::optional<Record> record;
  // EXISTS only: false when the Insert carried a fingerprint and the stored record's differs
  // (same key reused with a different request).
  bool fingerprint_matches = true;
};

}  // namespace idem
