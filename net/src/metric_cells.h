// The storage behind the server's metrics: fixed arrays of counters that any thread adds to with
// one relaxed atomic add, and histograms built on them.
//
// The problem: the request path runs on every I/O and engine thread, tens of thousands of times
// a second; a shared counter would bounce its cache line between cores on every request, a lock
// would serialise them. The mechanism: every metric is a slot in a fixed array, resolved to its
// index ahead of time (op x outcome is a small matrix, indexed, never hashed); the array is held
// kShards times, each copy on its own cache lines, and a thread adds to the copy its
// thread-local shard number picks. A reader sums the copies. No lock, no allocation, no string
// on the hot path; the sum a reader sees may be a few adds behind the adds in flight, never
// ahead.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace idem {

// The calling thread's shard, in [0, kMetricShards). Threads take numbers in turn on first use.
inline constexpr size_t kMetricShards = 8;
size_t MetricShard();

// N counters, each the sum over kMetricShards copies.
template <size_t N>
class CounterArray {
 public:
  CounterArray() : shards_(std::make_unique<Shard[]>(kMetricShards)) {}

  void Add(size_t slot, uint64_t n = 1) {
    shards_[MetricShard()].v[slot].fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t Value(size_t slot) const {
    uint64_t sum = 0;
    for (size_t s = 0; s < kMetricShards; ++s) {
      sum += shards_[s].v[slot].load(std::memory_order_relaxed);
    }
    return sum;
  }
  static constexpr size_t size() { return N; }

 private:
  struct alignas(64) Shard {
    std::array<std::atomic<uint64_t>, N> v{};
  };
  std::unique_ptr<Shard[]> shards_;  // on the heap: a matrix of them is tens of kilobytes
};

// What a reader sees of one histogram: per bound, the observations <= it (cumulative), then the
// total (the +Inf bucket) and the sum of the observed values.
template <size_t B>
struct HistogramCounts {
  std::array<uint64_t, B> cumulative{};
  uint64_t count = 0;
  uint64_t sum = 0;
};

// `Series` histograms over the same B ascending upper bounds, in integer units (nanoseconds,
// operations): an observation is two relaxed adds (its bucket and the sum).
template <size_t Series, size_t B>
class HistogramArray {
 public:
  using Bounds = std::array<uint64_t, B>;
  explicit HistogramArray(const Bounds& bounds) : bounds_(bounds) {}

  void Observe(size_t series, uint64_t value) {
    size_t bucket = 0;
    while (bucket < B && value > bounds_[bucket]) ++bucket;  // B is small: a scan beats a search
    cells_.Add(series * kSlots + bucket);
    cells_.Add(series * kSlots + kSumSlot, value);
  }

  HistogramCounts<B> Read(size_t series) const {
    HistogramCounts<B> out;
    uint64_t running = 0;
    for (size_t b = 0; b < B; ++b) {
      running += cells_.Value(series * kSlots + b);
      out.cumulative[b] = running;
    }
    out.count = running + cells_.Value(series * kSlots + B);
    out.sum = cells_.Value(series * kSlots + kSumSlot);
    return out;
  }
  const Bounds& bounds() const { return bounds_; }

 private:
  static constexpr size_t kSlots = B + 2;  // the bounded buckets, +Inf, the sum
  static constexpr size_t kSumSlot = B + 1;
  const Bounds bounds_;
  CounterArray<Series * kSlots> cells_;
};

}  // namespace idem
