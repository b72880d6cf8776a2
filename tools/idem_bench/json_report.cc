#include "json_report.h"

#include <array>
#include <cstdint>
#include <string_view>

#include "json_writer.h"

namespace idem::bench {
namespace {

// The nonzero counters as {name: count}.
template <size_t N>
void WriteCounts(JsonWriter& j, std::string_view key, const std::array<uint64_t, N>& counts,
                 std::string_view (*name)(size_t)) {
  j.Key(key);
  j.BeginObject();
  for (size_t i = 0; i < N; ++i) {
    if (counts[i]) {
      j.Key(name(i));
      j.Uint(counts[i]);
    }
  }
  j.EndObject();
}

}  // namespace

std::string FormatJson(const BenchConfig& c, const BenchReport& r) {
  JsonWriter j;
  j.BeginObject();
  j.Key("workload");
  j.String(c.workload);
  j.Key("dup_ratio");
  j.Double(c.dup_ratio);
  j.Key("connections");
  j.Uint(c.connections);
  j.Key("pipeline");
  j.Uint(c.pipeline);
  j.Key("batch");
  j.Uint(c.batch);
  j.Key("distribution");
  j.String(DistributionName(c.distribution));
  j.Key("key_order");
  j.String(c.sequential_keys ? "sequential" : "random");
  j.Key("payload_bytes");
  j.Uint(c.payload_bytes);
  j.Key("rate");
  j.Double(c.rate);
  j.Key("elapsed_s");
  j.Double(r.elapsed_s);
  j.Key("requests");
  j.Uint(r.requests);
  j.Key("ops");
  j.Uint(r.ops);
  j.Key("flows");
  j.Uint(r.flows);
  j.Key("ops_per_s");
  j.Double(r.ops_per_s());
  j.Key("latency_ms");
  j.BeginObject();
  for (const auto& [name, q] :
       {std::pair<const char*, double>{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p999", 0.999}}) {
    j.Key(name);
    j.Double(r.latency.Percentile(q) / 1000.0);
  }
  j.Key("max");
  j.Double(r.latency.max() / 1000.0);
  j.Key("mean");
  j.Double(r.latency.mean() / 1000.0);
  j.EndObject();
  WriteCounts(j, "outcomes", r.outcomes, OutcomeName);
  WriteCounts(j, "errors", r.errors, ErrorName);
  const double per_op = r.ops ? 1e6 / r.ops : 0;
  j.Key("client_cpu_us_per_op");
  j.Double(r.client_cpu_s * per_op);
  if (r.server_cpu_s >= 0) {
    j.Key("server_cpu_us_per_op");
    j.Double(r.server_cpu_s * per_op);
  }
  if (!r.server_cpu_s_by_thread.empty()) {
    j.Key("server_cpu_ms_by_thread");
    j.BeginObject();
    for (const auto& [name, seconds] : r.server_cpu_s_by_thread) {
      j.Key(name);
      j.Double(seconds * 1000.0);
    }
    j.EndObject();
  }
  j.EndObject();
  return j.Take() + "\n";
}

}  // namespace idem::bench
