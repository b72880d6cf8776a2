#include "text_report.h"

#include <cinttypes>
#include <cstdio>

namespace idem::bench {

std::string FormatMs(uint64_t micros) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", micros / 1000.0);
  return buf;
}

std::string FormatText(const BenchConfig& c, const BenchReport& r) {
  std::string out;
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "idem-bench: workload %s%s, %d connections x pipeline %d, batch %d, %s %s keys, "
      "payload %zu B, %s\n",
      c.workload.c_str(),
      c.dup_ratio > 0
          ? (" (dup " + std::to_string(static_cast<int>(c.dup_ratio * 100 + 0.5)) + "%)").c_str()
          : "",
      c.connections, c.pipeline, c.batch, std::string(DistributionName(c.distribution)).c_str(),
      c.sequential_keys ? "sequential" : "random", c.payload_bytes,
      c.rate > 0
          ? ("open loop at " + std::to_string(static_cast<uint64_t>(c.rate)) + " req/s").c_str()
          : "closed loop");
  out += buf;
  std::snprintf(buf, sizeof buf,
                "ops:      %" PRIu64 " in %.2f s = %.0f ops/s (%" PRIu64 " requests%s)\n", r.ops,
                r.elapsed_s, r.ops_per_s(), r.requests,
                r.flows ? (", " + std::to_string(r.flows) + " begin->complete flows").c_str() : "");
  out += buf;
  std::snprintf(
      buf, sizeof buf, "latency:  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s ms (mean %.3f ms)\n",
      FormatMs(r.latency.Percentile(0.5)).c_str(), FormatMs(r.latency.Percentile(0.9)).c_str(),
      FormatMs(r.latency.Percentile(0.99)).c_str(), FormatMs(r.latency.Percentile(0.999)).c_str(),
      FormatMs(r.latency.max()).c_str(), r.latency.mean() / 1000.0);
  out += buf;
  out += "outcomes:";
  for (size_t i = 0; i < r.outcomes.size(); ++i) {
    if (r.outcomes[i])
      out += " " + std::string(OutcomeName(i)) + " " + std::to_string(r.outcomes[i]);
  }
  out += "\nerrors:  ";
  if (r.error_count() == 0) out += " none";
  for (size_t i = 0; i < r.errors.size(); ++i) {
    if (r.errors[i]) out += " " + std::string(ErrorName(i)) + " " + std::to_string(r.errors[i]);
  }
  const double per_op = r.ops ? 1e6 / r.ops : 0;
  std::snprintf(buf, sizeof buf, "\ncpu:      client %.2f us/op", r.client_cpu_s * per_op);
  out += buf;
  if (r.server_cpu_s >= 0) {
    std::snprintf(buf, sizeof buf, ", server %.2f us/op", r.server_cpu_s * per_op);
    out += buf;
  }
  if (!r.server_cpu_s_by_thread.empty()) {
    out += "\nserver threads (CPU s):";
    for (const auto& [name, seconds] : r.server_cpu_s_by_thread) {
      std::snprintf(buf, sizeof buf, " %s %.2f", name.c_str(), seconds);
      out += buf;
    }
  }
  return out + "\n";
}

}  // namespace idem::bench
