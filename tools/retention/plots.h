// The study's two figures, as SVG text:
//   TtlTradeoffSvg   missed duplicates (top) and disk bytes, peak and final (bottom), against
//                    TTL on a log axis; one line per strategy. Per-namespace policies have no
//                    single TTL and appear only in the table and JSON.
//   DiskOverTimeSvg  disk bytes (sst_bytes samples) over simulated time, one line per policy
//                    (dashed: compaction-only; point markers: windows), with markers where
//                    first requests stop and where the last duplicate arrives.
#pragma once

#include <string>

#include "idem/status.h"
#include "study.h"

namespace idem::retention {

std::string TtlTradeoffSvg(const Study& study);
std::string DiskOverTimeSvg(const Study& study);

// Writes ttl_tradeoff.svg and disk_over_time.svg into `dir` (created if missing).
Status WritePlots(const Study& study, const std::string& dir);

}  // namespace idem::retention
