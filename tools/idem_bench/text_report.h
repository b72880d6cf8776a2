// The terminal report of an idem-bench run: the workload in one line, then throughput, latency
// percentiles, outcomes, errors and CPU per op.
#pragma once

#include <cstdint>
#include <string>

#include "bench_config.h"
#include "bench_report.h"

namespace idem::bench {

std::string FormatText(const BenchConfig& config, const BenchReport& report);

// Microseconds as milliseconds with three decimals ("1.250"), as every text line prints them.
std::string FormatMs(uint64_t micros);

}  // namespace idem::bench
