#include "output.h"

#include <cstdio>
#include <ctime>

#include <algorithm>

namespace idem::ctl {
namespace {

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
      return true;
    default:
      return false;
  }
}

// Length of the valid UTF-8 sequence starting at s[i], or 0.
size_t Utf8Length(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return 0;
  }
  return n;
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
  if (d > 0) std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(d), static_cast<long long>(h % 24));
  else if (h > 0) std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(h), static_cast<long long>(m % 60));
  else if (m > 0) std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(m), static_cast<long long>(s % 60));
  else if (s > 0) std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000);
  else std::snprintf(buf, sizeof buf, "%lldms", static_cast<long long>(ms));
  return buf;
}

std::string Relative(int64_t at_ms, int64_t now_ms) {
  if (at_ms == 0) return "";
  int64_t d = at_ms - now_ms;
  return d >= 0 ? " (in " + Approximate(d) + ")" : " (" + Approximate(-d) + " ago)";
}

std::string RecordJson(const Record& r) {
  std::string out = "{";
  out += "\"status\":" + JsonString(r.status);
  out += ",\"version\":" + std::to_string(r.version);
  out += ",\"fence\":" + std::to_string(r.fence);
  out += ",\"fingerprint\":" + JsonString(r.fingerprint);
  out += ",\"payload\":" + JsonString(r.payload);
  out += ",\"owner\":" + JsonString(r.owner);
  out += ",\"created_ms\":" + std::to_string(r.created_ms);
  out += ",\"updated_ms\":" + std::to_string(r.updated_ms);
  out += ",\"expires_at_ms\":" + std::to_string(r.expires_at_ms);
  out += ",\"lease_until_ms\":" + std::to_string(r.lease_until_ms);
  out += "}";
  return out;
}

}  // namespace

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = Utf8Length(s, i);
    if (n > 1) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c >= 0x80) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out += "\"";
  return out;
}

std::string FormatHuman(const Result<OpResult>& result, int64_t now_ms) {
  if (!result.ok()) return "error: " + result.status().ToString();
  const OpResult& r = *result;
  std::string out(OutcomeName(r.outcome));
  if (!r.token.empty()) out += "\ntoken:       " + r.token;
  if (r.outcome == Outcome::kExists && !r.fingerprint_matches) out += " (fingerprint differs)";
  if (!r.record) return out;
  const Record& rec = *r.record;
  out += "\nstatus:      " + rec.status;
  out += "\nversion:     " + std::to_string(rec.version);
  out += "\nfence:       " + std::to_string(rec.fence);
  if (!rec.owner.empty()) out += "\nowner:       " + rec.owner;
  if (rec.lease_until_ms != 0) out += "\nlease until: " + Time(rec.lease_until_ms) + Relative(rec.lease_until_ms, now_ms);
  if (!rec.fingerprint.empty()) out += "\nfingerprint: " + JsonString(rec.fingerprint);
  if (!rec.payload.empty()) out += "\npayload:     " + JsonString(rec.payload);
  out += "\ncreated:     " + Time(rec.created_ms);
  out += "\nupdated:     " + Time(rec.updated_ms);
  out += "\nexpires:     " + Time(rec.expires_at_ms) + Relative(rec.expires_at_ms, now_ms);
  return out;
}

std::string FormatJson(const Result<OpResult>& result) {
  if (!result.ok()) return FormatErrorJson(result.status());
  const OpResult& r = *result;
  std::string out = "{\"outcome\":\"" + std::string(OutcomeName(r.outcome)) + "\"";
  if (r.outcome == Outcome::kExists || r.outcome == Outcome::kMismatch) {
    out += std::string(",\"fingerprint_matches\":") + (r.fingerprint_matches ? "true" : "false");
  }
  if (!r.token.empty()) out += ",\"token\":" + JsonString(r.token);
  if (r.outcome == Outcome::kCompleted) out += ",\"replay\":true";
  if (r.record) out += ",\"record\":" + RecordJson(*r.record);
  out += "}";
  return out;
}

std::string FormatErrorJson(const Status& status) {
  return "{\"outcome\":\"" + std::string(CodeName(status.code())) + "\",\"error\":" +
         JsonString(status.message()) + "}";
}

std::string FormatStatsHuman(const StoreStats& s) {
  std::string out;
  auto pad = [](std::string name) {
    name.resize(std::max<size_t>(name.size() + 1, 31), ' ');
    return name;
  };
  auto line = [&](const char* name, uint64_t v) { out += pad(name) + std::to_string(v) + "\n"; };
  out += pad("durability") + s.durability + "\n";
  line("estimated_live_records", s.estimated_live_records);
  line("sst_bytes", s.sst_bytes);
  line("live_sst_bytes", s.live_sst_bytes);
  line("memtable_bytes", s.memtable_bytes);
  line("wal_bytes", s.wal_bytes);
  line("next_fence", s.next_fence);
  line("ops", s.ops);
  line("writes", s.writes);
  line("user_bytes_written", s.user_bytes_written);
  line("flush_bytes_written", s.flush_bytes_written);
  line("compaction_bytes_read", s.compaction_bytes_read);
  line("compaction_bytes_written", s.compaction_bytes_written);
  line("compactions", s.compactions);
  line("records_dropped_by_compaction", s.records_dropped_by_compaction);
  out.pop_back();
  return out;
}

std::string FormatStatsJson(const StoreStats& s) {
  std::string out = "{\"outcome\":\"OK\",\"stats\":{\"durability\":" + JsonString(s.durability);
  auto field = [&](const char* name, uint64_t v) { out += ",\"" + std::string(name) + "\":" + std::to_string(v); };
  field("estimated_live_records", s.estimated_live_records);
  field("sst_bytes", s.sst_bytes);
  field("live_sst_bytes", s.live_sst_bytes);
  field("memtable_bytes", s.memtable_bytes);
  field("wal_bytes", s.wal_bytes);
  field("next_fence", s.next_fence);
  field("ops", s.ops);
  field("writes", s.writes);
  field("user_bytes_written", s.user_bytes_written);
  field("flush_bytes_written", s.flush_bytes_written);
  field("compaction_bytes_read", s.compaction_bytes_read);
  field("compaction_bytes_written", s.compaction_bytes_written);
  field("compactions", s.compactions);
  field("records_dropped_by_compaction", s.records_dropped_by_compaction);
  out += "}}";
  return out;
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case Status::Code::kOk: return 0;
    case Status::Code::kInvalidArgument: return 3;
    case Status::Code::kIOError:
    case Status::Code::kNotFound:  // no database at --data
      return 4;
    case Status::Code::kTimedOut: return 5;
    case Status::Code::kCorruption: return 6;
    default: return 7;
  }
}

int ExitCodeFor(const Result<OpResult>& result) {
  if (!result.ok()) return ExitCodeFor(result.status());
  return IsRefusal(result->outcome) ? 1 : 0;
}

}  // namespace idem::ctl
