// LiveTracker: the simulation's exact count of unexpired records, independent of RocksDB.
//
// Within one namespace every record gets the same TTL and inserts happen in time order, so
// expiry times are non-decreasing: a FIFO per namespace holds them, and expiring is popping the
// front. That is 8 bytes per live record and no per-key map, whatever the key count.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

namespace idem::retention {

class LiveTracker {
 public:
  explicit LiveTracker(size_t namespaces) : expiries_(namespaces) {}

  // A record of namespace `ns` was inserted and lives until `expires_at_ms` (exclusive: it is
  // absent from that instant on, like Record::ExpiredAt). Expiries of one namespace must come
  // in non-decreasing order.
  void Insert(uint32_t ns, int64_t expires_at_ms) {
    expiries_[ns].push_back(expires_at_ms);
    ++live_;
  }
  // Forgets every record expired at `now_ms`.
  void ExpireUntil(int64_t now_ms) {
    for (auto& fifo : expiries_) {
      while (!fifo.empty() && fifo.front() <= now_ms) {
        fifo.pop_front();
        --live_;
      }
    }
  }
  uint64_t live() const { return live_; }

 private:
  std::vector<std::deque<int64_t>> expiries_;
  uint64_t live_ = 0;
};

}  // namespace idem::retention
