#include "admin_query.h"

#include <algorithm>
#include <cstdint>

#include "coding.h"
#include "idem/operation.h"
#include "key_codec.h"
#include "validation.h"

namespace idem {
namespace {

constexpr char kCursorFormat = 1;
constexpr char kJournalCursorFormat = 2;
constexpr size_t kJournalCursorPositionBytes = 1 + 3 * 8;

Status MalformedCursor() {
  return Status::InvalidArgument(
      "malformed cursor (pass back the cursor a previous page returned, unchanged)");
}

// The smallest key above every key that starts with `prefix` (non-empty, not all 0xff bytes:
// a record key starts with its namespace's length, 1..255, then name characters).
std::string PrefixSuccessor(std::string prefix) {
  while (!prefix.empty() && static_cast<uint8_t>(prefix.back()) == 0xff) prefix.pop_back();
  if (!prefix.empty()) prefix.back() = static_cast<char>(static_cast<uint8_t>(prefix.back()) + 1);
  return prefix;
}

// Whether a cursor of namespace `cursor_ns` (`in_prefix`: within the request's prefix) belongs to
// a walk of `ns`: InvalidArgument saying why not.
Status SameWalk(std::string_view cursor_ns, bool in_prefix, std::string_view ns) {
  if (cursor_ns != ns) {
    return Status::InvalidArgument("cursor belongs to a walk of namespace '" +
                                   std::string(cursor_ns) + "', not '" + std::string(ns) + "'");
  }
  if (!in_prefix) {
    return Status::InvalidArgument("cursor is outside the prefix: it belongs to another walk");
  }
  return Status::Ok();
}

}  // namespace

Result<WalkRange> ResolveWalk(std::string_view ns, std::string_view prefix, std::string_view cursor,
                              const Limits& limits) {
  if (Status s = ValidateNamespace(ns, limits); !s.ok()) return s;
  if (prefix.size() > limits.max_key_bytes) {
    return Status::InvalidArgument("prefix is " + std::to_string(prefix.size()) +
                                   " bytes; max_key_bytes is " +
                                   std::to_string(limits.max_key_bytes));
  }
  WalkRange range;
  const std::string first = RecordKey(ns, prefix);
  range.upper = PrefixSuccessor(first);
  if (cursor.empty()) {
    range.seek = first;
    return range;
  }
  std::string_view cursor_ns, cursor_key;
  if (cursor[0] != kCursorFormat || !ParseRecordKey(cursor.substr(1), &cursor_ns, &cursor_key)) {
    return MalformedCursor();
  }
  if (Status s = SameWalk(cursor_ns, cursor_key.starts_with(prefix), ns); !s.ok()) return s;
  // Strictly after the cursor's key: the smallest key above it is that key plus a zero byte.
  range.seek.assign(cursor.substr(1));
  range.seek.push_back('\0');
  return range;
}

std::string CursorAfter(std::string_view rocks_key) {
  std::string cursor(1, kCursorFormat);
  cursor.append(rocks_key);
  return cursor;
}

Result<journal::WalkPosition> ResolveJournalWalk(std::string_view ns, std::string_view prefix,
                                                 std::string_view cursor, const Limits& limits) {
  // The namespace and prefix, as ResolveWalk checks them.
  if (Result<WalkRange> range = ResolveWalk(ns, prefix, "", limits); !range.ok()) {
    return range.status();
  }
  if (cursor.empty()) return journal::WalkPosition{};
  if (cursor.size() < kJournalCursorPositionBytes || cursor[0] != kJournalCursorFormat) {
    return MalformedCursor();
  }
  std::string_view cursor_ns, cursor_prefix;
  if (!ParseRecordKey(cursor.substr(kJournalCursorPositionBytes), &cursor_ns, &cursor_prefix)) {
    return MalformedCursor();
  }
  if (Status s = SameWalk(cursor_ns, cursor_prefix == prefix, ns); !s.ok()) return s;
  const uint64_t op = coding::DecodeFixed64(cursor.data() + 17);
  if (op > UINT32_MAX) return MalformedCursor();
  return journal::WalkPosition{coding::DecodeFixed64(cursor.data() + 1),
                               coding::DecodeFixed64(cursor.data() + 9), static_cast<uint32_t>(op)};
}

std::string JournalCursorAt(const journal::WalkPosition& at, std::string_view ns,
                            std::string_view prefix) {
  std::string cursor(1, kJournalCursorFormat);
  coding::PutFixed64(&cursor, at.segment);
  coding::PutFixed64(&cursor, at.offset);
  coding::PutFixed64(&cursor, at.op);
  cursor.append(RecordKey(ns, prefix));
  return cursor;
}

Status ValidateScanFilter(const ScanRequest& request, const Limits& limits,
                          const StateGraph* graph) {
  if (request.limit == 0 || request.limit > kMaxScanPageRecords) {
    return Status::InvalidArgument("scan limit is " + std::to_string(request.limit) +
                                   "; it must be 1.." + std::to_string(kMaxScanPageRecords) +
                                   " records per page");
  }
  if (request.status_in.size() > limits.max_status_set) {
    return Status::InvalidArgument("scan filter names " + std::to_string(request.status_in.size()) +
                                   " statuses; max_status_set is " +
                                   std::to_string(limits.max_status_set));
  }
  for (const std::string& status : request.status_in) {
    if (status.empty() || status.size() > limits.max_status_bytes) {
      return Status::InvalidArgument("status '" + status + "' in the scan filter must be 1.." +
                                     std::to_string(limits.max_status_bytes) + " bytes");
    }
    if (graph != nullptr && !graph->Names(status)) {
      return Status::InvalidArgument("unknown status '" + status + "': namespace '" + request.ns +
                                     "' has a state graph without it");
    }
  }
  return Status::Ok();
}

bool ScanAdmits(const ScanRequest& request, const Record& record, int64_t now_ms) {
  if (!request.status_in.empty() && std::find(request.status_in.begin(), request.status_in.end(),
                                              record.status) == request.status_in.end()) {
    return false;
  }
  if (request.lease_ended) {
    // Begin takes such an attempt over (op_decision.cc): its lease is due and it is unfinished.
    // Records written before kinds: an attempt is the one with a lease.
    const bool attempt = record.kind == RecordKind::kAttempt ||
                         (record.kind == RecordKind::kUntyped && record.lease_until_ms != 0);
    return attempt && record.status == kStatusInProgress && record.lease_until_ms <= now_ms;
  }
  return true;
}

size_t ScanEntryBytes(std::string_view key, const Record& record) {
  // Version, fence, times and kind (64), and the entry's framing in a ScanResponse (160: the
  // entry and record tables with their vtables, four strings' and two vectors' length words,
  // padding). A server bounds a page by this alone, so it must cover the whole entry.
  constexpr size_t kFixedBytes = 64 + 160;
  return key.size() + record.status.size() + record.fingerprint.size() + record.payload.size() +
         record.owner.size() + kFixedBytes;
}

}  // namespace idem
