#include "failure_limiter.h"

#include <utility>

namespace idem {

FailureLimiter::FailureLimiter(uint32_t limit, std::shared_ptr<Clock> clock, size_t max_peers)
    : limit_(limit), clock_(std::move(clock)), max_peers_(max_peers) {}

bool FailureLimiter::Blocked(std::string_view peer) const {
  const int64_t now = clock_->NowMillis();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(std::string(peer));
  return it != windows_.end() && !Ended(it->second, now) && it->second.failures >= limit_;
}

void FailureLimiter::CountFailure(std::string_view peer) {
  const int64_t now = clock_->NowMillis();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(std::string(peer));
  if (it == windows_.end()) {
    if (windows_.size() >= max_peers_) Evict(now);
    it = windows_.emplace(std::string(peer), Window{now, 0}).first;
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
// does not pay it each time.
void FailureLimiter::Evict(int64_t now_ms) {
  auto oldest = windows_.end();
  for (auto it = windows_.begin(); it != windows_.end();) {
    if (Ended(it->second, now_ms)) {
      it = windows_.erase(it);
      continue;
    }
    if (oldest == windows_.end() || it->second.start_ms < oldest->second.start_ms) oldest = it;
    ++it;
  }
  if (windows_.size() >= max_peers_ && oldest != windows_.end()) windows_.erase(oldest);
}

}  // namespace idem
