#include "policy.h"

#include <algorithm>

#include "duration.h"

namespace idem::retention {

std::string_view StrategyName(Strategy s) {
  switch (s) {
    case Strategy::kReclaim:
      return "reclaim";
    case Strategy::kCompactionOnly:
      return "compaction-only";
    case Strategy::kWindows:
      return "windows";
    case Strategy::kJournal:
      return "journal";
    case Strategy::kJournalCompressed:
      return "journal-compressed";
  }
  return "?";
}

Result<Strategy> ParseStrategy(std::string_view name) {
  for (Strategy s : {Strategy::kReclaim, Strategy::kCompactionOnly, Strategy::kWindows,
                     Strategy::kJournal, Strategy::kJournalCompressed}) {
    if (name == StrategyName(s)) return s;
  }
  return Status::InvalidArgument(
      "unknown strategy '" + std::string(name) +
      "' (strategies: reclaim, compaction-only, windows, journal, journal-compressed)");
}

int64_t Policy::TtlFor(std::string_view ns) const {
  auto it = ns_ttl_ms.find(std::string(ns));
  return it == ns_ttl_ms.end() ? default_ttl_ms : it->second;
}

int64_t Policy::MaxTtl() const {
  int64_t max = default_ttl_ms;
  for (const auto& [ns, ttl] : ns_ttl_ms) max = std::max(max, ttl);
  return max;
}

std::string Policy::TtlSpec() const {
  if (ns_ttl_ms.empty()) return FormatDurationMs(default_ttl_ms);
  std::string out;
  for (const auto& [ns, ttl] : ns_ttl_ms) out += ns + "=" + FormatDurationMs(ttl) + ",";
  return out + "*=" + FormatDurationMs(default_ttl_ms);
}

namespace {

// "a,b,c" -> {"a", "b", "c"}; at least one item, possibly empty.
std::vector<std::string_view> Items(std::string_view text) {
  std::vector<std::string_view> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    items.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return items;
}

}  // namespace

Result<NsTtlSpec> ParseNsTtl(std::string_view text) {
  NsTtlSpec spec;
  spec.fallback_ms = kDay;
  for (const std::string_view item : Items(text)) {
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return Status::InvalidArgument("bad --ns-ttl entry '" + std::string(item) +
                                     "': expected NAMESPACE=TTL (or *=TTL), e.g. payments=26h");
    }
    auto ttl = ParsePositiveDurationMs(item.substr(eq + 1));
    if (!ttl.ok()) return Status::InvalidArgument("--ns-ttl: " + ttl.status().message());
    const std::string ns(item.substr(0, eq));
    if (ns == "*") {
      spec.fallback_ms = *ttl;
    } else if (!spec.ttl_ms.emplace(ns, *ttl).second) {
      return Status::InvalidArgument("--ns-ttl names namespace '" + ns + "' twice");
    }
  }
  if (spec.ttl_ms.empty()) {
    return Status::InvalidArgument("--ns-ttl '" + std::string(text) + "' names no namespace");
  }
  return spec;
}

Result<std::vector<KeepRemember>> ParseKeepRemember(std::string_view text) {
  std::vector<KeepRemember> pairs;
  for (const std::string_view item : Items(text)) {
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      return Status::InvalidArgument("bad --remember entry '" + std::string(item) +
                                     "': expected KEEP:REMEMBER, e.g. 1d:30d");
    }
    auto keep = ParsePositiveDurationMs(item.substr(0, colon));
    if (!keep.ok()) return Status::InvalidArgument("--remember: " + keep.status().message());
    auto remember = ParsePositiveDurationMs(item.substr(colon + 1));
    if (!remember.ok()) {
      return Status::InvalidArgument("--remember: " + remember.status().message());
    }
    if (*remember > RetentionPolicy::kMaxRememberMs) {
      return Status::InvalidArgument("--remember: " + std::string(item.substr(colon + 1)) +
                                     " is longer than the engine's limit of 3650d");
    }
    pairs.push_back({*keep, *remember});
  }
  return pairs;
}

int64_t DefaultWindowMs(const Policy& policy) {
  const int64_t eighth = (policy.DeathHorizonMs() + 7) / 8;
  const int64_t minutes = (eighth + kMinute - 1) / kMinute * kMinute;
  return std::clamp(minutes, EngineOptions::kMinExpiryWindowMs, EngineOptions::kMaxExpiryWindowMs);
}

std::vector<Policy> BuildPolicies(const std::vector<int64_t>& ttls_ms,
                                  const std::vector<NsTtlSpec>& ns_ttls,
                                  const std::vector<Strategy>& strategies,
                                  const std::vector<KeepRemember>& remembers,
                                  std::optional<int64_t> window_ms) {
  std::vector<Policy> policies;
  for (Strategy strategy : strategies) {
    const size_t first = policies.size();
    for (int64_t ttl : ttls_ms) {
      policies.push_back(
          {FormatDurationMs(ttl) + "/" + std::string(StrategyName(strategy)), strategy, ttl, {}});
    }
    for (size_t i = 0; i < ns_ttls.size(); ++i) {
      std::string label = ns_ttls.size() == 1 ? "ns-ttl" : "ns-ttl" + std::to_string(i + 1);
      policies.push_back({label + "/" + std::string(StrategyName(strategy)), strategy,
                          ns_ttls[i].fallback_ms, ns_ttls[i].ttl_ms});
    }
    for (const KeepRemember& p : remembers) {
      policies.push_back({FormatDurationMs(p.keep_ms) + "+remember" +
                              FormatDurationMs(p.remember_ms) + "/" +
                              std::string(StrategyName(strategy)),
                          strategy,
                          p.keep_ms,
                          {},
                          p.remember_ms});
    }
    if (strategy == Strategy::kWindows) {
      for (size_t i = first; i < policies.size(); ++i) {
        policies[i].window_ms = window_ms.value_or(DefaultWindowMs(policies[i]));
      }
    }
  }
  return policies;
}

}  // namespace idem::retention
