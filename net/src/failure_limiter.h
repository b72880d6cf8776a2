// FailureLimiter: failed authentications per peer, so that a peer cannot try tokens as fast as
// it can connect. Each peer that fails gets a fixed window of kWindowMs from its first failure;
// once it has failed `limit` times in the window, its attempts are refused (without checking
// their token) until the window ends. Peers that never fail take no entry.
//
// A peer is what one host normally holds (PeerKey): an IPv4 address, IPv4-mapped IPv6 addresses
// included, or an IPv6 /64. Strings that are not an IP address are keyed as they are.
//
// The table is bounded: with max_peers entries, a new peer's first failure first drops the
// windows that have ended, then, if none had, the oldest window that does not block. A blocked
// peer is never dropped to make room, so no number of addresses unblocks it. When every entry
// blocks, the new peer is not tracked: its failure is not recorded and it is not blocked until
// a window ends (blocking it instead would let an attacker lock everyone out). That full-table
// case costs one pass over the table, then none until the earliest window ends.
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

  // The table key of a peer address: an IPv4 address in dotted form (also for ::ffff:a.b.c.d),
  // an IPv6 address as its /64 ("2001:db8::/64", zone dropped), anything else unchanged.
  static std::string PeerKey(std::string_view peer);

 private:
  struct Window {
    int64_t start_ms = 0;
    uint32_t failures = 0;
  };
  bool Ended(const Window& w, int64_t now_ms) const { return now_ms - w.start_ms >= kWindowMs; }
  bool Blocks(const Window& w, int64_t now_ms) const {
    return !Ended(w, now_ms) && w.failures >= limit_;
  }
  // Makes room for one more entry if it can without dropping a blocked window; false if every
  // entry blocks (mu_ held).
  bool Evict(int64_t now_ms);

  const uint32_t limit_;
  const std::shared_ptr<Clock> clock_;
  const size_t max_peers_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Window> windows_;  // guarded by mu_
  // After an Evict that found every entry blocking: no entry can change before the earliest of
  // their windows ends (a blocked window only ends), so Evict is not retried before then.
  int64_t full_until_ms_ = 0;  // guarded by mu_
};

}  // namespace idem
