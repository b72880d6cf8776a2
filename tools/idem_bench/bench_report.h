// BenchReport: what one idem-bench run measured, as the workers count it and the text and JSON
// reports render it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "bench_config.h"
#include "histogram.h"

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

// The names of the outcomes and errors slots.
std::string_view OutcomeName(size_t outcome);
std::string_view ErrorName(size_t code);

}  // namespace idem::bench
