#include "output.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <utility>
#include <vector>

#include "base64.h"
#include "json_writer.h"
#include "record_json.h"

namespace idem::ctl {
namespace {

// Every outcome is listed (no default), so a new one cannot reach exit status 0 unclassified:
// -Wswitch names it.
bool IsRefusal(Outcome o) {
  switch (o) {
    case Outcome::kNotFound:
    case Outcome::kConditionFailed:
    case Outcome::kInProgress:
    case Outcome::kMismatch:
    case Outcome::kFenceMismatch:
    case Outcome::kAlreadyConsumed:
    case Outcome::kHeld:
    case Outcome::kIllegal:
    case Outcome::kWrongKind:
    case Outcome::kExpired:
      return true;
    case Outcome::kInserted:
    case Outcome::kExists:
    case Outcome::kApplied:
    case Outcome::kDeleted:
    case Outcome::kFound:
    case Outcome::kStarted:
    case Outcome::kCompleted:
    case Outcome::kReleased:
    case Outcome::kIssued:
    case Outcome::kConsumed:
    case Outcome::kAcquired:
    case Outcome::kAlready:
      return false;
  }
  return false;
}

std::string Time(int64_t ms) {
  if (ms == 0) return "never";
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];  // sized for any int fields, so the compiler can prove no truncation
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

// "23h59m", "4m07s", "1.5s": two units at most, for people, not for parsing.
std::string Approximate(int64_t ms) {
  char buf[48];
  const int64_t s = ms / 1000, m = s / 60, h = m / 60, d = h / 24;
  if (d > 0)
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(d),
                  static_cast<long long>(h % 24));
  else if (h > 0)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(h),
                  static_cast<long long>(m % 60));
  else if (m > 0)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(m),
                  static_cast<long long>(s % 60));
  else if (s > 0)
    std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000);
  else
    std::snprintf(buf, sizeof buf, "%lldms", static_cast<long long>(ms));
  return buf;
}

std::string Relative(int64_t at_ms, int64_t now_ms) {
  if (at_ms == 0) return "";
  int64_t d = at_ms - now_ms;
  return d >= 0 ? " (in " + Approximate(d) + ")" : " (" + Approximate(-d) + " ago)";
}

// The same rule for people: "\npayload:     \"text\"" or "\npayload_b64: //4=".
std::string HumanBytes(std::string_view name, std::string_view bytes) {
  const bool text = IsValidUtf8(bytes);
  std::string label = std::string(name) + (text ? ":" : "_b64:");
  label.resize(std::max<size_t>(label.size() + 1, 13), ' ');
  return "\n" + label + (text ? JsonQuote(bytes) : Base64Encode(bytes));
}

// Every counter of StoreStats, by name, in one place for both output formats.
std::vector<std::pair<const char*, uint64_t>> StatsCounters(const StoreStats& s) {
  return {{"estimated_live_records", s.estimated_live_records},
          {"sst_bytes", s.sst_bytes},
          {"live_sst_bytes", s.live_sst_bytes},
          {"memtable_bytes", s.memtable_bytes},
          {"block_cache_bytes", s.block_cache_bytes},
          {"block_cache_capacity_bytes", s.block_cache_capacity_bytes},
          {"table_readers_bytes", s.table_readers_bytes},
          {"wal_bytes", s.wal_bytes},
          {"next_fence", s.next_fence},
          {"ops", s.ops},
          {"writes", s.writes},
          {"admin_overrides", s.admin_overrides},
          {"wal_syncs", s.wal_syncs},
          {"user_bytes_written", s.user_bytes_written},
          {"flush_bytes_written", s.flush_bytes_written},
          {"compaction_bytes_read", s.compaction_bytes_read},
          {"compaction_bytes_written", s.compaction_bytes_written},
          {"compactions", s.compactions},
          {"records_dropped_by_compaction", s.records_dropped_by_compaction},
          {"pending_compaction_bytes", s.pending_compaction_bytes},
          {"write_stalls", s.write_stalls},
          {"write_stalled", s.write_stalled ? 1u : 0u},
          {"background_errors", s.background_errors},
          {"expired_unreclaimed_records", s.expired_unreclaimed_records},
          {"clock_steps", s.clock_steps},
          {"expiry_windows", s.expiry_windows},
          {"reclaim_failures", s.reclaim_failures}};
}

// `name{a="x",b="y"}` (values unescaped: for people, not for a parser).
std::string SeriesName(const MetricFamily& f, const MetricSample& s) {
  std::string out = f.name;
  if (s.labels.empty()) return out;
  out += '{';
  for (size_t i = 0; i < s.labels.size(); ++i) {
    if (i > 0) out += ',';
    out += s.labels[i].first + "=\"" + s.labels[i].second + "\"";
  }
  return out + '}';
}

// Counters are integers however large; other values to six significant digits.
bool IsCount(double v) { return v >= 0 && v < 1e18 && v == std::floor(v); }

std::string Number(double v) {
  if (IsCount(v)) return std::to_string(static_cast<uint64_t>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void JsonNumber(double v, JsonWriter& j) {
  if (IsCount(v)) {
    j.Uint(static_cast<uint64_t>(v));
  } else {
    j.Double(v);
  }
}

// The smallest bucket bound holding fraction q of the observations: an upper bound on the
// q-quantile, as precise as the buckets.
double QuantileBound(const MetricSample& s, double q) {
  const double want = q * static_cast<double>(s.count);
  for (const auto& [le, count] : s.buckets) {
    if (static_cast<double>(count) >= want) return le;
  }
  return s.buckets.empty() ? 0 : s.buckets.back().first;
}

}  // namespace

std::string FormatHuman(const OpResult& r, int64_t now_ms) {
  std::string out(OutcomeName(r.outcome));
  if (IsReplay(r)) out += " (replay)";
  if (!r.token.empty()) out += "\ntoken:       " + r.token;
  if ((r.outcome == Outcome::kExists || r.outcome == Outcome::kExpired) && !r.fingerprint_matches)
    out += " (fingerprint differs)";
  if (!r.record) return out;
  const Record& rec = *r.record;
  if (r.outcome == Outcome::kExpired) {  // a remembered key: the marker has nothing else
    out += "\nkind:        " + std::string(RecordKindName(rec.kind));
    if (!rec.fingerprint.empty()) out += HumanBytes("fingerprint", rec.fingerprint);
    out += "\nfinished:    " + Time(rec.updated_ms) + Relative(rec.updated_ms, now_ms);
    out += "\nforgotten:   " + Time(rec.expires_at_ms) + Relative(rec.expires_at_ms, now_ms);
    return out;
  }
  out += "\nkind:        " + std::string(RecordKindName(rec.kind));
  out += "\nstatus:      " + rec.status;
  out += "\nversion:     " + std::to_string(rec.version);
  out += "\nfence:       " + std::to_string(rec.fence);
  if (!rec.owner.empty()) out += "\nowner:       " + rec.owner;
  if (rec.lease_until_ms != 0)
    out += "\nlease until: " + Time(rec.lease_until_ms) + Relative(rec.lease_until_ms, now_ms);
  if (!rec.fingerprint.empty()) out += HumanBytes("fingerprint", rec.fingerprint);
  if (!rec.payload.empty()) out += HumanBytes("payload", rec.payload);
  out += "\ncreated:     " + Time(rec.created_ms);
  out += "\nupdated:     " + Time(rec.updated_ms);
  out += "\nexpires:     " + Time(rec.expires_at_ms) + Relative(rec.expires_at_ms, now_ms);
  return out;
}

std::string FormatJson(const OpResult& r) {
  JsonWriter j;
  WriteOpResultJson(r, j);
  return j.Take();
}

CliError UsageError(std::string message) { return {"USAGE", std::move(message), kExitUsage}; }

CliError StoreError(const Status& status) {
  return {std::string(CodeName(status.code())), status.message(), ExitCodeFor(status)};
}

std::string FormatErrorHuman(const CliError& error) {
  return "idemctl: error (" + error.code + "): " + error.message;
}

std::string FormatErrorJson(const CliError& error) {
  JsonWriter j;
  j.BeginObject();
  j.Key("error");
  j.BeginObject();
  j.Key("code");
  j.String(error.code);
  j.Key("message");
  j.String(error.message);
  j.EndObject();
  j.EndObject();
  return j.Take();
}

std::string FormatStatsHuman(const StoreStats& s, std::span<const MetricFamily> metrics) {
  auto pad = [](std::string name) {
    name.resize(std::max<size_t>(name.size() + 1, 31), ' ');
    return name;
  };
  std::string out = pad("durability") + std::string(DurabilityName(s.durability));
  for (const auto& [name, value] : StatsCounters(s))
    out += "\n" + pad(name) + std::to_string(value);
  if (metrics.empty()) return out;
  out += "\n\nserver counters (GET /metrics names):";
  for (const MetricFamily& f : metrics) {
    for (const MetricSample& sample : f.samples) {
      out += "\n" + SeriesName(f, sample) + " ";
      if (f.type != MetricType::kHistogram) {
        out += Number(sample.value);
        continue;
      }
      out += "count=" + std::to_string(sample.count);
      if (sample.count == 0) continue;
      out += " mean=" + Number(sample.sum / static_cast<double>(sample.count)) +
             " p50<=" + Number(QuantileBound(sample, 0.5)) +
             " p99<=" + Number(QuantileBound(sample, 0.99));
    }
  }
  return out;
}

std::string FormatStatsJson(const StoreStats& s, std::span<const MetricFamily> metrics) {
  JsonWriter j;
  j.BeginObject();
  j.Key("outcome");
  j.String("OK");
  j.Key("stats");
  j.BeginObject();
  j.Key("durability");
  j.String(DurabilityName(s.durability));
  for (const auto& [name, value] : StatsCounters(s)) {
    j.Key(name);
    j.Uint(value);
  }
  j.EndObject();
  if (!metrics.empty()) {
    j.Key("metrics");
    j.BeginArray();
    for (const MetricFamily& f : metrics) {
      j.BeginObject();
      j.Key("name");
      j.String(f.name);
      j.Key("type");
      j.String(MetricTypeName(f.type));
      j.Key("help");
      j.String(f.help);
      j.Key("samples");
      j.BeginArray();
      for (const MetricSample& sample : f.samples) {
        j.BeginObject();
        j.Key("labels");
        j.BeginObject();
        for (const auto& [name, value] : sample.labels) {
          j.Key(name);
          j.String(value);
        }
        j.EndObject();
        if (f.type != MetricType::kHistogram) {
          j.Key("value");
          JsonNumber(sample.value, j);
        } else {
          j.Key("count");
          j.Uint(sample.count);
          j.Key("sum");
          j.Double(sample.sum);
          j.Key("buckets");  // [[le, cumulative count], ...]; +Inf's le is null
          j.BeginArray();
          for (const auto& [le, count] : sample.buckets) {
            j.BeginArray();
            j.Double(le);
            j.Uint(count);
            j.EndArray();
          }
          j.EndArray();
        }
        j.EndObject();
      }
      j.EndArray();
      j.EndObject();
    }
    j.EndArray();
  }
  j.EndObject();
  return j.Take();
}

namespace {

std::vector<std::pair<std::string_view, uint64_t>> ManifestNumbers(const BackupManifest& m) {
  return {{"created_ms", static_cast<uint64_t>(m.created_ms)},
          {"fence_high_water", m.fence_high_water},
          {"fence_floor", m.fence_floor},
          {"estimated_records", m.estimated_records}};
}

std::string ManifestHuman(const BackupManifest& m) {
  std::string out = "backup.created_utc " + m.created_utc + "\nbackup.idemstore_version " +
                    m.idemstore_version + "\n";
  for (const auto& [name, value] : ManifestNumbers(m)) {
    out += "backup." + std::string(name) + " " + std::to_string(value) + "\n";
  }
  return out;
}

std::vector<std::pair<std::string_view, uint64_t>> VerifyCounts(const VerifyReport& r) {
  return {{"table_files", r.table_files},
          {"table_bytes", r.table_bytes},
          {"records", r.records},
          {"markers", r.markers},
          {"meta_keys", r.meta_keys},
          {"expiry_windows", r.expiry_windows},
          {"journal_segments", r.journal_segments},
          {"journal_bytes", r.journal_bytes}};
}

}  // namespace

std::string FormatVerifyHuman(const VerifyReport& report) {
  std::string out = "checksums ok, every value decodes\n";
  for (const auto& [name, value] : VerifyCounts(report)) {
    out += std::string(name) + " " + std::to_string(value) + "\n";
  }
  if (!report.journal_torn_tail.empty()) {
    out += "journal_torn_tail " + report.journal_torn_tail +
           " (never acknowledged; zeroed by the next open)\n";
  }
  if (report.journal_index_saved) {
    out += report.journal_index_unusable.empty()
               ? "journal_index agrees with the journal; the next open loads it: " +
                     std::to_string(report.journal_index_records) + " records\n"
               : "journal_index unusable: " + report.journal_index_unusable +
                     " (the next open replays the journal and deletes it)\n";
  }
  if (report.manifest) out += ManifestHuman(*report.manifest);
  out.pop_back();
  return out;
}

std::string FormatVerifyJson(const VerifyReport& report) {
  JsonWriter j;
  j.BeginObject();
  j.Key("outcome");
  j.String("OK");
  j.Key("verify");
  j.BeginObject();
  for (const auto& [name, value] : VerifyCounts(report)) {
    j.Key(name);
    j.Uint(value);
  }
  if (!report.journal_torn_tail.empty()) {
    j.Key("journal_torn_tail");
    j.String(report.journal_torn_tail);
  }
  if (report.journal_index_saved) {
    j.Key("journal_index");
    j.BeginObject();
    if (report.journal_index_unusable.empty()) {
      j.Key("records");
      j.Uint(report.journal_index_records);
    } else {
      j.Key("unusable");
      j.String(report.journal_index_unusable);
    }
    j.EndObject();
  }
  if (report.manifest) {
    j.Key("backup");
    j.BeginObject();
    WriteBackupManifestFields(*report.manifest, j);
    j.EndObject();
  }
  j.EndObject();
  j.EndObject();
  return j.Take();
}

std::string FormatBackupHuman(const std::string& dir, const BackupManifest& manifest) {
  std::string out = "backup.dir " + dir + "\n" + ManifestHuman(manifest);
  out.pop_back();
  return out;
}

std::string FormatBackupJson(const std::string& dir, const BackupManifest& manifest) {
  JsonWriter j;
  j.BeginObject();
  j.Key("outcome");
  j.String("OK");
  j.Key("backup");
  j.BeginObject();
  j.Key("dir");
  j.String(dir);
  WriteBackupManifestFields(manifest, j);
  j.EndObject();
  j.EndObject();
  return j.Take();
}

std::string FormatScanEntryHuman(const ScanEntry& entry, int64_t now_ms) {
  const Record& rec = entry.record;
  std::string out =
      IsValidUtf8(entry.key) ? JsonQuote(entry.key) : "key_b64=" + Base64Encode(entry.key);
  out += " " + rec.status + " kind=" + std::string(RecordKindName(rec.kind)) +
         " version=" + std::to_string(rec.version) + " fence=" + std::to_string(rec.fence);
  if (!rec.owner.empty()) out += " owner=" + JsonQuote(rec.owner);
  if (rec.lease_until_ms != 0) {
    out += " lease_until=" + Time(rec.lease_until_ms) + Relative(rec.lease_until_ms, now_ms);
  }
  out += " expires=" + Time(rec.expires_at_ms);
  return out;
}

std::string FormatScanEntryJson(const ScanEntry& entry) {
  JsonWriter j;
  j.BeginObject();
  WriteBytesJson("key", entry.key, j);
  j.Key("record");
  WriteRecordJson(entry.record, j);
  j.EndObject();
  return j.Take();
}

namespace {
// "namespace 'pay'" or "namespace 'pay', prefix \"order-\"" (the prefix as JSON text or base64).
std::string WhatPurged(const PurgeRequest& request) {
  std::string out = "namespace '" + request.ns + "'";
  if (!request.prefix.empty()) {
    out += IsValidUtf8(request.prefix) ? ", prefix " + JsonQuote(request.prefix)
                                       : ", prefix_b64 " + Base64Encode(request.prefix);
  }
  return out;
}
}  // namespace

std::string FormatPurgeHuman(const PurgeRequest& request, const PurgeStep& total) {
  return "purged " + std::to_string(total.deleted) + " records and " +
         std::to_string(total.forgotten) + " remembered keys from " + WhatPurged(request);
}

std::string FormatPurgeJson(const PurgeRequest& request, const PurgeStep& total) {
  JsonWriter j;
  j.BeginObject();
  j.Key("outcome");
  j.String("OK");
  j.Key("purge");
  j.BeginObject();
  j.Key("ns");
  j.String(request.ns);
  if (!request.prefix.empty()) WriteBytesJson("prefix", request.prefix, j);
  j.Key("deleted");
  j.Uint(total.deleted);
  j.Key("forgotten");
  j.Uint(total.forgotten);
  j.EndObject();
  j.EndObject();
  return j.Take();
}

std::string FormatCompactHuman(const std::string& ns) {
  return ns.empty() ? "compacted the whole database" : "compacted namespace '" + ns + "'";
}

std::string FormatCompactJson(const std::string& ns) {
  JsonWriter j;
  j.BeginObject();
  j.Key("outcome");
  j.String("OK");
  j.Key("compact");
  j.BeginObject();
  if (!ns.empty()) {
    j.Key("ns");
    j.String(ns);
  }
  j.EndObject();
  j.EndObject();
  return j.Take();
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case Status::Code::kOk:
      return kExitSuccess;
    case Status::Code::kInvalidArgument:
      return kExitInvalidArgument;
    case Status::Code::kIOError:
    case Status::Code::kNotFound:  // no database at --data
      return kExitUnavailable;
    case Status::Code::kTimedOut:
      return kExitTimedOut;
    case Status::Code::kCorruption:
      return kExitCorruption;
    case Status::Code::kUnauthenticated:
    case Status::Code::kPermissionDenied:
      return kExitNotAllowed;
    default:
      return kExitOtherError;
  }
}

int ExitCodeFor(const Result<OpResult>& result) {
  if (!result.ok()) return ExitCodeFor(result.status());
  return IsRefusal(result->outcome) ? kExitRefused : kExitSuccess;
}

}  // namespace idem::ctl
