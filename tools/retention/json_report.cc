#include "json_report.h"

#include "json_writer.h"

namespace idem::retention {
namespace {

double Seconds(int64_t ms) { return static_cast<double>(ms) / 1000.0; }

void WritePolicy(const Study& study, const PolicyResult& r, JsonWriter& j) {
  j.BeginObject();
  j.Key("name");
  j.String(r.policy.name);
  j.Key("strategy");
  j.String(StrategyName(r.policy.strategy));
  j.Key("ttl_s");
  j.Double(Seconds(r.policy.default_ttl_ms));
  j.Key("ns_ttl_s");
  j.BeginObject();
  for (const std::string& ns : study.namespaces) {
    j.Key(ns);
    j.Double(Seconds(r.policy.TtlFor(ns)));
  }
  j.EndObject();
  j.Key("remember_s");
  j.Double(Seconds(r.policy.remember_ms));
  if (r.policy.strategy == Strategy::kWindows) {
    j.Key("window_s");
    j.Double(Seconds(r.policy.window_ms));
  }
  const uint64_t dups = r.duplicates_caught + r.duplicates_expired + r.duplicates_missed;
  j.Key("duplicates_caught");
  j.Uint(r.duplicates_caught);
  j.Key("duplicates_expired");
  j.Uint(r.duplicates_expired);
  j.Key("duplicates_missed");
  j.Uint(r.duplicates_missed);
  j.Key("miss_rate");
  j.Double(dups == 0 ? 0.0 : static_cast<double>(r.duplicates_missed) / static_cast<double>(dups));
  j.Key("first_requests");
  j.Uint(r.first_requests);
  j.Key("per_namespace");
  j.BeginObject();
  for (size_t i = 0; i < study.namespaces.size() && i < r.per_namespace.size(); ++i) {
    j.Key(study.namespaces[i]);
    j.BeginObject();
    j.Key("first_requests");
    j.Uint(r.per_namespace[i].first_requests);
    j.Key("caught");
    j.Uint(r.per_namespace[i].caught);
    j.Key("expired");
    j.Uint(r.per_namespace[i].expired);
    j.Key("missed");
    j.Uint(r.per_namespace[i].missed);
    j.EndObject();
  }
  j.EndObject();
  j.Key("peak_live_records");
  j.Uint(r.peak_live_records);
  j.Key("final_live_records");
  j.Uint(r.final_live_records);
  j.Key("estimated_records_end_of_traffic");
  j.Uint(r.estimated_records_end_of_traffic);
  j.Key("estimated_records_final");
  j.Uint(r.estimated_records_final);
  j.Key("expired_on_disk_peak");
  j.Uint(r.expired_on_disk_peak);
  j.Key("expired_on_disk_final");
  j.Uint(r.expired_on_disk_final);
  j.Key("disk_bytes_peak");
  j.Uint(r.disk_bytes_peak);
  j.Key("disk_bytes_final");
  j.Uint(r.disk_bytes_final);
  j.Key("live_sst_bytes_final");
  j.Uint(r.live_sst_bytes_final);
  j.Key("reclaim_lag_s");
  if (r.reclaim_lag_ms < 0)
    j.Null();
  else
    j.Double(Seconds(r.reclaim_lag_ms));
  j.Key("write_amplification");
  j.Double(r.WriteAmplification());
  j.Key("user_bytes_written");
  j.Uint(r.user_bytes_written);
  j.Key("flush_bytes_written");
  j.Uint(r.flush_bytes_written);
  j.Key("compaction_bytes_read");
  j.Uint(r.compaction_bytes_read);
  j.Key("compaction_bytes_written");
  j.Uint(r.compaction_bytes_written);
  j.Key("compactions");
  j.Uint(r.compactions);
  j.Key("records_dropped_by_compaction");
  j.Uint(r.records_dropped_by_compaction);
  j.Key("reclaim_passes");
  j.Uint(r.reclaim_passes);
  j.Key("reclaim_files_compacted");
  j.Uint(r.reclaim_files_compacted);
  if (r.policy.strategy == Strategy::kWindows) {
    j.Key("windows_dropped");
    j.Uint(r.windows_dropped);
    j.Key("expiry_windows_peak");
    j.Uint(r.expiry_windows_peak);
    j.Key("window_files_peak");
    j.Uint(r.window_files_peak);
  }
  j.Key("wall_seconds");
  j.Double(r.wall_seconds);
  j.Key("samples");
  j.BeginArray();
  for (const Sample& s : r.samples) {
    j.BeginObject();
    j.Key("t_s");
    j.Double(Seconds(s.t_ms));
    j.Key("live_records");
    j.Uint(s.live_records);
    j.Key("estimated_records");
    j.Uint(s.estimated_records);
    j.Key("sst_bytes");
    j.Uint(s.sst_bytes);
    j.Key("live_sst_bytes");
    j.Uint(s.live_sst_bytes);
    j.Key("memtable_bytes");
    j.Uint(s.memtable_bytes);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

}  // namespace

std::string FormatJson(const Study& study) {
  JsonWriter j;
  j.BeginObject();
  j.Key("tool");
  j.String("idem-retention");
  j.Key("settings");
  j.BeginObject();
  for (const auto& [name, value] : study.settings) {
    j.Key(name);
    j.String(value);
  }
  j.EndObject();
  j.Key("workload");
  j.BeginObject();
  j.Key("namespaces");
  j.BeginArray();
  for (const std::string& ns : study.namespaces) j.String(ns);
  j.EndArray();
  j.Key("events");
  j.Uint(study.events);
  j.Key("first_requests");
  j.Uint(study.first_requests);
  j.Key("duplicates");
  j.Uint(study.duplicates);
  j.Key("first_requests_end_s");
  j.Double(Seconds(study.first_requests_end_ms));
  j.Key("last_arrival_s");
  j.Double(Seconds(study.last_arrival_ms));
  j.Key("end_s");
  j.Double(Seconds(study.last_arrival_ms + study.sim.drain_ms));
  j.EndObject();
  j.Key("policies");
  j.BeginArray();
  for (const PolicyResult& r : study.results) WritePolicy(study, r, j);
  j.EndArray();
  j.EndObject();
  return j.Take() + "\n";
}

}  // namespace idem::retention
