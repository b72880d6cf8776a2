// FailureLimiter: failed authentications per peer address, so that a peer cannot try tokens
// as fast as it can connect. Each peer that fails gets a fixed window of kWindowMs from its
// first failure; once it has failed `limit` times in the window, its attempts are refused
// (without checking their token) until the window ends. Peers that never fail take no entry.
//
// The table is bounded: with max_peers entries, a new peer's first failure first drops the
// windows that have ended, then, if none had, the oldest window. An attacker with more addresses
// than that can push its own entries out, never grow the memory.
//
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "idem/clock.h"

namespace idem {

class FailureLimiter {
 public:
  static constexpr int64_t kWindowMs = 60'000;
  static constexpr size_t kDefaultMaxPeers = 10'000;

  // `limit` >= 1 failures per window; `clock`: any clock whose differences are milliseconds.
  FailureLimiter(uint32_t limit, std::shared_ptr<Clock> clock, size_t max_peers = kDefaultMaxPeers);

  // The peer has failed `limit` times in its current window: refuse its attempt unchecked.
  bool Blocked(std::string_view peer) const;
  // One more failure of `peer`.
  void CountFailure(std::string_view peer);

  size_t peers() const;  // entries held (tests)

 private:
  struct Window {
    int64_t start_ms = 0;
    uint32_t failures = 0;
  };
  bool Ended(const Window& w, int64_t now_ms) const { return now_ms - w.start_ms >= kWindowMs; }
  // Makes room for one more entry (mu_ held).
  void Evict(int64_t now_ms);

  const uint32_t limit_;
  const std::shared_ptr<Clock> clock_;
  const size_t max_peers_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Window> windows_;  // guarded by mu_
};

}  // namespace idem
