// Test support: start N threads together (behind a barrier, so they really contend) and join them;
// hold one thread at a point (a file system hook, say) while the test does something else.
#pragma once

#include <barrier>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace idem::testing {

// Calls fn(thread_index) on `threads` threads released at the same moment; returns when all end.
template <typename Fn>
void RunConcurrently(int threads, Fn fn) {
  std::barrier start(threads);
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      start.arrive_and_wait();
      fn(t);
    });
  }
  for (auto& w : workers) w.join();
}

// The first thread to call Hold() waits there until Release(); later calls return at once.
class HoldPoint {
 public:
  void Hold() {
    std::unique_lock<std::mutex> lock(mu_);
    if (held_) return;
    held_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return released_; });
  }
  void WaitUntilHeld() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return held_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  bool released_ = false;
};

}  // namespace idem::testing
