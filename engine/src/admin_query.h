// The pure parts of Scan and Purge (idem/admin.h): the key range a walk covers, its cursor, and
// which records a scan's filter admits. No I/O, no locks, no clock.
//
// A cursor is [format byte 1][the RocksDB key of the last key examined] (key_codec.h: the
// namespace is inside it); under the journal layout, which walks records in the order they were
// written (journal_store.h, Walk), [format byte 2][segment number (8)][entry offset (8)]
// [operation (8)][the RocksDB key of the namespace and prefix]. Opaque to callers; decoding
// checks it against the request, so a cursor of another namespace, prefix or layout is refused
// instead of silently walking elsewhere.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "idem/admin.h"
#include "idem/options.h"
#include "idem/record.h"
#include "idem/result.h"
#include "journal_format.h"

namespace idem {

// The RocksDB keys a walk visits: [seek, upper).
struct WalkRange {
  std::string seek;   // the first key to look at
  std::string upper;  // every key of the namespace with the prefix is below this
};

// Validates the namespace, the prefix (at most max_key_bytes) and the cursor, and returns the
// range still to walk. InvalidArgument, with a message, for each.
Result<WalkRange> ResolveWalk(std::string_view ns, std::string_view prefix, std::string_view cursor,
                              const Limits& limits);

// The cursor that continues a walk after `rocks_key`.
std::string CursorAfter(std::string_view rocks_key);

// ResolveWalk for the journal layout: the namespace and prefix validated the same way, and where
// the walk resumes (a default position, the journal's start, for an empty cursor).
Result<journal::WalkPosition> ResolveJournalWalk(std::string_view ns, std::string_view prefix,
                                                 std::string_view cursor, const Limits& limits);
// The cursor that resumes a journal walk of `ns` and `prefix` at `at`.
std::string JournalCursorAt(const journal::WalkPosition& at, std::string_view ns,
                            std::string_view prefix);

// Validates a scan's limit and status filter; `graph` is the namespace's state graph (null:
// none), whose states are then the only statuses a filter may name.
Status ValidateScanFilter(const ScanRequest& request, const Limits& limits,
                          const StateGraph* graph);

// Whether a live record passes the scan's filter at `now_ms`.
bool ScanAdmits(const ScanRequest& request, const Record& record, int64_t now_ms);

}  // namespace idem
