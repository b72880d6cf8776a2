// Policy: one retention configuration under study — how long each namespace keeps its keys
// and how expired records are reclaimed from disk.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "idem/options.h"
#include "idem/result.h"

namespace idem::retention {

enum class Strategy : uint8_t {
  // What the engine does in production: leveled compaction with the expiry compaction filter,
  // plus the statistics-driven reclaimer (Engine::ReclaimExpired) on a schedule.
  kReclaim,
  // The same LSM and filter, but expired records leave the disk only when writes happen to
  // trigger a compaction over them.
  kCompactionOnly,
  // The expiry-window layout (EngineOptions::Layout::kExpiryWindows): a record lives in the
  // column family of the window its death falls in, and the same scheduled ReclaimExpired pass
  // drops every window that ended more than the expiry grace ago, whole.
  kWindows,
  // The journal layout (EngineOptions::Layout::kJournal): records appended to segment files,
  // which the same scheduled ReclaimExpired pass deletes once all their records are dead (the
  // few long-lived ones of a mostly dead segment appended again first).
  kJournal,
  // The same journal, its records compressed with a per-segment dictionary
  // (EngineOptions::journal_dictionary_bytes = kDefaultJournalDictionaryBytes).
  kJournalCompressed,
};

// "reclaim", "compaction-only", "windows", "journal", "journal-compressed"
std::string_view StrategyName(Strategy s);
Result<Strategy> ParseStrategy(std::string_view name);

struct Policy {
  std::string name;  // unique in a study, e.g. "24h/reclaim", "ns-ttl/compaction-only"
  Strategy strategy = Strategy::kReclaim;
  int64_t default_ttl_ms = 0;                // namespaces without their own TTL
  std::map<std::string, int64_t> ns_ttl_ms;  // per-namespace TTLs (empty: one TTL for all)
  // Remembered keys (RetentionPolicy::remember_ms): for this long after a record expired, a
  // duplicate is answered EXPIRED (not executed again, but its response is gone). 0: not.
  int64_t remember_ms = 0;
  // Strategy::kWindows: the engine's expiry_window_ms. 0 for the other strategies.
  int64_t window_ms = 0;

  int64_t TtlFor(std::string_view ns) const;
  int64_t MaxTtl() const;
  // How long after its write a record may still be on the read path: the longest TTL plus the
  // remember period (the engine files a record under expiry + remember).
  int64_t DeathHorizonMs() const { return MaxTtl() + remember_ms; }
  // "payments=1d,orders=1h,*=1d" for per-namespace policies, "6h" otherwise.
  std::string TtlSpec() const;
};

// A per-namespace TTL assignment from --ns-ttl: "payments=26h,orders=1h,*=24h"; '*' sets the
// TTL of namespaces not listed (default 24h).
struct NsTtlSpec {
  std::map<std::string, int64_t> ttl_ms;
  int64_t fallback_ms = 0;
};
Result<NsTtlSpec> ParseNsTtl(std::string_view text);

// "Keep responses KEEP, remember keys REMEMBER", from --remember: "1d:30d,6h:7d".
struct KeepRemember {
  int64_t keep_ms = 0;
  int64_t remember_ms = 0;
};
Result<std::vector<KeepRemember>> ParseKeepRemember(std::string_view text);

// The window width a kWindows policy gets without --window: its death horizon / 8, rounded up
// to a whole minute, within the engine's range (EngineOptions::kMin/kMaxExpiryWindowMs). Eight
// windows hold every live record: few enough that a lookup's extra probes stay cheap, narrow
// enough that a dead record leaves the disk at most an eighth of the horizon (plus the grace)
// after its death.
int64_t DefaultWindowMs(const Policy& policy);

// The cross product studied in one run: every TTL, every per-namespace spec and every
// keep/remember pair, each under every strategy. Names are "<ttl>/<strategy>",
// "ns-ttl[N]/<strategy>" and "<keep>+remember<remember>/<strategy>". kWindows policies get
// `window_ms` if given, else DefaultWindowMs.
std::vector<Policy> BuildPolicies(const std::vector<int64_t>& ttls_ms,
                                  const std::vector<NsTtlSpec>& ns_ttls,
                                  const std::vector<Strategy>& strategies,
                                  const std::vector<KeepRemember>& remembers = {},
                                  std::optional<int64_t> window_ms = std::nullopt);

}  // namespace idem::retention
