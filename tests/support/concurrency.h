// Test support: start N threads together (behind a barrier, so they really contend) and join them.
#pragma once

#include <barrier>
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

}  // namespace idem::testing
