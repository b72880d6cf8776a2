// Metrics: a snapshot of a server's counters, gauges and histograms, as GET /metrics exposes them
// (Prometheus text format 0.0.4) and as idemctl stats prints them (through the binary protocol's
// StatsResponse). docs/operations.md lists every metric.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem {

enum class MetricType : uint8_t { kCounter = 0, kGauge = 1, kHistogram = 2 };

// "counter", "gauge", "histogram": the Prometheus TYPE names.
constexpr std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// One labelled series of a family.
struct MetricSample {
  std::vector<std::pair<std::string, std::string>> labels;  // (name, value), in order
  double value = 0;                                         // counters and gauges
  // Histograms: (upper bound, observations <= it), bounds ascending, the last one +Inf (so its
  // count is `count`); `sum` is the sum of the observed values.
  std::vector<std::pair<double, uint64_t>> buckets;
  double sum = 0;
  uint64_t count = 0;
};

struct MetricFamily {
  std::string name;  // "idem_ops_total"
  std::string help;  // one line
  MetricType type = MetricType::kCounter;
  std::vector<MetricSample> samples;
};

}  // namespace idem
