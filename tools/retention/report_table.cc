#include "report_table.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "byte_size.h"
#include "duration.h"

namespace idem::retention {
namespace {

std::string Printf(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string Count(uint64_t n) { return std::to_string(n); }

}  // namespace

std::string FormatTable(const Study& study) {
  // The window column only when the study has windows policies, so that the other strategies'
  // tables read as they always have.
  const bool windows = std::any_of(study.results.begin(), study.results.end(),
                                   [](const PolicyResult& r) { return r.policy.window_ms > 0; });
  std::vector<std::string> header = {"policy", "ttl", "remember"};
  if (windows) header.push_back("window");
  const size_t text_columns = header.size();
  header.insert(header.end(), {"dups", "caught", "expired", "missed", "miss%", "peak live",
                               "final live", "rocks est", "expired@end", "disk peak", "disk final",
                               "WA", "compacted", "reclaim lag"});
  std::vector<std::vector<std::string>> rows;
  for (const PolicyResult& r : study.results) {
    const uint64_t dups = r.duplicates_caught + r.duplicates_expired + r.duplicates_missed;
    std::vector<std::string> row = {
        r.policy.name,
        r.policy.TtlSpec(),
        r.policy.remember_ms == 0 ? "-" : FormatDurationMs(r.policy.remember_ms),
    };
    if (windows)
      row.push_back(r.policy.window_ms == 0 ? "-" : FormatDurationMs(r.policy.window_ms));
    row.insert(row.end(),
               {
                   Count(dups),
                   Count(r.duplicates_caught),
                   Count(r.duplicates_expired),
                   Count(r.duplicates_missed),
                   dups == 0 ? "-"
                             : Printf("%.3f", 100.0 * static_cast<double>(r.duplicates_missed) /
                                                  static_cast<double>(dups)),
                   Count(r.peak_live_records),
                   Count(r.final_live_records),
                   Count(r.estimated_records_final),
                   Count(r.expired_on_disk_final),
                   FormatBytes(r.disk_bytes_peak),
                   FormatBytes(r.disk_bytes_final),
                   Printf("%.2f", r.WriteAmplification()),
                   FormatBytes(r.compaction_bytes_written),
                   r.reclaim_lag_ms < 0 ? "never" : FormatDurationRoundedMs(r.reclaim_lag_ms),
               });
    rows.push_back(std::move(row));
  }
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      // Text columns left-aligned, numbers right-aligned.
      const std::string pad(width[c] - cells[c].size(), ' ');
      out += c < text_columns ? cells[c] + pad : pad + cells[c];
      out += c + 1 < cells.size() ? "  " : "\n";
    }
    return out;
  };

  std::string out;
  for (const auto& [name, value] : study.settings) out += name + ": " + value + "\n";
  out += "arrivals: " + Count(study.events) + " (" + Count(study.first_requests) +
         " first requests, " + Count(study.duplicates) + " duplicates); first requests stop at " +
         FormatDurationMs(study.first_requests_end_ms) + ", last arrival at " +
         FormatDurationRoundedMs(study.last_arrival_ms) + ", run ends at " +
         FormatDurationRoundedMs(study.last_arrival_ms + study.sim.drain_ms) + "\n\n";
  out += line(header);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  out += std::string(total - 2, '-') + "\n";
  for (const auto& row : rows) out += line(row);
  out +=
      "\nmissed = duplicates that found their first record expired (executed twice); "
      "expired = duplicates answered EXPIRED\n"
      "(remember: the key outlived its record, so not executed again, but the response was "
      "gone). live = unexpired records (exact);\n"
      "rocks est = RocksDB's estimate-num-keys at the end; expired@end = rocks est - final live "
      "(expired records and remembered\n"
      "keys' markers still on disk, plus the engine's fence-reservation key); "
      "disk = table files (sst_bytes) sampled every " +
      FormatDurationMs(study.sim.sample_every_ms) +
      (study.sim.flush_at_samples ? " after a memtable flush" : " (no flush)") +
      "; WA = (flush + compaction bytes written) / user bytes;\n"
      "compacted = compaction bytes written; reclaim lag = last expiry -> disk <= max(5% of peak, "
      "4 KiB).\n";
  if (windows) {
    out +=
        "window = the windows strategy's expiry_window_ms: a record is filed under the window of "
        "its expiry + remember,\n"
        "and a window is dropped whole by ReclaimExpired once it ended the expiry grace ago.\n";
  }
  return out;
}

}  // namespace idem::retention
