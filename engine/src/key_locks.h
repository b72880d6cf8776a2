// Striped per-key mutexes: the engine's atomicity mechanism.
//
// Every read-modify-write of a key (read the record, decide, write the batch) runs while holding
// the stripe its key hashes to, so two operations on one key never interleave. Keys that share a
// stripe merely wait for each other. A batch locks all its stripes up front in ascending stripe
// order (deduplicated): two batches can then never each hold a stripe the other waits for, so
// there is no deadlock however batches overlap.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string_view>
#include <vector>

namespace idem {

class KeyLocks {
 public:
  static constexpr size_t kStripes = 4096;  // power of two

  static size_t StripeOf(std::string_view rocks_key) {
    return std::hash<std::string_view>{}(rocks_key) & (kStripes - 1);
  }

  // Holds a set of stripes for its lifetime. `sorted_stripes` must be in ascending order (the
  // caller sorts them anyway, to find ops that share a stripe); duplicates are fine.
  class Guard {
   public:
    Guard(KeyLocks* locks, std::vector<size_t> sorted_stripes)
        : locks_(locks), stripes_(std::move(sorted_stripes)) {
      assert(std::is_sorted(stripes_.begin(), stripes_.end()));
      stripes_.erase(std::unique(stripes_.begin(), stripes_.end()), stripes_.end());
      for (size_t s : stripes_) locks_->stripes_[s].mu.lock();
    }
    ~Guard() {
      for (auto it = stripes_.rbegin(); it != stripes_.rend(); ++it)
        locks_->stripes_[*it].mu.unlock();
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    KeyLocks* locks_;
    std::vector<size_t> stripes_;
  };

 private:
  struct alignas(64) Stripe {  // one cache line each: no false sharing between hot keys
    std::mutex mu;
  };
  Stripe stripes_[kStripes];
};

}  // namespace idem
