// The --json report. Layout (every time in seconds, every size in bytes):
//   { "tool": "idem-retention", "settings": {flag: value, ...},
//     "workload": {"namespaces": [...], "events", "first_requests", "duplicates",
//                  "first_requests_end_s", "last_arrival_s", "end_s"},
//     "policies": [ { "name", "strategy", "ttl_s", "ns_ttl_s": {ns: s}, "remember_s",
//                     "duplicates_caught", "duplicates_expired", "duplicates_missed",
//                     "miss_rate", "first_requests",
//                     "per_namespace": {ns: {first_requests, caught, expired, missed}},
//                     "peak_live_records", "final_live_records",
//                     "estimated_records_end_of_traffic", "estimated_records_final",
//                     "expired_on_disk_peak", "expired_on_disk_final",
//                     "disk_bytes_peak", "disk_bytes_final", "live_sst_bytes_final",
//                     "reclaim_lag_s" (null: never), "write_amplification",
//                     "user_bytes_written", "flush_bytes_written", "compaction_bytes_read",
//                     "compaction_bytes_written", "compactions",
//                     "records_dropped_by_compaction", "reclaim_passes",
//                     "reclaim_files_compacted", "wall_seconds",
//                     "samples": [{"t_s", "live_records", "estimated_records", "sst_bytes",
//                                  "live_sst_bytes", "memtable_bytes"}, ...] }, ... ] }
// "ttl_s" is the policy's TTL (for a per-namespace policy: the TTL of unlisted namespaces);
// "remember_s" how long keys are remembered after it (0: not); miss_rate = missed / duplicates.
#pragma once

#include <string>

#include "study.h"

namespace idem::retention {

std::string FormatJson(const Study& study);

}  // namespace idem::retention
