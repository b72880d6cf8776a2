#include "trace_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <unordered_map>

namespace idem::retention {
namespace {

constexpr size_t kMaxKeyBytes = 512;

}  // namespace

Result<TraceLine> ParseTraceLine(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t c1 = line.find(',');
  const size_t c2 = c1 == std::string_view::npos ? c1 : line.find(',', c1 + 1);
  if (c2 == std::string_view::npos) {
    return Status::InvalidArgument("expected 3 comma-separated fields time_s,namespace,key");
  }
  TraceLine out;
  const std::string_view time = line.substr(0, c1);
  double seconds = 0;
  auto [end, ec] = std::from_chars(time.data(), time.data() + time.size(), seconds);
  if (time.empty() || ec != std::errc() || end != time.data() + time.size() ||
      !std::isfinite(seconds) || seconds < 0 || seconds > 1e12) {
    return Status::InvalidArgument("time_s '" + std::string(time) +
                                   "' is not a non-negative number of seconds");
  }
  out.t_ms = static_cast<int64_t>(std::llround(seconds * 1000));
  out.ns = line.substr(c1 + 1, c2 - c1 - 1);
  if (Status s = ValidateNamespace(out.ns); !s.ok()) return s;
  out.key = line.substr(c2 + 1);
  if (out.key.empty() || out.key.size() > kMaxKeyBytes) {
    return Status::InvalidArgument("key must be 1..512 bytes");
  }
  if (out.key.find(',') != std::string_view::npos) {
    return Status::InvalidArgument("key contains a comma (more than 3 fields; no quoting)");
  }
  return out;
}

Result<Workload> ReadTrace(std::istream& in, const std::string& name) {
  Workload w;
  std::unordered_map<std::string, uint32_t> ns_index;
  // (namespace index, key) -> key id; ids are assigned in file order.
  std::unordered_map<std::string, uint64_t> key_ids;
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::string_view view(line);
    if (!view.empty() && view.back() == '\r') view.remove_suffix(1);
    if (view.empty() || view.front() == '#') continue;
    if (line_no == 1 && view == "time_s,namespace,key") continue;
    auto parsed = ParseTraceLine(view);
    if (!parsed.ok()) {
      return Status::InvalidArgument(name + ":" + std::to_string(line_no) + ": " +
                                     parsed.status().message());
    }
    auto [ns_it, ns_new] =
        ns_index.try_emplace(std::string(parsed->ns), static_cast<uint32_t>(w.namespaces.size()));
    if (ns_new) w.namespaces.emplace_back(parsed->ns);
    std::string identity = std::to_string(ns_it->second) + '\0' + std::string(parsed->key);
    auto [key_it, key_new] = key_ids.try_emplace(std::move(identity), w.key_names.size());
    if (key_new) w.key_names.emplace_back(parsed->key);
    w.events.push_back({parsed->t_ms, key_it->second, ns_it->second, false});
  }
  if (in.bad()) return Status::IOError(name + ": read failed");
  if (w.events.empty()) return Status::InvalidArgument(name + ": no arrivals in the trace");
  std::stable_sort(w.events.begin(), w.events.end(),
                   [](const Event& a, const Event& b) { return a.t_ms < b.t_ms; });
  // Duplicates are decided in replay order, so an unsorted file means what it says in time.
  std::vector<bool> seen(w.key_names.size(), false);
  for (Event& e : w.events) {
    e.duplicate = seen[e.key_id];
    seen[e.key_id] = true;
  }
  // Make the timeline start at 0 like a generated workload's.
  const int64_t origin = w.events.front().t_ms;
  for (Event& e : w.events) e.t_ms -= origin;
  w.first_requests_end_ms = 0;
  for (const Event& e : w.events) {
    if (!e.duplicate) w.first_requests_end_ms = e.t_ms + 1;
  }
  return w;
}

Result<Workload> ReadTraceFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot open trace file '" + path + "'");
  return ReadTrace(in, path);
}

}  // namespace idem::retention
