// The --json report of an idem-bench run: one object with the workload's settings ("workload",
// "dup_ratio", "connections", "pipeline", "batch", "distribution", "key_order",
// "payload_bytes", "rate") and its figures ("elapsed_s", "requests", "ops", "flows",
// "ops_per_s", "latency_ms": {p50, p90, p99, p999, max, mean}, "outcomes": {name: count},
// "errors": {name: count}, "client_cpu_us_per_op", and with --server-pid
// "server_cpu_us_per_op" and "server_cpu_ms_by_thread": {thread name: ms}).
#pragma once

#include <string>

#include "bench_config.h"
#include "bench_report.h"

namespace idem::bench {

std::string FormatJson(const BenchConfig& config, const BenchReport& report);

}  // namespace idem::bench
