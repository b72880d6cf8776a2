#include "workload.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace idem::retention {
namespace {

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

}  // namespace

std::string Workload::KeyName(uint64_t key_id) const {
  if (!key_names.empty()) return key_names[key_id];
  const uint64_t hi = key_order == KeyOrder::kTime ? key_id : Mix64(key_id);
  const uint64_t lo = Mix64(key_id ^ 0x5bd1e9955bd1e995ULL);
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return std::string(buf, 32);
}

uint64_t Workload::Duplicates() const {
  return static_cast<uint64_t>(
      std::count_if(events.begin(), events.end(), [](const Event& e) { return e.duplicate; }));
}

Status ValidateNamespace(std::string_view ns) {
  if (ns.empty() || ns.size() > 64) {
    return Status::InvalidArgument("namespace '" + std::string(ns) + "' must be 1..64 characters");
  }
  for (char c : ns) {
    const bool ok =
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':' || c == '-';
    if (!ok) {
      return Status::InvalidArgument("namespace '" + std::string(ns) +
                                     "' may only hold [A-Za-z0-9_.:-]");
    }
  }
  return Status::Ok();
}

Result<std::vector<MixEntry>> ParseMix(std::string_view text) {
  std::vector<MixEntry> mix;
  for (std::string_view item : Split(text, ',')) {
    // The namespace may itself contain ':', so the model and weight are the LAST two fields.
    const size_t last = item.rfind(':');
    const size_t mid = last == std::string_view::npos || last == 0 ? std::string_view::npos
                                                                   : item.rfind(':', last - 1);
    if (mid == std::string_view::npos) {
      return Status::InvalidArgument(
          "bad --mix entry '" + std::string(item) +
          "': expected NAMESPACE:MODEL:WEIGHT, e.g. payments:callbacks:0.5");
    }
    MixEntry entry;
    entry.ns = std::string(item.substr(0, mid));
    if (Status s = ValidateNamespace(entry.ns); !s.ok()) return s;
    const std::string_view model = item.substr(mid + 1, last - mid - 1);
    auto parsed = ParseModel(model);
    if (!parsed) {
      return Status::InvalidArgument("bad --mix entry '" + std::string(item) +
                                     "': unknown model '" + std::string(model) +
                                     "' (retry, redelivery, callbacks, human)");
    }
    entry.model = *parsed;
    const std::string_view w = item.substr(last + 1);
    auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), entry.weight);
    if (ec != std::errc() || end != w.data() + w.size() || !std::isfinite(entry.weight) ||
        entry.weight <= 0) {
      return Status::InvalidArgument("bad --mix entry '" + std::string(item) +
                                     "': weight must be a positive number");
    }
    for (const MixEntry& other : mix) {
      if (other.ns == entry.ns) {
        return Status::InvalidArgument("--mix names namespace '" + entry.ns + "' twice");
      }
    }
    mix.push_back(std::move(entry));
  }
  return mix;
}

Result<Workload> GenerateWorkload(const WorkloadSpec& spec) {
  if (spec.mix.empty()) return Status::InvalidArgument("the mix has no namespace");
  if (!(spec.rate_per_s > 0) || !std::isfinite(spec.rate_per_s)) {
    return Status::InvalidArgument("the rate must be positive");
  }
  if (spec.duration_ms <= 0) return Status::InvalidArgument("the duration must be positive");
  // Guard memory before allocating: 24 bytes per event, a handful of events per request.
  const double expected_first = spec.rate_per_s * static_cast<double>(spec.duration_ms) / 1000.0;
  if (expected_first > 200e6) {
    return Status::InvalidArgument("rate x duration is over 200 million first requests");
  }

  Workload w;
  w.key_order = spec.key_order;
  w.first_requests_end_ms = spec.duration_ms;
  double total_weight = 0;
  for (const MixEntry& e : spec.mix) {
    w.namespaces.push_back(e.ns);
    total_weight += e.weight;
  }
  w.events.reserve(static_cast<size_t>(expected_first * 1.5) + 16);

  Random random(spec.seed);
  std::vector<int64_t> delays;
  const double mean_gap_ms = 1000.0 / spec.rate_per_s;
  double t = 0;
  for (uint64_t id = 0;; ++id) {
    t += random.Exponential(mean_gap_ms);
    const auto t_ms = static_cast<int64_t>(t);
    if (t_ms >= spec.duration_ms) break;
    // Categorical draw of the namespace by weight.
    double pick = random.Uniform() * total_weight;
    uint32_t ns = 0;
    while (ns + 1 < spec.mix.size() && pick >= spec.mix[ns].weight) pick -= spec.mix[ns++].weight;
    w.events.push_back({t_ms, id, ns, false});
    const DelayModel model = spec.mix[ns].model;
    DrawDuplicateDelays(model, spec.params.Get(model), random, &delays);
    for (int64_t d : delays) w.events.push_back({t_ms + d, id, ns, true});
  }
  std::stable_sort(w.events.begin(), w.events.end(),
                   [](const Event& a, const Event& b) { return a.t_ms < b.t_ms; });
  return w;
}

}  // namespace idem::retention
