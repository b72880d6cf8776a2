// Test support: callers contending for one lock through a Store (engine or client alike).
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "idem/operation.h"
#include "idem/store.h"
#include "support/concurrency.h"

namespace idem::testing {

struct LockContention {
  int max_holders = 0;   // the most callers that ever believed they held the lock at once
  int acquisitions = 0;  // ACQUIRED answers in all
};

// `callers` threads, released together, each Lock/Unlock "locks"/"L" until it has held the lock
// `holds_per_caller` times. Keeping on until then, rather than making a fixed number of attempts,
// makes the number of hand-overs independent of how the attempts interleave (callers in lock
// step over one pipelined connection acquire about once every two rounds). A caller still
// without its holds after `give_up_after` gives up, which shows as missing acquisitions. The
// bound is time, not attempts: on a loaded 2-CPU machine a holder can be descheduled between its
// Lock and its Unlock for milliseconds while the others spin through thousands of HELD answers
// (a bound of 20,000 attempts was once exhausted that way, in 128 ms).
inline LockContention ContendForOneLock(
    Store& store, int callers, int holds_per_caller,
    std::chrono::seconds give_up_after = std::chrono::seconds(60)) {
  std::atomic<int> holders{0}, max_holders{0}, acquisitions{0};
  const auto deadline = std::chrono::steady_clock::now() + give_up_after;
  RunConcurrently(callers, [&](int t) {
    const std::string owner = "worker-" + std::to_string(t);
    int held = 0;
    while (held < holds_per_caller && std::chrono::steady_clock::now() < deadline) {
      Result<OpResult> r = store.Execute(Op::Lock({.ns = "locks", .key = "L", .owner = owner}));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (r->outcome != Outcome::kAcquired) {
        ASSERT_EQ(Outcome::kHeld, r->outcome);
        std::this_thread::yield();  // let a descheduled holder run and release
        continue;
      }
      int now = ++holders;
      int seen = max_holders.load();
      while (now > seen && !max_holders.compare_exchange_weak(seen, now)) {
      }
      ++acquisitions;
      ++held;
      --holders;  // leave the critical section before releasing the lock
      Result<OpResult> released =
          store.Execute(Op::Unlock({.ns = "locks", .key = "L", .fence = r->record->fence}));
      ASSERT_TRUE(released.ok()) << released.status().ToString();
      ASSERT_EQ(Outcome::kReleased, released->outcome);
    }
  });
  return {max_holders.load(), acquisitions.load()};
}

}  // namespace idem::testing
