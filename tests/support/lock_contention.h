// Test support: callers contending for one lock through a Store (engine or client alike).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <string>

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
// without its holds after `max_attempts` gives up, which shows as missing acquisitions.
inline LockContention ContendForOneLock(Store& store, int callers, int holds_per_caller,
                                        int max_attempts = 20'000) {
  std::atomic<int> holders{0}, max_holders{0}, acquisitions{0};
  RunConcurrently(callers, [&](int t) {
    const std::string owner = "worker-" + std::to_string(t);
    int held = 0;
    for (int n = 0; n < max_attempts && held < holds_per_caller; ++n) {
      Result<OpResult> r = store.Execute(Op::Lock("locks", "L", owner));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (r->outcome != Outcome::kAcquired) {
        ASSERT_EQ(Outcome::kHeld, r->outcome);
        continue;
      }
      int now = ++holders;
      int seen = max_holders.load();
      while (now > seen && !max_holders.compare_exchange_weak(seen, now)) {
      }
      ++acquisitions;
      ++held;
      --holders;  // leave the critical section before releasing the lock
      Result<OpResult> released = store.Execute(Op::Unlock("locks", "L", r->record->fence));
      ASSERT_TRUE(released.ok()) << released.status().ToString();
      ASSERT_EQ(Outcome::kReleased, released->outcome);
    }
  });
  return {max_holders.load(), acquisitions.load()};
}

}  // namespace idem::testing
