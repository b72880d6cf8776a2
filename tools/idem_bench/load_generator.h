// LoadGenerator: drives an idemstored with the workload of a BenchConfig and measures it.
//
// It speaks the wire protocol (docs/protocol.md) directly instead of through idem::Client, so
// that its own cost per request stays a small fraction of the server's: each event-loop thread
// owns its connections, reuses one FlatBufferBuilder for every request, appends frames into a
// per-connection output buffer (all requests ready at one moment leave in one write), and reads
// responses in bulk. No allocation per request once warm, no thread hand-off, no std::function.
//
// Closed loop (default): every connection keeps `pipeline` requests in flight; each response
// releases the next request. Open loop (rate > 0): requests are due at fixed intervals; one that
// finds no free slot waits, and its latency is measured from when it was DUE, so a stalled
// server shows up as latency instead of as fewer, faster samples (coordinated omission).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "bench_config.h"
#include "histogram.h"
#include "idem/result.h"

namespace idem::bench {

struct BenchReport {
  double elapsed_s = 0;      // measurement time (first request sent to last response read)
  uint64_t requests = 0;     // requests answered
  uint64_t ops = 0;          // ops answered (requests * batch)
  uint64_t flows = 0;        // begin: Begin+Complete pairs finished
  LatencyHistogram latency;  // per request, microseconds
  std::array<uint64_t, 32> outcomes{};  // by wire outcome number
  std::array<uint64_t, 16> errors{};    // by Status code (0 slot: unanswered at the end)
  std::array<uint64_t, kOpKindCount> requests_by_kind{};
  double client_cpu_s = 0;   // this process, during the measurement
  double server_cpu_s = -1;  // the server (with server_pid), else -1
  // The server's CPU by thread name (with server_pid): its event loop against RocksDB's flush
  // ("rocksdb:high") and compaction ("rocksdb:low") threads.
  std::map<std::string, double> server_cpu_s_by_thread;

  uint64_t error_count() const;
  double ops_per_s() const { return elapsed_s > 0 ? ops / elapsed_s : 0; }
};

// Connects (IOError when the server is unreachable), preloads when asked, runs the measurement.
// Progress lines go to stderr when config.progress.
Result<BenchReport> RunBenchmark(const BenchConfig& config);

// Rendering.
std::string FormatText(const BenchConfig& config, const BenchReport& report);
std::string FormatJson(const BenchConfig& config, const BenchReport& report);
std::string_view OutcomeName(size_t outcome);
std::string_view ErrorName(size_t code);

}  // namespace idem::bench
