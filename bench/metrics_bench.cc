// What counting costs the request path: ServerMetrics::CountOp (one op's outcome and latency:
// three relaxed adds on sharded slots), alone and from both cores at once, beside a plain
// relaxed add to one shared counter, the floor it is measured against.
#include <atomic>
#include <chrono>

#include <benchmark/benchmark.h>

#include "server_metrics.h"

namespace idem {
namespace {

ServerMetrics& Metrics() {
  static ServerMetrics metrics;
  return metrics;
}

void BM_CountOp(benchmark::State& state) {
  ServerMetrics& m = Metrics();
  OpResult inserted;
  inserted.outcome = Outcome::kInserted;
  const Result<OpResult> result(inserted);
  auto latency = std::chrono::microseconds(120);
  for (auto _ : state) {
    m.CountOp(Transport::kBinary, OpType::kInsert, result, latency);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_CountOp)->Threads(1)->Threads(2);

void BM_SharedRelaxedAdd(benchmark::State& state) {
  static std::atomic<uint64_t> counter{0};
  for (auto _ : state) {
    counter.fetch_add(1, std::memory_order_relaxed);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_SharedRelaxedAdd)->Threads(1)->Threads(2);

}  // namespace
}  // namespace idem
