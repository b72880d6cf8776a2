// RunBenchmark: drives an idemstored with the workload of a BenchConfig and measures it.
//
// The work is split by concern: wire_client (the protocol, spoken directly for a low cost per
// request), worker (one epoll event-loop thread and its connections, closed or open loop),
// this (connections, threads, phases, progress lines, the totals), and the two renderings of
// the result (text_report, json_report).
#pragma once

#include "bench_config.h"
#include "bench_report.h"
#include "idem/result.h"

namespace idem::bench {

// Connects every connection (IOError when the server is unreachable), preloads when asked,
// runs the measurement on config.threads workers and sums their figures. Progress lines go
// to stderr when config.progress.
Result<BenchReport> RunBenchmark(const BenchConfig& config);

}  // namespace idem::bench
