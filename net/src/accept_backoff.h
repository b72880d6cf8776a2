// AcceptBackoff: what the acceptor does when accept() fails. The failures that matter (EMFILE,
// ENFILE, ENOBUFS) last as long as their cause: retrying at once spins the event loop, and a
// line per failure floods the log for the whole of a connection flood. So a run of failures is
// one episode: its
// first failure is logged, retries back off exponentially (10 ms doubling to 1 s), and the first
// successful accept closes the episode with one line saying how many failed and for how long.
// No I/O and no clock of its own (the caller passes the time), so tests drive it directly.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace idem {

class AcceptBackoff {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kFirstDelay{10};
  static constexpr std::chrono::milliseconds kMaxDelay{1'000};

  // A failed accept at `now`: returns how long to wait before the next one. Sets *log to a line
  // for the operator on an episode's first failure, leaves it empty otherwise.
  std::chrono::milliseconds OnFailure(Clock::time_point now, std::string_view error,
                                      std::string* log);
  // A successful accept: if it ends an episode, sets *log to its summary.
  void OnSuccess(Clock::time_point now, std::string* log);

  bool in_episode() const { return failures_ > 0; }

 private:
  uint64_t failures_ = 0;  // in the current episode
  Clock::time_point first_failure_;
  std::string last_error_;
  std::chrono::milliseconds delay_{0};
};

}  // namespace idem
