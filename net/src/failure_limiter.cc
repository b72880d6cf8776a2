#include "failure_limiter.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

namespace idem {

FailureLimiter::FailureLimiter(uint32_t limit, std::shared_ptr<Clock> clock, size_t max_peers)
    : limit_(limit), clock_(std::move(clock)), max_peers_(max_peers) {}

std::string FailureLimiter::PeerKey(std::string_view peer) {
  // The callers pass asio's address::to_string(): a link-local IPv6 address carries "%zone".
  std::string address(peer.substr(0, peer.find('%')));
  in6_addr v6;
  if (inet_pton(AF_INET6, address.c_str(), &v6) != 1) return std::string(peer);
  char text[INET6_ADDRSTRLEN];
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {
    in_addr v4;
    std::memcpy(&v4, &v6.s6_addr[12], sizeof(v4));
    return inet_ntop(AF_INET, &v4, text, sizeof(text));
  }
  std::memset(&v6.s6_addr[8], 0, 8);
  return std::string(inet_ntop(AF_INET6, &v6, text, sizeof(text))) + "/64";
}

bool FailureLimiter::Blocked(std::string_view peer) const {
  const std::string key = PeerKey(peer);
  const int64_t now = clock_->NowMillis();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(key);
  return it != windows_.end() && Blocks(it->second, now);
}

void FailureLimiter::CountFailure(std::string_view peer) {
  std::string key = PeerKey(peer);
  const int64_t now = clock_->NowMillis();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(key);
  if (it == windows_.end()) {
    if (windows_.size() >= max_peers_ && !Evict(now)) return;  // not tracked: see the header
    it = windows_.emplace(std::move(key), Window{now, 0}).first;
  } else if (Ended(it->second, now)) {
    it->second = Window{now, 0};
  }
  if (it->second.failures < limit_) ++it->second.failures;
}

size_t FailureLimiter::peers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return windows_.size();
}

// A linear pass, only when the table is full and a new peer fails: at most max_peers entries
// looked at, and the pass frees every ended window at once, so a steady trickle of new peers
// does not pay it each time. When every entry blocks, full_until_ms_ skips the pass until the
// earliest window ends.
bool FailureLimiter::Evict(int64_t now_ms) {
  if (now_ms < full_until_ms_) return false;
  auto oldest = windows_.end();
  int64_t earliest_end = INT64_MAX;
  for (auto it = windows_.begin(); it != windows_.end();) {
    if (Ended(it->second, now_ms)) {
      it = windows_.erase(it);
      continue;
    }
    earliest_end = std::min(earliest_end, it->second.start_ms + kWindowMs);
    if (!Blocks(it->second, now_ms) &&
        (oldest == windows_.end() || it->second.start_ms < oldest->second.start_ms)) {
      oldest = it;
    }
    ++it;
  }
  if (windows_.size() < max_peers_) return true;
  if (oldest == windows_.end()) {
    full_until_ms_ = earliest_end;
    return false;
  }
  windows_.erase(oldest);
  return true;
}

}  // namespace idem
